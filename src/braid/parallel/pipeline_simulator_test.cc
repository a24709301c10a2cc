#include "braid/parallel/pipeline_simulator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "braid/base/error.h"

namespace braid::parallel {
namespace {

// Unit costs are small integers and sums of them, so simulated times are exact in double;
// 1e-12 only absorbs the division in the rates.
constexpr double kExact = 1e-12;

SimulationResult run(ScheduleKind kind, int p, int m, int v = 1, ActionCosts costs = {}) {
  return simulate(make_schedule({kind, p, m, v}), costs);
}

TEST(Simulator, GPipeAndOneFOneBBubbleIsTheTextbookRate) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 32; ++m) {
      const double expected = static_cast<double>(p - 1) / (m + p - 1);
      for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B}) {
        SimulationResult r = run(kind, p, m);
        EXPECT_NEAR(r.bubble_rate(), expected, kExact) << schedule_name(r.spec) << " p=" << p << " m=" << m;
        EXPECT_NEAR(r.bubble_rate(), theoretical_bubble_rate(r.spec, r.costs), kExact);
        EXPECT_DOUBLE_EQ(r.makespan, (m + p - 1) * 3.0);  // F = 1, B = I + W = 2
      }
    }
  }
}

TEST(Simulator, OneFOneBHoldsAtMostPActivationsGPipeHoldsM) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 32; ++m) {
      SimulationResult one_f_one_b = run(ScheduleKind::k1F1B, p, m);
      SimulationResult gpipe = run(ScheduleKind::kGPipe, p, m);
      EXPECT_LE(one_f_one_b.peak_in_flight(), p);
      EXPECT_EQ(one_f_one_b.peak_in_flight(), std::min(p, m));
      for (int s = 0; s < p; ++s)
        EXPECT_EQ(one_f_one_b.stages[static_cast<std::size_t>(s)].peak_in_flight, std::min(p - s, m));
      EXPECT_EQ(gpipe.peak_in_flight(), m);
    }
  }
}

TEST(Simulator, InterleavedDividesTheBubbleTimeByV) {
  for (int p = 2; p <= 8; ++p) {
    for (int m : {p, 2 * p, 4 * p}) {
      const double one_f_one_b_idle = run(ScheduleKind::k1F1B, p, m).total_idle();
      for (int v = 2; v <= 4; ++v) {
        SimulationResult r = run(ScheduleKind::kInterleaved1F1B, p, m, v);
        EXPECT_NEAR(r.total_idle(), one_f_one_b_idle / v, 1e-9) << "p=" << p << " m=" << m << " v=" << v;
        EXPECT_NEAR(r.bubble_rate(), theoretical_bubble_rate(r.spec, r.costs), 1e-9);
      }
    }
  }
}

TEST(Simulator, ZeroBubbleH1IsAThirdOfOneFOneBWithTheSamePeakMemory) {
  // F = I = W = 1: ZB-H1 idles (p-1) per stage, 1F1B (p-1)(F+I+W) = 3(p-1).
  for (int p = 2; p <= 8; ++p) {
    for (int m = p; m <= 32; ++m) {
      SimulationResult zb = run(ScheduleKind::kZeroBubbleH1, p, m);
      SimulationResult base = run(ScheduleKind::k1F1B, p, m);
      EXPECT_DOUBLE_EQ(zb.makespan, 3.0 * m + (p - 1)) << "p=" << p << " m=" << m;
      EXPECT_NEAR(zb.total_idle(), base.total_idle() / 3, 1e-9) << "p=" << p << " m=" << m;
      EXPECT_EQ(zb.peak_in_flight(), base.peak_in_flight());
      EXPECT_NEAR(zb.bubble_rate(), theoretical_bubble_rate(zb.spec, zb.costs), kExact);
    }
  }
}

TEST(Simulator, ZeroBubbleH1NeverWorseThanOneFOneBForFewMicrobatches) {
  for (int p = 2; p <= 8; ++p) {
    for (int m = 1; m < p; ++m) {
      EXPECT_LE(run(ScheduleKind::kZeroBubbleH1, p, m).makespan, run(ScheduleKind::k1F1B, p, m).makespan);
    }
  }
}

TEST(Simulator, TransferTimeDelaysTheDependentStage) {
  // p = 2, m = 1, P2P c = 0.25: F0 on stage 0 [0,1], arrives 1.25, F0 on stage 1 [1.25,2.25],
  // B0 there [2.25,4.25], gradient arrives 4.5, B0 on stage 0 [4.5,6.5].
  SimulationResult r = run(ScheduleKind::k1F1B, 2, 1, 1, {1, 1, 1, 0.25});
  EXPECT_DOUBLE_EQ(r.makespan, 6.5);
  EXPECT_DOUBLE_EQ(r.stages[0].busy, 3);
  EXPECT_DOUBLE_EQ(r.stages[0].idle, 3.5);
  EXPECT_DOUBLE_EQ(r.stages[1].idle, 3.5);
}

TEST(Simulator, ChunkActionsCostAFractionOfTheStage) {
  SimulationResult r = run(ScheduleKind::kInterleaved1F1B, 1, 2, 4, {2, 1, 1, 0});
  EXPECT_DOUBLE_EQ(r.makespan, 2 * (2 + 2));  // one stage: no bubble, m * (F + B)
  EXPECT_DOUBLE_EQ(r.bubble_rate(), 0);
}

TEST(Simulator, RejectsBadCosts) {
  Schedule s = make_schedule({ScheduleKind::k1F1B, 2, 2, 1});
  EXPECT_THROW(simulate(s, {-1, 1, 1, 0}), InvalidArgument);
  try {
    simulate(s, {1, 1, 1, std::nan("")});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cost p2p must be a finite number >= 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::parallel
