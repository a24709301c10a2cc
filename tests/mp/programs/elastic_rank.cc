// braid-elastic-rank ROUNDS: the rank program of tests/mp/elastic_test.cc, run under
// braid-run --elastic. Each round allreduces a vector whose every element is
// (member id + 1) * (round + 1), so the right sum depends on exactly who is a member: a round after
// a shrink that counted a dead rank, or missed a live one, is caught. On PeerLost or Timeout the
// rank shrinks the group (comm/elastic_group.h) and repeats from the agreed round.
//
// Lines: "ROUND r OK size n sum s", "LOST after round r: ...", "SHRUNK generation g: rank k of n",
// "DONE rounds R size n generation g", "ERROR ..." (exit 3), "WRONG ..." (exit 4).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "braid/base/clock.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/elastic_group.h"
#include "scenario.h"

namespace {

constexpr std::int64_t kCount = 4096;  // a few ring chunks: the loss lands mid-transfer

double expected_sum(const braid::Membership& m, std::int64_t round) {
  double sum = 0;
  for (int id : m.members) sum += static_cast<double>((id + 1) * (round + 1));
  return sum;
}

// Returns false (having said WRONG) when an element differs from the membership's sum.
bool run_round(braid::ElasticGroup& group, std::int64_t round) {
  std::vector<double> data(kCount, static_cast<double>((group.id() + 1) * (round + 1)));
  braid::allreduce(group.comm(), data.data(), data.data(), kCount, braid::DType::kF64, braid::ReduceOp::kSum);
  const double expected = expected_sum(group.membership(), round);
  for (double value : data) {
    if (value != expected) {
      RANK_SAY("WRONG round %lld: %g, expected %g (%s)", static_cast<long long>(round), value, expected,
          group.membership().describe().c_str());
      return false;
    }
  }
  RANK_SAY("ROUND %lld OK size %d sum %g", static_cast<long long>(round), group.comm().size(), expected);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t rounds = argc > 1 ? std::atoll(argv[1]) : 10;
  try {
    braid::ElasticGroup group = braid::ElasticGroup::join();
    std::int64_t done = 0;  // rounds completed
    while (done < rounds) {
      try {
        if (!run_round(group, done)) return 4;
        ++done;
      } catch (const braid::Error& e) {
        if (e.kind() != braid::ErrorKind::kPeerLost && e.kind() != braid::ErrorKind::kTimeout) throw;
        RANK_SAY("LOST after round %lld: %s", static_cast<long long>(done), e.what());
        const braid::Membership& m = group.shrink(done);
        done = m.resume_step;
        RANK_SAY("SHRUNK generation %lld: rank %d of %d", static_cast<long long>(m.generation), group.comm().rank(),
            group.comm().size());
      }
    }
    RANK_SAY("DONE rounds %lld size %d generation %lld", static_cast<long long>(rounds), group.comm().size(),
        static_cast<long long>(group.membership().generation));
    return 0;
  } catch (const braid::Error& e) {
    RANK_SAY("ERROR %s", e.what());
    return 3;
  }
}
