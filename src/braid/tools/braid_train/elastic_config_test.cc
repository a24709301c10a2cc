// Which flags braid-train --elastic refuses (elastic_config.h), and that validate() does so.
#include "braid/tools/braid_train/elastic_config.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::train {
namespace {

TrainConfig elastic(void (*change)(TrainConfig&)) {
  TrainConfig c;
  c.elastic = true;
  change(c);
  return c;
}

TEST(ElasticConfig, PlainDdpIsAccepted) {
  EXPECT_EQ(elastic_refusal(elastic([](TrainConfig&) {})), "");
  EXPECT_EQ(elastic_refusal(elastic([](TrainConfig& c) { c.optimizer = "adam"; c.clip_grad = 1; c.model = "gpt"; })), "");
}

TEST(ElasticConfig, EveryModeWithStateOnlyTheLostRankHeldIsRefusedNamingWhy) {
  struct Case {
    void (*change)(TrainConfig&);
    const char* says;
  };
  const Case cases[] = {
      {[](TrainConfig& c) { c.model = "gpt"; c.tp = 2; }, "data-parallel trainer only"},
      {[](TrainConfig& c) { c.pp = 2; }, "data-parallel trainer only"},
      {[](TrainConfig& c) { c.model = "gpt"; c.dropout = 0.1; }, "data-parallel trainer only"},
      {[](TrainConfig& c) { c.model = "moe-gpt"; }, "--model moe-gpt: its experts are sharded"},
      {[](TrainConfig& c) { c.zero = 1; }, "--zero 1: ZeRO shards the optimizer state"},
      {[](TrainConfig& c) { c.zero = 3; }, "--zero 3: ZeRO shards"},
      {[](TrainConfig& c) { c.compress = "int8"; }, "--compress int8: the codecs' error-feedback residuals"},
      {[](TrainConfig& c) { c.precision = "bf16"; }, "--precision bf16: the loss scale"},
      {[](TrainConfig& c) { c.accumulate = 2; }, "uneven micro-batches"},
      {[](TrainConfig& c) { c.checkpoint_dir = "/tmp/x"; }, "--checkpoint-dir / --resume"},
      {[](TrainConfig& c) { c.trace_dir = "/tmp/x"; }, "--trace"},
  };
  for (const Case& k : cases) {
    TrainConfig c = elastic(k.change);
    EXPECT_NE(elastic_refusal(c).find(k.says), std::string::npos) << elastic_refusal(c);
    try {
      validate(c, 4);
      ADD_FAILURE() << "validate accepted: " << k.says;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("braid-train --elastic"), std::string::npos) << e.what();
    }
  }
  // Without --elastic the same modes are none of its business.
  TrainConfig zero;
  zero.zero = 1;
  EXPECT_NO_THROW(validate(zero, 4));
}

}  // namespace
}  // namespace braid::train
