#include "braid/tools/braid_run/cpu_binding.h"

#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "braid/tools/braid_run/launcher_options.h"
#include "parse_helpers.h"

namespace braid::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(CpuBinding, CoreGivesLocalRankIThatRanksIthAllowedCpu) {
  // The mask need not start at 0 nor be contiguous (taskset -c 2,5,7).
  EXPECT_THAT(cpu_binding(BindPolicy::kCore, 3, {2, 5, 7}), ElementsAre(2, 5, 7));
  EXPECT_THAT(cpu_binding(BindPolicy::kCore, 2, {2, 5, 7}), ElementsAre(2, 5));
}

TEST(CpuBinding, CoreWrapsAroundWhenRanksOutnumberCpus) {
  EXPECT_THAT(cpu_binding(BindPolicy::kCore, 5, {0, 1}), ElementsAre(0, 1, 0, 1, 0));
}

TEST(CpuBinding, AutoBindsOnlyWhenRanksFit) {
  EXPECT_THAT(cpu_binding(BindPolicy::kAuto, 2, {0, 1}), ElementsAre(0, 1));
  EXPECT_THAT(cpu_binding(BindPolicy::kAuto, 3, {0, 1}), IsEmpty());
}

TEST(CpuBinding, NoneAndUnknownMaskBindNothing) {
  EXPECT_THAT(cpu_binding(BindPolicy::kNone, 2, {0, 1}), IsEmpty());
  EXPECT_THAT(cpu_binding(BindPolicy::kCore, 2, {}), IsEmpty());
}

// Only a binding that gives every rank a CPU of its own lets braid-run tell the ranks so.
TEST(CpuBinding, EachRankAloneOnItsCpuOnlyWithoutWrapping) {
  EXPECT_TRUE(each_rank_alone_on_its_cpu(cpu_binding(BindPolicy::kAuto, 2, {0, 1})));
  EXPECT_TRUE(each_rank_alone_on_its_cpu({7, 2, 5}));
  EXPECT_FALSE(each_rank_alone_on_its_cpu(cpu_binding(BindPolicy::kCore, 3, {0, 1})));  // 0, 1, 0
  EXPECT_FALSE(each_rank_alone_on_its_cpu({}));  // unbound
}

TEST(CpuBinding, ThisProcessHasAtLeastOneAllowedCpu) {
  std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  for (std::size_t i = 1; i < cpus.size(); ++i) EXPECT_LT(cpus[i - 1], cpus[i]);
}

TEST(CpuBinding, BindToFlag) {
  EXPECT_EQ(parse_ok({"-n", "2", "prog"}).bind, BindPolicy::kAuto);
  EXPECT_EQ(parse_ok({"-n", "2", "--bind-to", "none", "prog"}).bind, BindPolicy::kNone);
  EXPECT_EQ(parse_ok({"-n", "2", "--bind-to", "core", "prog"}).bind, BindPolicy::kCore);
  EXPECT_THAT(parse_error({"-n", "2", "--bind-to", "socket", "prog"}), HasSubstr("--bind-to must be none, core or auto, got 'socket'"));
  for (BindPolicy p : {BindPolicy::kNone, BindPolicy::kCore, BindPolicy::kAuto}) {
    EXPECT_EQ(parse_bind_policy(bind_policy_name(p)), p);
  }
}

}  // namespace
}  // namespace braid::launcher
