// Writes the seed corpora of the decoder fuzz targets (docs/fuzzing.md): valid inputs made by
// braid's own encoders, so that mutation starts past the magic, CRC and shape checks.
//
//   decoder_fuzz_seeds OUT_DIR      (writes OUT_DIR/<target>/<seed>)
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <zlib.h>

#include "braid/base/crc32c.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/store_protocol.h"
#include "braid/collectives/tuning_file.h"
#include "braid/torch/checkpoint_checksums.h"
#include "braid/torch/zero_checkpoint_manifest.h"
#include "braid/trace/chrome_trace.h"
#include "braid/transport/message_header.h"

namespace braid {
namespace {

namespace fs = std::filesystem;

class SeedWriter {
 public:
  SeedWriter(fs::path root, const char* target) : dir_(std::move(root) / target) { fs::create_directories(dir_); }
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir_ / name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  fs::path dir_;
};

void store_seeds(const fs::path& root) {
  using namespace store_wire;
  SeedWriter w(root, "store_frame_fuzz");
  const store_wire::Request requests[] = {
      {Op::kSet, {"rank/0/address"}, "127.0.0.1:29500"}, {Op::kGet, {"rank/0/address"}, ""},
      {Op::kWait, {"a", "bb", "ccc"}, ""},                {Op::kAdd, {"barrier/3"}, encode_i64(1)},
      {Op::kCheck, {"x", "y"}, ""},                       {Op::kDelete, {"rank/0/address"}, ""},
      {Op::kWait, {}, ""},                                {Op::kSet, {""}, std::string(300, '\xff')},
  };
  std::string stream;
  for (std::size_t i = 0; i < std::size(requests); ++i) {
    std::string frame = encode_request(requests[i]);
    w.write(fmt::format("request-{}", i), frame);
    stream += frame;
  }
  w.write("stream", stream);                                          // the server's view: frames back to back
  w.write("stream-partial", stream.substr(0, stream.size() - 3));     // the last one still arriving
  w.write("response-ok", encode_response({Status::kOk, encode_i64(-7)}).substr(kLengthPrefixBytes));
  w.write("response-error", encode_response({Status::kError, "key 'x' is not a counter"}).substr(kLengthPrefixBytes));
}

void handshake_seeds(const fs::path& root) {
  using namespace net;
  SeedWriter w(root, "handshake_fuzz");
  int n = 0;
  for (Role role : {Role::kStoreClient, Role::kTransportPeer}) {
    for (const std::string& token : {std::string(), std::string("0123456789abcdef0123456789abcdef"),
                                      std::string(kMaxTokenBytes, 't')}) {
      Hello hello{.role = role, .rank = 3, .token = token, .purpose = 0x1234, .nonce = std::string(kNonceBytes, 'n')};
      const std::string frame = encode_hello(hello);
      const std::string acceptor_nonce(kNonceBytes, 'a');
      const std::string proof = handshake_proof(Prover::kConnector, token, frame, acceptor_nonce);
      // The layout LLVMFuzzerTestOneInput reads: frame | token length | token | nonce | proof | flip | rest.
      std::string seed = frame + static_cast<char>(token.size()) + token + acceptor_nonce + proof + '\x05';
      w.write(fmt::format("hello-{}", n++), seed);
      w.write(fmt::format("hello-{}-trailing", n++), seed + encode_challenge(token, frame, acceptor_nonce));
    }
  }
  Hello old{.version = 1};
  w.write("hello-version1", encode_hello(old));
}

void wire_header_seeds(const fs::path& root) {
  SeedWriter w(root, "wire_header_fuzz");
  auto record = [](std::uint8_t command, const WireHeader& h) {
    return std::string(1, static_cast<char>(command)) + std::string(reinterpret_cast<const char*>(&h), sizeof h);
  };
  const MatchKey user{.comm_id = 7, .channel = Channel::kUser, .tag = 5};
  const MatchKey coll{.comm_id = 9, .channel = Channel::kCollective, .tag = 1};
  const Envelope send{.op = OpKind::kSendRecv, .seq = 0, .dtype = DType::kU8, .bytes = 64};
  const Envelope allreduce{.op = OpKind::kAllreduce, .seq = 12, .dtype = DType::kF32, .bytes = 4096,
                           .reduce_op = ReduceOp::kSum, .algorithm = 1};
  const Envelope broadcast{.op = OpKind::kBroadcast, .seq = 3, .dtype = DType::kBF16, .bytes = 10, .root = 2};
  const WireHeader data = make_data_header(user, send);
  const WireHeader reduce = make_data_header(coll, allreduce);
  w.write("data", record(0, data));
  w.write("data-then-recv", record(0, data) + record(2, data));   // unexpected, then claimed
  w.write("recv-then-data", record(2, reduce) + record(0, reduce));  // streamed into the receive
  w.write("broadcast", record(0, make_data_header(coll, broadcast)) + record(0, make_data_header(coll, broadcast)));
  w.write("abort-bye", record(0, make_abort_header(3, 100)) + record(0, make_bye_header()));
  Envelope huge = send;
  huge.bytes = std::uint64_t{1} << 39;
  w.write("huge", record(0, make_data_header(user, huge)));
}

void tuning_seeds(const fs::path& root) {
  SeedWriter w(root, "tuning_file_fuzz");
  TuningTable table;
  table.rules.push_back({.op = OpKind::kAllreduce, .algorithm = "recursive_doubling", .max_bytes = 16383,
                         .min_world = 4, .max_world = 4, .max_hosts = 1});
  table.rules.push_back({.op = OpKind::kAllreduce, .algorithm = "ring", .min_bytes = 16384});
  table.rules.push_back({.op = OpKind::kAllgather, .algorithm = "bruck", .min_world = 2, .max_world = 8});
  table.rules.push_back({.op = OpKind::kBroadcast, .algorithm = "chain", .min_hosts = 2});
  w.write("table", tuning_json(table, R"({"date": "2026-12-01", "hostname": "fuzz", "world": 4, "hosts": 1})"));
  w.write("empty", tuning_json(TuningTable{}));
}

void trace_seeds(const fs::path& root) {
  using namespace trace;
  SeedWriter w(root, "trace_reader_fuzz");
  TraceData d{.rank = 1, .anchor = {.steady_ns = 0, .system_ns = 1764547200000000000}, .hostname = "node-a"};
  d.compute = {{.name = "forward", .start_ns = 1000, .end_ns = 5000}, {.name = "backward", .start_ns = 6000, .end_ns = 9000}};
  d.comm = {{.name = "allreduce", .start_ns = 5500, .end_ns = 8000, .bytes = 4096, .wire_bytes = 6144,
             .algorithm = "ring", .codec = "fp16"},
            {.name = "bucket 3", .start_ns = 8100, .end_ns = 8200, .bytes = 16, .lane = 2, .failed = true}};
  d.marks = {{.name = "checkpoint", .at_ns = 9500}};
  d.steps = {{.step = 0, .start_ns = 0}, {.step = 1, .start_ns = 5200}};
  d.lane_names = {{.lane = 2, .name = "tp engine"}};
  d.dropped_events = 2;
  w.write("rank1", to_chrome_trace_json(d));
  w.write("empty", to_chrome_trace_json(TraceData{}));
}

std::string idx(std::vector<std::uint32_t> dims, std::size_t body_bytes) {
  std::string out = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  for (std::size_t i = 0; i < body_bytes; ++i) out.push_back(static_cast<char>(i % 10));
  return out;
}

std::string gzip(const std::string& bytes) {
  std::vector<Bytef> out(compressBound(static_cast<uLong>(bytes.size())) + 32);
  z_stream s{};
  deflateInit2(&s, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // +16: gzip framing
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  s.avail_in = static_cast<uInt>(bytes.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  deflate(&s, Z_FINISH);
  std::string result(reinterpret_cast<const char*>(out.data()), s.total_out);
  deflateEnd(&s);
  return result;
}

void idx_seeds(const fs::path& root) {
  SeedWriter w(root, "idx_file_fuzz");
  w.write("labels", idx({6}, 6));
  w.write("images", idx({2, 3, 3}, 18));
  w.write("four-dims", idx({1, 2, 2, 2}, 8));
  w.write("images-gz", gzip(idx({2, 2, 2}, 8)));
  // The images file, then a labels file of its last `split` bytes (the last byte): 2 images of
  // 2x2 and 2 labels, both within one input.
  std::string labels = idx({2}, 2);
  std::string pair = idx({2, 2, 2}, 8) + labels;
  pair.push_back(static_cast<char>(labels.size() + 1));
  w.write("image-set", pair);
}

void text_seeds(const fs::path& root) {
  SeedWriter w(root, "text_corpus_fuzz");
  const std::string fortunes =
      "A fool and his money are soon parted.\n%\nThe early bird gets the worm.\n%\n"
      "Never put off till tomorrow what you can do today.\n%\nLook before you leap.\n";
  w.write("one-file", std::string("\x04\x00", 2) + fortunes);
  w.write("three-files", std::string("\x02\x02", 2) + fortunes + fortunes + "%\nno newline at the end");
}

void checkpoint_seeds(const fs::path& root) {
  using namespace torch;
  SeedWriter w(root, "checkpoint_manifest_fuzz");
  ZeroManifest m{.generation = 7, .world_size = 2, .optimizer = "adam", .fingerprint = "model=gpt batch=24",
                 .step = 3, .epoch = 0, .batch_in_epoch = 3};
  m.buckets = {{.params = {{"embed.weight", 4096}, {"head.bias", 64}}}, {.params = {{"head.weight", 8320}}}};
  m.shards = {{"zero-7-rank0.pt", 2443312}, {"zero-7-rank1.pt", 2443300}};
  m.buffers = {"zero-7-buffers.pt", 2124};
  w.write("manifest", encode_manifest(m));
  ChecksumTable table;
  const float weights[] = {1.0f, -2.5f, 3.25f};
  table.add("model/fc1.weight", weights, sizeof weights);
  table.add("optimizer/state/0/exp_avg", weights, 8);
  w.write("checksums", table.encode());
}

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: decoder_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path root = argv[1];
  braid::store_seeds(root);
  braid::handshake_seeds(root);
  braid::wire_header_seeds(root);
  braid::tuning_seeds(root);
  braid::trace_seeds(root);
  braid::idx_seeds(root);
  braid::text_seeds(root);
  braid::checkpoint_seeds(root);
  return 0;
}
