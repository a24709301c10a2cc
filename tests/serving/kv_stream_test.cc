// The prefill-to-decode KV stream (serving/kv_stream_*.h) through real rank processes, with
// synthetic KV bytes whose every byte says where it belongs (kv_pattern.h):
//   - every decode rank receives, bit for bit, what the prefill ranks holding its heads wrote,
//     for 1->1, 2->1, 1->2, 2->2, 4->2 (shm and TCP), several requests in flight with their
//     layers interleaved, and two prefill instances sharing request ids;
//   - the same through the packed path (kv_chunk_pipeline.h) for 1->2, 2->1, 2->4 with chunk
//     sizes that do and do not divide a layer, blocks scattered, adjacent, adjacent on one side;
//   - the bytes received per request equal braid-plan kv's figure for it (plan/kv_cache.h);
//   - back-pressure: 2 requests in flight at most, room for 1 at the decode rank: the queue
//     holds the next one, nothing beyond the bounds;
//   - malformed requests are InvalidArgument naming rank, peer and request, on the side that
//     sees them, and the stream goes on; a layout mismatch is Mismatch on both sides;
//   - a decode rank killed mid-transfer (braid-run --elastic): the prefill side reports that
//     request failed and frees its blocks; after the shrink a request to the other decode rank
//     goes through.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "braid/plan/kv_cache.h"
#include "launch.h"

namespace braid::testing {
namespace {

constexpr std::int64_t kRoundtripTokens[] = {1, 4, 5, 13, 16, 37};  // as in kv_stream_rank.cc

LaunchResult run(int ranks, const std::vector<std::string>& args, const std::string& transport = "auto",
                 std::vector<std::string> braid_run_flags = {}) {
  LaunchOptions o;
  o.ranks = ranks;
  o.program = test_program_path("braid-kv-stream-rank");
  o.args = args;
  o.braid_run_flags = std::move(braid_run_flags);
  o.env = {{"BRAID_TRANSPORT", transport}, {"BRAID_TIMEOUT", "20"}};
  o.timeout_seconds = 60;
  return launch(o);
}

// The job ended in time, with exit code 0, and `ranks` ranks printed "PASS <scenario>".
void expect_passed(const LaunchResult& r, const std::string& scenario, int ranks) {
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("PASS " + scenario), ranks) << r.output;
  EXPECT_EQ(r.count("FAIL"), 0) << r.output;
}

double planner_bytes(std::int64_t tokens, int p, int d) {
  const plan::KvInput in{.layers = 3, .kv_heads = 4, .head_dim = 8, .bytes = 4, .tokens = static_cast<double>(tokens),
                         .block_size = 4, .prefill_tp = p, .decode_tp = d};
  for (const auto& e : plan::kv_cache(in)) {
    if (e.name == "kv_transfer_bytes_per_request") return e.value;
  }
  return -1;
}

struct Split {
  int prefill_ranks, prefill_tp, decode_ranks, decode_tp;
  const char* transport;
};

void PrintTo(const Split& s, std::ostream* out) {
  *out << s.prefill_ranks << " prefill (TP " << s.prefill_tp << "), " << s.decode_ranks << " decode (TP " << s.decode_tp
       << ") over " << s.transport;
}

class KvStreamTest : public ::testing::TestWithParam<Split> {};

// Every request arrived at its decode instance with, summed over its ranks, the planner's bytes.
void expect_planner_bytes(const LaunchResult& r, const Split& s) {
  // Bytes per (prefill instance, request), summed over the decode ranks of its instance.
  std::map<std::pair<int, long long>, long long> bytes;
  for (const std::string& line : r.lines_with("BYTES rank")) {
    int rank = 0, prefill = 0;
    long long id = 0, tokens = 0, b = 0;
    ASSERT_EQ(std::sscanf(line.c_str() + line.find("BYTES"), "BYTES rank %d prefill %d request %lld tokens %lld bytes %lld",
                          &rank, &prefill, &id, &tokens, &b), 5) << line;
    EXPECT_EQ(tokens, kRoundtripTokens[id]);
    bytes[{prefill, id}] += b;
  }
  const int prefill_instances = s.prefill_ranks / s.prefill_tp;
  EXPECT_EQ(bytes.size(), static_cast<std::size_t>(prefill_instances) * std::size(kRoundtripTokens)) << r.output;
  for (const auto& [key, total] : bytes) {
    EXPECT_EQ(static_cast<double>(total), planner_bytes(kRoundtripTokens[key.second], s.prefill_tp, s.decode_tp))
        << "prefill instance " << key.first << " request " << key.second;
  }
}

TEST_P(KvStreamTest, DecodeRanksReceiveEveryByteThePlannerCounts) {
  const Split& s = GetParam();
  const int ranks = s.prefill_ranks + s.decode_ranks;
  const LaunchResult r = run(ranks, {"roundtrip", std::to_string(s.prefill_ranks), std::to_string(s.prefill_tp),
                                     std::to_string(s.decode_tp)}, s.transport);
  expect_passed(r, "roundtrip", ranks);
  expect_planner_bytes(r, s);
}

INSTANTIATE_TEST_SUITE_P(Splits, KvStreamTest,
                         ::testing::Values(Split{1, 1, 1, 1, "auto"}, Split{2, 2, 1, 1, "auto"}, Split{1, 1, 2, 2, "auto"},
                                           Split{2, 2, 2, 2, "auto"}, Split{2, 2, 1, 1, "tcp"},
                                           Split{1, 1, 2, 2, "tcp"}, Split{2, 1, 2, 1, "auto"}, Split{4, 4, 2, 2, "auto"}));

// The packed path: TP reshards with a layer's blocks in messages of CHUNK bytes (3000: not a
// divisor of a layer, and a 512 B K or V slice straddles no chunk; 0: one message per segment),
// the blocks scattered (a run per segment on both sides), adjacent (one run) or adjacent on one side.
struct Packed {
  Split split;
  const char* chunk;
  const char* blocks;
};

void PrintTo(const Packed& p, std::ostream* out) {
  PrintTo(p.split, out);
  *out << ", chunk " << p.chunk << " B, blocks " << p.blocks;
}

class KvStreamPackedTest : public ::testing::TestWithParam<Packed> {};

TEST_P(KvStreamPackedTest, DecodeRanksReceiveEveryByteBitForBit) {
  const Packed& p = GetParam();
  const int ranks = p.split.prefill_ranks + p.split.decode_ranks;
  const LaunchResult r = run(ranks, {"roundtrip", std::to_string(p.split.prefill_ranks), std::to_string(p.split.prefill_tp),
                                     std::to_string(p.split.decode_tp), p.chunk, p.blocks}, p.split.transport);
  expect_passed(r, "roundtrip", ranks);  // each decode rank checked every byte it holds
  expect_planner_bytes(r, p.split);
}

INSTANTIATE_TEST_SUITE_P(
    Reshards, KvStreamPackedTest,
    ::testing::Values(Packed{{1, 1, 2, 2, "auto"}, "3000", "scattered"}, Packed{{2, 2, 1, 1, "tcp"}, "3000", "scattered"},
                      Packed{{2, 2, 4, 4, "auto"}, "3000", "scattered"}, Packed{{1, 1, 2, 2, "tcp"}, "3000", "adjacent"},
                      Packed{{2, 2, 1, 1, "auto"}, "1048576", "adjacent"},
                      Packed{{2, 2, 4, 4, "tcp"}, "1048576", "prefill-adjacent"},
                      Packed{{1, 1, 1, 1, "auto"}, "3000", "prefill-adjacent"}, Packed{{2, 2, 1, 1, "auto"}, "0", "scattered"}));

TEST(KvStream, BackPressureHoldsRequestsInTheBoundedQueue) {
  const LaunchResult r = run(2, {"backpressure"});
  expect_passed(r, "backpressure", 2);
  EXPECT_EQ(r.count("PREFILL most in flight 2, 8 ok"), 1) << r.output;
  EXPECT_EQ(r.count("DECODE arrived 8, most queued 1, most held 1"), 1) << r.output;
}

TEST(KvStream, MalformedRequestsAreErrorsNamingRankPeerAndRequest) {
  const LaunchResult r = run(2, {"malformed"});
  expect_passed(r, "malformed", 2);
  EXPECT_EQ(r.count("NO-ERROR"), 0) << r.output;
  for (const char* local : {"[rank 0, op kv send]: request id -1 is outside [0, 268435455]",
                            "[rank 0, op kv send]: request 1 has 65 tokens, outside the context [1, 64]",
                            "[rank 0, op kv send]: request 2 names decode instance 3, outside [0, 1)",
                            "[rank 0, op kv send]: request 3: 2 block spans given, the layout needs 3 layers x 2 blocks = 6",
                            "[rank 0, op kv layer ready]: request 4 is not in flight on this rank"}) {
    EXPECT_EQ(r.count(std::string("LOCAL-ERROR braid::InvalidArgument ") + local), 1) << local << "\n" << r.output;
  }
  const std::string decode = "DECODE-REFUSED braid::InvalidArgument [rank 1, peer 0, op kv receive]: refused a request "
                             "header from prefill rank 0: ";
  EXPECT_EQ(r.count(decode + "request 7 has 1000 tokens, outside the context [1, 64]"), 1) << r.output;
  EXPECT_EQ(r.count(decode + "request id -5 is outside [0, 268435455]"), 1) << r.output;
  EXPECT_EQ(r.count(decode + "request 8 names decode instance 2, not this rank's"), 1) << r.output;
  EXPECT_EQ(r.count("ANSWER request 7 refused reason 2"), 1) << r.output;
  EXPECT_EQ(r.count("ANSWER request 8 refused reason 3"), 1) << r.output;
  EXPECT_EQ(r.count("GOOD request 9 ok"), 1) << r.output;
}

TEST(KvStream, LayoutMismatchIsAMismatchOnBothSides) {
  const LaunchResult r = run(2, {"layout-mismatch"});
  expect_passed(r, "layout-mismatch", 2);
  EXPECT_EQ(r.count("MISMATCH braid::Mismatch"), 2) << r.output;
  EXPECT_EQ(r.count("ranks disagree on head dim: rank 0 has 8, rank 1 has 16"), 2) << r.output;
  EXPECT_EQ(r.count("chunk bytes: rank 0 has 2097152, rank 1 has 4096"), 2) << r.output;
}

TEST(KvStream, DecodeRankKilledMidTransferFailsOnlyItsRequest) {
  const LaunchResult r = run(3, {"decode-killed"}, "auto", {"--elastic"});
  expect_passed(r, "decode-killed", 2);  // the two survivors
  EXPECT_EQ(r.count("REQUEST 0 ok"), 1) << r.output;
  const auto client = r.lines_with("CLIENT-ERROR request 1: request 1 to decode instance 1 failed: braid::PeerLost");
  EXPECT_EQ(client.size(), 1u) << r.output;
  EXPECT_EQ(r.count("FREED request 1: 0 in flight"), 1) << r.output;
  EXPECT_EQ(r.count("CONTINUED request 2 ok"), 1) << r.output;
  EXPECT_EQ(r.count("braid-run: rank 2 (pid"), 1) << r.output;  // the victim died, and only it
}

}  // namespace
}  // namespace braid::testing
