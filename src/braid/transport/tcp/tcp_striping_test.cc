// TcpTransport with BRAID_TCP_STREAMS > 1: two transports in one process over loopback, each
// driven by its own thread, as two ranks would be (each transport is used by one thread only).
// Striped transfers are bitwise correct around the stripe boundaries, both ways at once with
// many messages in flight, received straight into posted buffers and through the unexpected
// path alike; a peer that dies mid-stripe is PeerLost; every stream proves the job token;
// ranks that disagree about the stream count fail with Mismatch on both sides.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "braid/base/error.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/key_value_store.h"
#include "braid/bootstrap/socket.h"
#include "braid/transport/tcp/stripe_plan.h"
#include "braid/transport/tcp/tcp_stream_hello.h"
#include "braid/transport/tcp/tcp_transport.h"

namespace braid::tcp {
namespace {

constexpr const char* kToken = "striping-test-token";

class MemoryStore final : public KeyValueStore {
 public:
  void set(const std::string& key, std::string_view value, Deadline) override {
    std::lock_guard lock(mutex_);
    values_[key] = std::string(value);
    changed_.notify_all();
  }
  std::string get(const std::string& key, Deadline deadline) override {
    std::unique_lock lock(mutex_);
    while (!values_.contains(key)) {
      if (deadline.expired()) throw Timeout({.op = "store.get"}, "no " + key);
      changed_.wait_for(lock, std::chrono::milliseconds(10));
    }
    return values_[key];
  }
  void wait(const std::vector<std::string>& keys, Deadline deadline) override {
    for (const auto& key : keys) get(key, deadline);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

TcpOptions options_for(int rank, int streams, bool tls = false, std::size_t buffer_bytes = 0) {
  return {.rank = rank, .peers = {1 - rank}, .bind_addr = "127.0.0.1", .advertise_addr = "127.0.0.1",
          .token = kToken, .tls = tls, .streams = streams, .buffer_bytes = buffer_bytes};
}

struct Pair {
  std::unique_ptr<TcpTransport> rank[2];
};

Pair connect_pair(int streams0, int streams1, MemoryStore& store, bool tls = false, std::size_t buffer_bytes = 0) {
  Pair pair;
  std::exception_ptr error1;
  std::thread one([&] {
    try {
      pair.rank[1] = TcpTransport::connect(options_for(1, streams1, tls, buffer_bytes), store, Deadline::after(Seconds(20)));
    } catch (...) {
      error1 = std::current_exception();
    }
  });
  try {
    pair.rank[0] = TcpTransport::connect(options_for(0, streams0, tls, buffer_bytes), store, Deadline::after(Seconds(20)));
  } catch (...) {
    one.join();
    throw;
  }
  one.join();
  if (error1) std::rethrow_exception(error1);
  return pair;
}

RequestPtr make_request(Request::Kind kind, int peer, std::int64_t seq, std::vector<std::byte>& buffer) {
  auto r = std::make_shared<Request>();
  r->kind = kind;
  r->peer = peer;
  r->key = {.comm_id = 7, .channel = Channel::kUser, .tag = 3};
  r->envelope = {.op = OpKind::kSendRecv, .seq = seq, .dtype = DType::kU8, .bytes = buffer.size()};
  r->data = buffer.data();
  return r;
}

std::vector<std::byte> pattern(std::size_t bytes, std::uint32_t seed) {
  std::vector<std::byte> v(bytes);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return v;
}

// Progresses `t` until every request in `requests` completed; rethrows a failed one's error.
void drive(TcpTransport& t, const std::vector<RequestPtr>& requests, Seconds limit = Seconds(30)) {
  Deadline deadline = Deadline::after(limit);
  auto done = [&] {
    for (const auto& r : requests) {
      if (!r->complete.load()) return false;
      if (r->error) std::rethrow_exception(r->error);
    }
    return true;
  };
  while (!done()) {
    if (deadline.expired()) throw Timeout({.op = "drive"}, "requests did not complete");
    if (!t.progress()) {
      WakeupArm arm;
      t.arm_wakeup(arm);
      t.sleep(arm, Seconds(0.002));
    }
  }
}

std::vector<std::size_t> boundary_sizes() {
  std::vector<std::size_t> sizes = {0, 1, 4095, 65536};
  for (std::size_t k = 1; k <= 5; ++k) {
    for (long d : {-4097L, -1L, 0L, 1L, 4097L}) sizes.push_back(static_cast<std::size_t>(static_cast<long>(k * kMinStripeBytes) + d));
  }
  sizes.push_back((std::size_t{5} << 20) + 3);
  return sizes;
}

// A message's bytes held as pieces (Request::pieces) of cycling sizes from 1 byte to 70 KB,
// laid out in memory in reverse order with gaps between them: a piece mapped to the wrong
// offset, or a range run across two pieces, shows as wrong bytes.
struct ScatteredMessage {
  std::vector<std::byte> memory;
  std::vector<BufferPiece> pieces;

  explicit ScatteredMessage(std::size_t bytes) {
    static constexpr std::size_t kCycle[] = {1, 3, 4096, 7, 70001, 13, 512};
    std::vector<std::size_t> sizes;
    for (std::size_t left = bytes, k = 0; left > 0; ++k) {
      sizes.push_back(std::min(left, kCycle[k % std::size(kCycle)]));
      left -= sizes.back();
    }
    memory.resize(bytes + 8 * sizes.size());
    std::size_t at = memory.size();
    for (std::size_t size : sizes) {
      at -= size + 8;
      pieces.push_back({memory.data() + at, size});
    }
  }
  std::vector<std::byte> gathered() const {
    std::vector<std::byte> v(memory.size() - 8 * pieces.size());
    MessageBuffer(pieces).read(0, v.data(), v.size());
    return v;
  }
};

// How one side holds its messages: each contiguous, or some as pieces (sends gathered where
// the index is even, receives scattered where it is not a multiple of 3: every pairing).
enum class Layout { kContiguous, kPieces };

// One rank's side of the exchange: sends every size to the peer and receives every size from
// it, all in flight at once, with one key (so matching must keep their order). Half of the
// receives are posted only after the peer's bytes may have arrived (the unexpected path).
void exchange(TcpTransport& t, int rank, const std::vector<std::size_t>& sizes, Layout layout = Layout::kContiguous) {
  const int peer = 1 - rank;
  std::vector<std::vector<std::byte>> out, in;
  std::vector<std::unique_ptr<ScatteredMessage>> out_pieces, in_pieces;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out.push_back(pattern(sizes[i], static_cast<std::uint32_t>(rank * 1000 + i)));
    in.emplace_back(sizes[i]);
    const bool pieces = layout == Layout::kPieces;
    out_pieces.push_back(pieces && i % 2 == 0 ? std::make_unique<ScatteredMessage>(sizes[i]) : nullptr);
    in_pieces.push_back(pieces && i % 3 != 0 ? std::make_unique<ScatteredMessage>(sizes[i]) : nullptr);
    if (out_pieces[i]) MessageBuffer(out_pieces[i]->pieces).write(0, out[i].data(), sizes[i]);
  }
  auto request = [&](Request::Kind kind, std::size_t i) {
    const bool send = kind == Request::Kind::kSend;
    RequestPtr r = make_request(kind, peer, static_cast<std::int64_t>(i), send ? out[i] : in[i]);
    if (const auto& pieces = send ? out_pieces[i] : in_pieces[i]) r->pieces = pieces->pieces, r->data = nullptr;
    return r;
  };
  std::vector<RequestPtr> requests;
  const std::size_t early = sizes.size() / 2;
  for (std::size_t i = 0; i < early; ++i) {
    requests.push_back(request(Request::Kind::kRecv, i));
    t.post_recv(requests.back());
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    requests.push_back(request(Request::Kind::kSend, i));
    t.post_send(requests.back());
  }
  for (int spin = 0; spin < 200; ++spin) t.progress();
  for (std::size_t i = early; i < sizes.size(); ++i) {
    requests.push_back(request(Request::Kind::kRecv, i));
    t.post_recv(requests.back());
  }
  drive(t, requests);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(in_pieces[i] ? in_pieces[i]->gathered() : in[i], pattern(sizes[i], static_cast<std::uint32_t>(peer * 1000 + i)))
        << "rank " << rank << ", message " << i << " of " << sizes[i] << " bytes"
        << (in_pieces[i] ? ", received into pieces" : "") << (i % 2 == 0 && layout == Layout::kPieces ? ", sent from pieces" : "");
  }
}

// Both ranks exchange `sizes` at once, then shut down at once, as two ranks do: each reads to
// the other's EOF.
void exchange_and_shut_down(Pair& pair, const std::vector<std::size_t>& sizes, Layout layout = Layout::kContiguous) {
  std::thread one([&] { exchange(*pair.rank[1], 1, sizes, layout); });
  exchange(*pair.rank[0], 0, sizes, layout);
  one.join();
  std::thread closing([&] { pair.rank[1]->shutdown(Deadline::after(Seconds(5))); });
  pair.rank[0]->shutdown(Deadline::after(Seconds(5)));
  closing.join();
}

TEST(TcpStripingTest, TransfersAreBitwiseCorrectAroundTheStripeBoundariesBothWays) {
  const std::vector<std::size_t> sizes = boundary_sizes();
  for (int streams = 1; streams <= 4; ++streams) {
    SCOPED_TRACE("BRAID_TCP_STREAMS=" + std::to_string(streams));
    MemoryStore store;
    Pair pair = connect_pair(streams, streams, store);
    exchange_and_shut_down(pair, sizes);
  }
}

// Under TLS a pair runs one connection whatever BRAID_TCP_STREAMS says; large messages still
// arrive whole and exact.
TEST(TcpStripingTest, TlsRunsOneConnectionAndStaysExact) {
  const std::vector<std::size_t> sizes = {0, 1, 2 * kMinStripeBytes + 1, (std::size_t{3} << 20) + 7};
  MemoryStore store;
  Pair pair = connect_pair(3, 3, store, /*tls=*/true);
  exchange_and_shut_down(pair, sizes);
}

// Gather sends and scatter receives (message_buffer.h) of up to hundreds of pieces, more than
// one syscall's iovecs, against contiguous ones and each other, striped or not, posted before
// the bytes arrive or after (the unexpected copy scatters): the same bytes arrive.
TEST(TcpStripingTest, PiecesAreGatheredAndScatteredExactlyOnEveryStreamCount) {
  const std::vector<std::size_t> sizes = boundary_sizes();
  for (int streams : {1, 3}) {
    SCOPED_TRACE("BRAID_TCP_STREAMS=" + std::to_string(streams));
    MemoryStore store;
    Pair pair = connect_pair(streams, streams, store);
    exchange_and_shut_down(pair, sizes, Layout::kPieces);
  }
}

// TLS reads and writes one piece (or one record) at a time: the bytes still arrive exact.
TEST(TcpStripingTest, PiecesStayExactUnderTls) {
  const std::vector<std::size_t> sizes = {0, 1, 4099, 2 * kMinStripeBytes + 1, (std::size_t{3} << 20) + 7};
  MemoryStore store;
  Pair pair = connect_pair(1, 1, store, /*tls=*/true);
  exchange_and_shut_down(pair, sizes, Layout::kPieces);
}

TEST(TcpStripingTest, RanksThatDisagreeAboutTheStreamCountBothRaiseMismatch) {
  MemoryStore store;
  std::exception_ptr error1;
  std::thread one([&] {
    try {
      TcpTransport::connect(options_for(1, 3), store, Deadline::after(Seconds(20)));
    } catch (...) {
      error1 = std::current_exception();
    }
  });
  try {
    TcpTransport::connect(options_for(0, 2), store, Deadline::after(Seconds(20)));
    ADD_FAILURE() << "rank 0 connected";
  } catch (const Mismatch& e) {
    EXPECT_NE(std::string(e.what()).find("BRAID_TCP_STREAMS=2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("BRAID_TCP_STREAMS=3"), std::string::npos) << e.what();
  }
  one.join();
  ASSERT_TRUE(error1);
  EXPECT_THROW(std::rethrow_exception(error1), Mismatch);
}

// Rank 1 sends what the socket buffers take and dies before rank 0 reads a byte, so the message
// is cut short whatever the machine's speed. The buffers are fixed small: with autotuning a
// loopback stream may hold 36 MiB (tcp_rmem's 32 MiB maximum plus tcp_wmem's 4), and a 64 MiB
// message on three streams then fits whole, which made this test pass or fail by timing.
TEST(TcpStripingTest, APeerThatDiesMidStripeIsPeerLost) {
  MemoryStore store;
  constexpr std::size_t kBuffer = std::size_t{1} << 20;  // the kernel doubles it: 2 MiB each way
  Pair pair = connect_pair(3, 3, store, /*tls=*/false, kBuffer);
  std::vector<std::byte> big = pattern(std::size_t{64} << 20, 1), sink(std::size_t{64} << 20);
  RequestPtr recv = make_request(Request::Kind::kRecv, 1, 0, sink);
  pair.rank[0]->post_recv(recv);
  RequestPtr send = make_request(Request::Kind::kSend, 0, 0, big);
  pair.rank[1]->post_send(send);
  while (send->transferred == 0) pair.rank[1]->progress();
  for (int i = 0; i < 100 && pair.rank[1]->progress(); ++i) {
  }
  ASSERT_LT(send->transferred, big.size()) << "the socket buffers took the whole message";
  pair.rank[1].reset();  // as the process dying: every stream closes, no bye
  EXPECT_THROW(drive(*pair.rank[0], {recv}), PeerLost);
  EXPECT_NE(pair.rank[0]->lost_reason(1), "");
}

// Rank 1 played by hand: its stream 0 is admitted, a second connection with the wrong token
// is refused (the connector cannot even prove it), and the mesh is built once the real
// stream 1 arrives.
TEST(TcpStripingTest, EveryStreamMustProveTheJobToken) {
  MemoryStore store;
  std::unique_ptr<TcpTransport> zero;
  std::exception_ptr error0;
  std::thread rank0([&] {
    try {
      zero = TcpTransport::connect(options_for(0, 2), store, Deadline::after(Seconds(20)));
    } catch (...) {
      error0 = std::current_exception();
    }
  });
  const std::string endpoint = store.get("tcp/addr/0", Deadline::after(Seconds(10)));
  const auto port = static_cast<std::uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  Deadline deadline = Deadline::after(Seconds(10));
  ErrorContext ctx{.rank = 1, .peer = 0, .op = "test"};
  auto open_stream = [&](int index, const std::string& token) {
    UniqueFd fd = net::tcp_connect("127.0.0.1", port, deadline, ctx);
    net::client_handshake(fd.get(), {.role = net::Role::kTransportPeer, .rank = 1, .token = token}, deadline, ctx);
    send_stream_hello(fd.get(), index, 2, 1, 0, deadline, ctx);
    const char plain = 'P';
    char theirs = 0;
    net::write_all(fd.get(), &plain, 1, deadline, ctx);
    net::read_all(fd.get(), &theirs, 1, deadline, ctx);
    EXPECT_EQ(theirs, 'P');
    return fd;
  };
  UniqueFd stream0 = open_stream(0, kToken);
  EXPECT_THROW(open_stream(1, "not-the-job-token"), Error);
  UniqueFd stream1 = open_stream(1, kToken);
  rank0.join();
  if (error0) std::rethrow_exception(error0);
  EXPECT_TRUE(zero != nullptr);
}

}  // namespace
}  // namespace braid::tcp
