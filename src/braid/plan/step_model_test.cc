// The step-time model, layout validation, the rules and the advisor.
#include "braid/plan/step_model.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/plan/advisor.h"
#include "braid/plan/rules.h"

namespace braid::plan {
namespace {

double value(const Estimates& list, const std::string& name) { return find_estimate(list, name).value; }

std::string error_of(const ModelSpec& m, const ClusterSpec& c, const Layout& l) {
  try {
    validate_layout(m, c, l);
  } catch (const InvalidArgument& e) {
    return e.detail();
  }
  return "";
}

bool has_rule(const std::vector<Finding>& findings, const std::string& rule) {
  return std::any_of(findings.begin(), findings.end(), [&](const Finding& f) { return f.rule == rule; });
}

TEST(StepModelTest, LayoutValidationNamesTheField) {
  const ModelSpec m = model_preset("llama-7b");
  const ClusterSpec c{.nodes = 1, .devices_per_node = 8};
  EXPECT_EQ(error_of(m, c, {.dp = 8}), "");
  EXPECT_NE(error_of(m, c, {.dp = 4}).find("dp x tp x pp = 4 x 1 x 1 = 4 must equal the cluster's 8"),
            std::string::npos);
  EXPECT_NE(error_of(m, ClusterSpec{.nodes = 1, .devices_per_node = 6}, {.dp = 2, .tp = 3}).find("tp = 3 must divide heads = 32"),
            std::string::npos);
  EXPECT_NE(error_of(m, ClusterSpec{.nodes = 8, .devices_per_node = 8}, {.dp = 1, .tp = 1, .pp = 64}).find("pp = 64"),
            std::string::npos);
  EXPECT_NE(error_of(m, c, {.dp = 8, .zero = 4}).find("zero = 4 is out of range [0, 3]"), std::string::npos);
  EXPECT_NE(error_of(m, c, {.dp = 2, .pp = 4, .microbatches = 6, .chunks = 2, .schedule = Schedule::kInterleaved1F1B})
                .find("multiple of pp"),
            std::string::npos);
}

TEST(StepModelTest, SevenBillionOnEightGpus) {
  const ModelSpec m = model_preset("llama-7b");
  const ClusterSpec c{.nodes = 1, .devices_per_node = 8};
  // Plain DP keeps 16 Phi = 108 GB per device: does not fit in 80 GiB; ZeRO-3 does.
  StepEstimate dp = estimate_step(m, c, {.dp = 8, .microbatches = 4});
  EXPECT_FALSE(dp.fits);
  EXPECT_NEAR(value(dp.items, "model_state_bytes"), 16 * m.params(), 1);
  StepEstimate z3 = estimate_step(m, c, {.dp = 8, .zero = 3, .microbatches = 4, .recompute = Recompute::kFull});
  EXPECT_TRUE(z3.fits);
  EXPECT_GT(z3.mfu, 0.05);
  EXPECT_LE(z3.mfu, c.efficiency);  // never above the efficiency it was given
  // The step is at least the compute of m micro-batches and at most all terms summed.
  const double compute = value(z3.items, "compute_seconds_per_microbatch") * 4;
  EXPECT_GE(z3.step_seconds, compute);
  EXPECT_LE(z3.step_seconds, compute + value(z3.items, "dp_seconds") + 1e-12);
  EXPECT_DOUBLE_EQ(z3.tokens_per_second, 8 * 4 * 2048 / z3.step_seconds);
}

TEST(StepModelTest, PipelineAddsTheBubbleAndTpCrossingNodesIsSlow) {
  const ModelSpec m = model_preset("llama-70b");
  const ClusterSpec c{.nodes = 4, .devices_per_node = 8};
  StepEstimate pp = estimate_step(m, c, {.dp = 1, .tp = 8, .pp = 4, .microbatches = 8, .sequence_parallel = true});
  EXPECT_DOUBLE_EQ(value(pp.items, "bubble_fraction"), 3.0 / 11);
  EXPECT_GT(value(pp.items, "pp_seconds_per_microbatch"), 0);
  StepEstimate inside = estimate_step(m, c, {.dp = 2, .tp = 8, .pp = 2, .microbatches = 16});
  StepEstimate across = estimate_step(m, c, {.dp = 2, .tp = 16, .pp = 1, .microbatches = 16});
  EXPECT_GT(value(across.items, "tp_seconds_per_microbatch"), 2 * value(inside.items, "tp_seconds_per_microbatch"));
  EXPECT_TRUE(has_rule(check_rules(m, c, across), "tp-inside-node"));
  EXPECT_FALSE(has_rule(check_rules(m, c, inside), "tp-inside-node"));
}

TEST(StepModelTest, RulesExplainThemselves) {
  const ModelSpec m = model_preset("llama-13b");
  const ClusterSpec c{.nodes = 2, .devices_per_node = 8, .inter = link_preset("eth-10g")};
  StepEstimate s = estimate_step(m, c, {.dp = 4, .tp = 1, .pp = 4, .microbatches = 4,
                                        .compression = parse_compression("topk:0.2")});
  std::vector<Finding> f = check_rules(m, c, s);
  EXPECT_TRUE(has_rule(f, "pp-microbatches"));      // p = 4 > m/2 = 2
  EXPECT_TRUE(has_rule(f, "compression-schedule"));  // compress early, stop late
  EXPECT_TRUE(has_rule(f, "topk-scaling"));          // 8 R dp = 6.4 > 2 x 2 bytes
  EXPECT_TRUE(has_rule(f, "fits-in-memory"));        // 52 GB of model states + 48 GB of activations
  for (const Finding& finding : f) EXPECT_FALSE(finding.message.empty()) << finding.rule;
}

TEST(StepModelTest, AdvisorRanksFittingLayoutsFirst) {
  AdviseInput in{.model = model_preset("llama-70b"), .cluster = {.nodes = 8, .devices_per_node = 8},
                 .global_batch = 256};
  std::vector<Candidate> all = advise(in);
  ASSERT_FALSE(all.empty());
  ASSERT_TRUE(all.front().step.fits);
  // Fitting first, those within 90% of the memory before the tight ones, then by step time.
  const double roomy = 0.9 * in.cluster.memory;
  for (std::size_t i = 1; i < all.size(); ++i) {
    const Candidate& a = all[i - 1];
    const Candidate& b = all[i];
    if (b.step.fits) {
      EXPECT_TRUE(a.step.fits);
    }
    if (a.step.fits == b.step.fits && (a.step.memory_bytes <= roomy) == (b.step.memory_bytes <= roomy)) {
      EXPECT_LE(a.step.step_seconds, b.step.step_seconds) << i;
    }
  }
  // 70B fits nowhere with plain DP (16 Phi = 1.1 TB per device).
  for (const Candidate& c : all) {
    if (c.step.layout.dp == 64 && c.step.layout.zero == 0) {
      EXPECT_FALSE(c.step.fits);
    }
  }
  // The best layout keeps TP inside a node.
  EXPECT_LE(all.front().step.layout.tp, 8);
  EXPECT_THROW(advise({.model = model_preset("llama-7b"), .cluster = {.nodes = 1, .devices_per_node = 8},
                       .global_batch = 3, .micro_batch = 2}),
               InvalidArgument);
}

}  // namespace
}  // namespace braid::plan
