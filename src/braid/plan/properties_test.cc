// Properties the formulas must have whatever the numbers: (n-1)/n scaling, the bubble falling
// with m, ZeRO-3 memory ~ 1/N, more recomputation meaning less memory.
#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/plan/bubble.h"
#include "braid/plan/comm_volume.h"
#include "braid/plan/kv_cache.h"
#include "braid/plan/memory.h"

namespace braid::plan {
namespace {

double value(const Estimates& list, const std::string& name) { return find_estimate(list, name).value; }

TEST(PropertiesTest, RingVolumesScaleAsNMinusOneOverN) {
  const double s = 1e9;
  double previous = -1;
  for (int n = 1; n <= 64; ++n) {
    const double share = (n - 1.0) / n;
    EXPECT_DOUBLE_EQ(ring_reduce_scatter_bytes(s, n).value, share * s);
    EXPECT_DOUBLE_EQ(ring_allgather_bytes(s, n).value, share * s);
    EXPECT_DOUBLE_EQ(ring_allreduce_bytes(s, n).value,
                     ring_reduce_scatter_bytes(s, n).value + ring_allgather_bytes(s, n).value);
    const double dp = dp_allreduce_bytes(1e9, 2, n).value;
    EXPECT_GT(dp, previous);  // grows with n ...
    EXPECT_LT(dp, 4e9);       // ... towards 2 Phi b, never past it
    previous = dp;
  }
}

TEST(PropertiesTest, BubbleFallsWithMicrobatches) {
  for (Schedule schedule : all_pipeline_schedule_kinds()) {
    for (int p : {2, 4, 8, 16}) {
      double previous = 1;
      for (int m = p; m <= 64 * p; m += p) {
        const double b = bubble_fraction(schedule, {.stages = p, .microbatches = m, .chunks = 2});
        EXPECT_LT(b, previous) << pipeline_schedule_kind_name(schedule) << " p=" << p << " m=" << m;
        EXPECT_GT(b, 0);
        previous = b;
      }
    }
  }
}

TEST(PropertiesTest, BubbleOrderingOfSchedules) {
  for (int p : {2, 4, 8}) {
    BubbleInput in{.stages = p, .microbatches = 2 * p, .chunks = 2};
    const double one = bubble_fraction(Schedule::k1F1B, in);
    EXPECT_DOUBLE_EQ(bubble_fraction(Schedule::kGPipe, in), one);
    EXPECT_LT(bubble_fraction(Schedule::kInterleaved1F1B, in), one);
    EXPECT_LT(bubble_fraction(Schedule::kZeroBubbleH1, in), one);
  }
}

TEST(PropertiesTest, ZeroThreeMemoryIsOneOverN) {
  const double phi = 7.5e9;
  for (int n : {1, 2, 8, 64, 1024}) {
    const double per_device = value(model_state_memory({.params = phi, .dp = n, .zero = 3}), "model_state_bytes");
    EXPECT_DOUBLE_EQ(per_device * n, 16 * phi) << n;
  }
}

// The ZeRO paper's figure 1: 7.5B parameters on 64 GPUs: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB.
TEST(PropertiesTest, ZeroStagesMatchThePaper) {
  const double phi = 7.5e9;
  auto total = [&](int zero) {
    return value(model_state_memory({.params = phi, .dp = 64, .zero = zero}), "model_state_bytes");
  };
  EXPECT_DOUBLE_EQ(total(0), 120e9);
  EXPECT_NEAR(total(1), 31.4e9, 0.05e9);
  EXPECT_NEAR(total(2), 16.6e9, 0.05e9);
  EXPECT_NEAR(total(3), 1.875e9, 1e6);
  EXPECT_GT(total(0), total(1));
  EXPECT_GT(total(1), total(2));
  EXPECT_GT(total(2), total(3));
}

TEST(PropertiesTest, TensorAndPipelineSplitModelStates) {
  const double whole = value(model_state_memory({.params = 1e9}), "model_state_bytes");
  EXPECT_DOUBLE_EQ(value(model_state_memory({.params = 1e9, .tp = 4, .pp = 2}), "model_state_bytes"), whole / 8);
}

TEST(PropertiesTest, RecomputationAndSequenceParallelismSaveMemory) {
  ActivationInput in{.seq = 2048, .micro_batch = 1, .hidden = 8192, .heads = 64, .layers = 80, .tp = 8, .pp = 4,
                     .microbatches = 16};
  auto bytes = [&](Recompute r, bool sp) {
    ActivationInput x = in;
    x.recompute = r, x.sequence_parallel = sp;
    return value(activation_memory(x), "activation_bytes");
  };
  EXPECT_GT(bytes(Recompute::kNone, false), bytes(Recompute::kSelective, false));
  EXPECT_GT(bytes(Recompute::kSelective, false), bytes(Recompute::kFull, false));
  EXPECT_GT(bytes(Recompute::kNone, false), bytes(Recompute::kNone, true));
  EXPECT_DOUBLE_EQ(bytes(Recompute::kFull, true) * 8, bytes(Recompute::kFull, false));
  // 1F1B's first stage holds p micro-batches of L/p layers: L layers' worth, whatever p is.
  const double per_layer = value(activation_memory(in), "activation_bytes_per_layer");
  EXPECT_DOUBLE_EQ(value(activation_memory(in), "activation_bytes"), per_layer * 80);
  in.schedule = Schedule::kGPipe;
  EXPECT_DOUBLE_EQ(value(activation_memory(in), "activation_bytes"), per_layer * 20 * 16);
}

TEST(PropertiesTest, PagedWasteIsBelowOneBlock) {
  for (int block : {1, 8, 16, 32}) {
    for (int t = 1; t < 200; ++t) {
      Estimates kv = kv_cache({.tokens = static_cast<double>(t), .block_size = block});
      const double waste = value(kv, "kv_waste_slots");
      EXPECT_GE(waste, 0);
      EXPECT_LT(waste, block);
      EXPECT_DOUBLE_EQ(value(kv, "kv_blocks") * block, t + waste);
    }
  }
}

TEST(PropertiesTest, BadShapesAreRejected) {
  EXPECT_THROW(ring_allreduce_bytes(-1, 4), InvalidArgument);
  EXPECT_THROW(ring_allreduce_bytes(1, 0), InvalidArgument);
  EXPECT_THROW(zero_bytes(4, 1e9, 2, 8, 1), InvalidArgument);
  EXPECT_THROW(bubble_fraction(Schedule::k1F1B, {.stages = 0, .microbatches = 4}), InvalidArgument);
  EXPECT_THROW(bubble_fraction(Schedule::kInterleaved1F1B, {.stages = 4, .microbatches = 6, .chunks = 2}), InvalidArgument);
  EXPECT_THROW(kv_cache({.kv_heads = 8, .tp = 3}), InvalidArgument);
  EXPECT_THROW(activation_memory({.layers = 4, .pp = 8}), InvalidArgument);
}

}  // namespace
}  // namespace braid::plan
