// StoreServer: the poll() loop that serves the rendezvous store.
//
// Per-client state machine:
//   hello --(challenge sent)--> proof --(proof accepted)--> serving --(EOF / violation)--> dead
// While serving, a client has at most one request in progress: either parked (get/wait on
// missing keys) or its response sitting in the write buffer. Only when neither holds is the
// next frame parsed, and only then is the socket read (POLLIN). This keeps responses in
// request order and bounds each client's buffers by one frame, whatever the client sends.
//
// Unproven connections (no hello or no proof yet) must not crowd out the ranks: anyone who can reach the
// port can open them. Each gets kHelloTimeout to prove the token, at most unproven_cap() exist
// at once, and when the cap is reached or accept(2) runs out of file descriptors the oldest
// unproven one is closed to make room (after reading whatever it sent, so a real rank whose
// hello is already queued is admitted, not evicted). A real rank sends its hello in the same
// breath as it connects, so it always gets in.
#include <sys/eventfd.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "braid/base/log.h"
#include "braid/base/start_thread.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/socket.h"
#include "braid/bootstrap/store.h"
#include "braid/bootstrap/tcp_liveness.h"

namespace braid {

namespace {

using store_wire::Op;
using store_wire::Request;
using store_wire::Response;
using store_wire::Status;

constexpr std::size_t kReadChunkBytes = 256 << 10;
// While some client has not finished its handshake the loop wakes this often to expire it.
constexpr int kHandshakeTickMs = 1000;
// Out of fds with nobody to evict: stop accepting for a moment instead of spinning on a
// listener that stays readable.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// How long a new connection may take to send its hello and its proof (a real rank sends them at once).
constexpr Seconds kHelloTimeout{10.0};
// Most unproven connections held at once, whatever the descriptor limit allows.
constexpr std::size_t kMaxUnproven = 32;

// A quarter of this process's descriptor limit, within [4, kMaxUnproven]: unproven clients
// never take the descriptors the real ranks' connections need.
std::size_t unproven_cap() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kMaxUnproven;
  return std::clamp<std::size_t>(static_cast<std::size_t>(limit.rlim_cur / 4), 4, kMaxUnproven);
}

struct Client {
  UniqueFd fd;
  std::string remote;
  int rank = -1;
  bool authenticated = false;
  // Between the hello and the proof (job_token.h): the hello as received and this server's nonce.
  std::string hello_frame;
  std::string acceptor_nonce;
  Deadline handshake_deadline = Deadline::never();
  std::string in;   // received bytes not yet parsed
  std::string out;  // response bytes not yet sent
  std::size_t out_sent = 0;
  std::optional<Request> parked;  // a get/wait waiting for its keys
  bool dead = false;

  bool sending() const { return out_sent < out.size(); }
  // True while the client may not start another request.
  bool blocked() const { return dead || parked.has_value() || sending(); }
};

bool parse_counter(const std::string& text, std::int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

Response error_response(std::string message) { return {Status::kError, std::move(message)}; }

}  // namespace

// Everything here runs on the server thread, except stop(), which only writes the eventfd.
class StoreServer::Loop {
 public:
  Loop(UniqueFd listen_fd, std::string token, std::string address, Seconds handshake_timeout)
      : listen_fd_(std::move(listen_fd)), token_(std::move(token)), address_(std::move(address)),
        handshake_timeout_(handshake_timeout), unproven_cap_(unproven_cap()), peer_timeout_(peer_timeout()),
        read_buffer_(kReadChunkBytes) {
    stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop_fd_.valid()) throw_system_error({.op = "store.serve"}, "eventfd", errno);
  }

  void stop() {
    std::uint64_t one = 1;
    ssize_t ignored = ::write(stop_fd_.get(), &one, sizeof one);
    (void)ignored;  // cannot fail short of a closed fd; the counter saturating still wakes poll
  }

  void run() noexcept {
    try {
      serve();
    } catch (const std::exception& e) {
      // Close everything so clients see PeerLost now instead of timing out later.
      log::error("store server at {} stopped: {}", address_, e.what());
      clients_.clear();
      listen_fd_.reset();
    }
  }

 private:
  void serve() {
    std::vector<pollfd> fds;
    for (;;) {
      build_poll_set(fds);
      int rc = ::poll(fds.data(), fds.size(), poll_timeout_ms());
      if (rc < 0) {
        if (errno == EINTR) continue;
        throw_system_error({.op = "store.serve"}, "poll", errno);
      }
      if (fds[0].revents != 0) return;  // stop() was called
      const std::size_t polled = fds.size() - 2;
      if (fds[1].revents & POLLIN) accept_new();
      for (std::size_t i = 0; i < polled; ++i) {
        if (fds[i + 2].revents != 0) on_event(*clients_[i], fds[i + 2].revents);
      }
      run_ready_clients();
      expire_handshakes();
      std::erase_if(clients_, [](const auto& c) { return c->dead; });
    }
  }

  void build_poll_set(std::vector<pollfd>& fds) const {
    fds.clear();
    fds.push_back({stop_fd_.get(), POLLIN, 0});
    const bool accepting = Clock::now() >= accept_paused_until_;
    fds.push_back({accepting ? listen_fd_.get() : -1, POLLIN, 0});  // poll ignores negative fds
    for (const auto& c : clients_) {
      // POLLRDHUP notices a client that hung up while its request is parked (no POLLIN then).
      short events = POLLRDHUP;
      if (!c->blocked()) events |= POLLIN;
      if (c->sending()) events |= POLLOUT;
      fds.push_back({c->fd.get(), events, 0});
    }
  }

  int poll_timeout_ms() const {
    int timeout = -1;
    for (const auto& c : clients_) {
      if (!c->authenticated) timeout = kHandshakeTickMs;
    }
    if (Clock::now() < accept_paused_until_) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(accept_paused_until_ - Clock::now()).count();
      timeout = timeout < 0 ? static_cast<int>(ms) : std::min(timeout, static_cast<int>(ms));
    }
    return timeout;
  }

  void accept_new() {
    for (;;) {
      UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!fd.valid()) {
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK) return;
        if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
        if ((e == EMFILE || e == ENFILE) && evict_oldest_unproven("out of file descriptors")) continue;
        log::warn("store at {}: accept failed ({}); pausing new connections briefly", address_, std::strerror(e));
        accept_paused_until_ = Clock::now() + kAcceptPause;
        return;
      }
      if (unproven_count() >= unproven_cap_) evict_oldest_unproven("too many connections without a hello");
      clients_.push_back(make_client(std::move(fd)));
      // On loopback the hello usually arrives with the connection: admit it now, before a
      // flood of other connections could make it the oldest unproven one.
      serve_one(*clients_.back());
    }
  }

  std::unique_ptr<Client> make_client(UniqueFd fd) {
    auto client = std::make_unique<Client>();
    client->remote = net::peer_address(fd.get());
    try {
      net::set_nodelay(fd.get());
      net::watch_peer(fd.get(), peer_timeout_);
    } catch (const Error& e) {
      log::debug("store at {}: {}", address_, e.detail());
    }
    client->fd = std::move(fd);
    client->handshake_deadline = Deadline::after(handshake_timeout_);
    return client;
  }

  std::size_t unproven_count() const {
    return static_cast<std::size_t>(
        std::count_if(clients_.begin(), clients_.end(), [](const auto& c) { return !c->dead && !c->authenticated; }));
  }

  // Closes the oldest connection that has not proven the token, after one last look at what it
  // sent. Returns false when there was none to close.
  bool evict_oldest_unproven(const char* why) {
    for (auto& c : clients_) {
      if (c->dead || c->authenticated) continue;
      serve_one(*c);
      if (c->dead || c->authenticated) continue;
      // The first eviction is worth a warning (someone is flooding the port); the rest would
      // only flood the log in turn.
      drop(*c, fmt::format("{}: closed the oldest connection that has not proven the job token", why),
           evictions_++ == 0 ? log::Level::kWarn : log::Level::kDebug);
      return true;
    }
    return false;
  }

  // Reads what the client has sent so far and acts on it, as a POLLIN event would.
  void serve_one(Client& c) { on_event(c, POLLIN); }

  void on_event(Client& c, short revents) {
    if (c.dead) return;
    try {
      if (revents & POLLOUT) flush(c);
      if (c.dead) return;
      if (revents & POLLIN) {
        read_some(c);
      } else if (revents & (POLLRDHUP | POLLHUP | POLLERR)) {
        drop(c, "hung up", log::Level::kDebug);
        return;
      }
      process(c);
    } catch (const Error& e) {
      drop(c, e.detail(), log::Level::kWarn);
    } catch (const std::exception& e) {  // e.g. bad_alloc on a large frame: lose the client, not the server
      drop(c, e.what(), log::Level::kWarn);
    }
  }

  void read_some(Client& c) {
    ssize_t k = ::recv(c.fd.get(), read_buffer_.data(), read_buffer_.size(), MSG_DONTWAIT);
    if (k > 0) {
      c.in.append(read_buffer_.data(), static_cast<std::size_t>(k));
    } else if (k == 0) {
      drop(c, "closed the connection", log::Level::kDebug);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      drop(c, std::strerror(errno), log::Level::kDebug);
    }
  }

  // Parses and executes the client's buffered frames until it blocks or runs out of whole
  // frames. Returns whether anything was consumed. Throws Corrupt on a protocol violation.
  bool process(Client& c) {
    std::size_t pos = 0;
    while (!c.blocked()) {
      std::string_view avail(c.in.data() + pos, c.in.size() - pos);
      if (!c.authenticated && c.hello_frame.empty()) {
        if (avail.size() < net::kHelloBytes) break;
        challenge(c, avail.substr(0, net::kHelloBytes));
        pos += net::kHelloBytes;
        continue;
      }
      if (!c.authenticated) {
        if (avail.size() < net::kProofBytes) break;
        admit(c, avail.substr(0, net::kProofBytes));
        pos += net::kProofBytes;
        continue;
      }
      std::optional<store_wire::SplitRequest> frame = store_wire::next_request(avail);
      if (!frame) break;
      pos += frame->frame_bytes;
      execute(c, std::move(frame->request));
    }
    if (!c.dead) c.in.erase(0, pos);
    return pos > 0;
  }

  // After one client's request unparks another, that one may hold further whole frames that no
  // poll event will announce: keep going until nobody can make progress.
  void run_ready_clients() {
    bool progressed = true;
    while (progressed) {
      progressed = false;
      for (auto& c : clients_) {
        if (c->blocked() || c->in.empty()) continue;
        try {
          progressed = process(*c) || progressed;
        } catch (const Error& e) {
          drop(*c, e.detail(), log::Level::kWarn);
        } catch (const std::exception& e) {
          drop(*c, e.what(), log::Level::kWarn);
        }
      }
    }
  }

  void expire_handshakes() {
    for (auto& c : clients_) {
      if (!c->dead && !c->authenticated && c->handshake_deadline.expired()) {
        drop(*c, c->hello_frame.empty() ? "sent no hello within the timeout" : "sent no proof within the timeout",
             log::Level::kWarn);
      }
    }
  }

  // The hello: a refusal for another version or role, else the challenge (job_token.h).
  void challenge(Client& c, std::string_view frame) {
    const ErrorContext ctx{.op = "store.handshake"};
    net::Hello hello;
    try {
      hello = net::decode_hello(frame, ctx);
    } catch (const Corrupt& e) {
      drop(c, fmt::format("refused: {}", e.detail()), log::Level::kWarn);
      return;
    }
    net::Verdict verdict = net::judge_hello(hello, net::Role::kStoreClient);
    if (verdict != net::Verdict::kChallenge) {
      refuse(c, verdict, hello);
      return;
    }
    c.rank = hello.rank;
    c.hello_frame = std::string(frame);
    c.acceptor_nonce = net::fresh_nonce();
    c.out += net::encode_challenge(token_, c.hello_frame, c.acceptor_nonce);
    flush(c);
  }

  // The connector's proof of the token.
  void admit(Client& c, std::string_view proof) {
    net::Verdict verdict = net::judge_proof(proof, token_, c.hello_frame, c.acceptor_nonce);
    if (verdict != net::Verdict::kAccepted) {
      refuse(c, verdict, net::Hello{.role = net::Role::kStoreClient, .rank = c.rank});
      return;
    }
    c.authenticated = true;
    c.out.push_back(static_cast<char>(net::Verdict::kAccepted));
    flush(c);
    log::debug("store at {}: rank {} connected from {}", address_, c.rank, c.remote);
  }

  void refuse(Client& c, net::Verdict verdict, const net::Hello& hello) {
    // Log before answering: the refused client exits at once, and the launcher may stop this
    // rank before a later log line is written.
    try {
      net::refuse(verdict, hello, c.remote, {.op = "store.handshake"});  // logs "refused connection from ..."
    } catch (const Error&) {
    }
    // One byte always fits the socket's send buffer (the challenge, if sent, is long flushed: a
    // client is not parsed while its output is pending); the client learns why it was refused.
    auto byte = static_cast<std::uint8_t>(verdict);
    ssize_t ignored = ::send(c.fd.get(), &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)ignored;
    drop(c, "refused at the handshake", log::Level::kDebug);
  }

  void execute(Client& c, Request request) {
    switch (request.op) {
      case Op::kSet:
        data_[request.keys[0]] = std::move(request.value);
        respond(c, {});
        wake_waiters();
        return;
      case Op::kGet:
      case Op::kWait:
        c.parked = std::move(request);
        try_answer(c);
        return;
      case Op::kAdd:
        respond(c, add(request));
        wake_waiters();
        return;
      case Op::kCheck:
        respond(c, {Status::kOk, std::string(1, all_exist(request.keys) ? '\1' : '\0')});
        return;
      case Op::kDelete:
        respond(c, {Status::kOk, std::string(1, data_.erase(request.keys[0]) > 0 ? '\1' : '\0')});
        return;
    }
  }

  Response add(const Request& request) {
    const std::string& key = request.keys[0];
    const std::int64_t delta = store_wire::decode_i64(request.value);
    std::int64_t current = 0;
    if (auto it = data_.find(key); it != data_.end() && !parse_counter(it->second, &current)) {
      return error_response(fmt::format("key '{}' holds a value that is not an integer counter", key));
    }
    std::int64_t result = 0;
    if (__builtin_add_overflow(current, delta, &result)) {
      return error_response(fmt::format("counter '{}' would overflow ({} + {})", key, current, delta));
    }
    data_[key] = std::to_string(result);
    return {Status::kOk, store_wire::encode_i64(result)};
  }

  bool all_exist(const std::vector<std::string>& keys) const {
    for (const auto& key : keys) {
      if (!data_.contains(key)) return false;
    }
    return true;
  }

  // Answers c's parked get/wait if its keys now exist.
  void try_answer(Client& c) {
    if (!c.parked || !all_exist(c.parked->keys)) return;
    Response response;
    if (c.parked->op == Op::kGet) response.value = data_.at(c.parked->keys[0]);
    c.parked.reset();
    respond(c, response);
  }

  void wake_waiters() {
    for (auto& other : clients_) {
      if (!other->dead && other->parked) try_answer(*other);
    }
  }

  void respond(Client& c, const Response& response) {
    c.out += store_wire::encode_response(response);
    flush(c);
  }

  void flush(Client& c) {
    while (c.sending()) {
      ssize_t k = ::send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k > 0) {
        c.out_sent += static_cast<std::size_t>(k);
      } else if (k < 0 && errno == EINTR) {
        continue;
      } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;  // POLLOUT resumes it
      } else {
        drop(c, k < 0 ? std::strerror(errno) : "send made no progress", log::Level::kDebug);
        return;
      }
    }
    c.out.clear();
    c.out_sent = 0;
  }

  // Closes at once so the client sees EOF now; the entry is erased at the end of the round.
  void drop(Client& c, const std::string& reason, log::Level level) {
    if (c.dead) return;
    std::string line = fmt::format("store at {}: dropping client {} (rank {}): {}", address_, c.remote, c.rank, reason);
    if (log::enabled(level)) log::write(level, line);
    c.dead = true;
    c.fd.reset();
    c.parked.reset();
    c.in.clear();
    c.out.clear();
    c.out_sent = 0;
  }

  UniqueFd listen_fd_;
  UniqueFd stop_fd_;
  const std::string token_;
  const std::string address_;
  const Seconds handshake_timeout_;
  const std::size_t unproven_cap_;
  const Seconds peer_timeout_;
  std::vector<char> read_buffer_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::unordered_map<std::string, std::string> data_;
  Clock::time_point accept_paused_until_{};
  std::size_t evictions_ = 0;
};

StoreServer::StoreServer(const std::string& bind_addr, std::uint16_t port, std::string token) {
  if (token.size() > net::kMaxTokenBytes) {
    throw InvalidArgument({.op = "store.serve"}, fmt::format("job token is {} bytes long; at most {} are allowed",
                                                             token.size(), net::kMaxTokenBytes));
  }
  // Read here, on the caller's thread, so a malformed BRAID_TIMEOUT throws to the caller.
  const Seconds handshake_timeout = std::min(Seconds(default_timeout_seconds()), kHelloTimeout);
  net::require_token_beyond_loopback(bind_addr, token, "the rendezvous store", {.op = "store.listen"});
  UniqueFd listen_fd = net::tcp_listen(bind_addr, port);
  port_ = net::local_port(listen_fd.get());
  address_ = net::format_endpoint(net::local_address(listen_fd.get()), port_);
  net::warn_if_no_token(token);
  loop_ = std::make_unique<Loop>(std::move(listen_fd), std::move(token), address_, handshake_timeout);
  thread_ = start_thread({.op = "store.serve"}, [loop = loop_.get()] { loop->run(); });
  log::info("rendezvous store serving on {}", address_);
}

StoreServer::~StoreServer() {
  loop_->stop();
  thread_.join();
}

}  // namespace braid
