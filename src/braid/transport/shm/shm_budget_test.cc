#include "braid/transport/shm/shm_budget.h"

#include <cstdint>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "braid/transport/shm/shm_layout.h"

namespace braid::shm {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kGiB = 1ull << 30;

TEST(ShmBudget, HalfOfTheSmallerOfShmAndMemory) {
  EXPECT_EQ(shm_budget({.shm_free_bytes = 24 * kGiB, .memory_available_bytes = 20 * kGiB}), 10 * kGiB);
  EXPECT_EQ(shm_budget({.shm_free_bytes = 2 * kGiB, .memory_available_bytes = 20 * kGiB}), 1 * kGiB);
}

TEST(ShmBudget, ProductsSaturateInsteadOfWrapping) {
  EXPECT_EQ(saturating_product(16, kGiB), 16 * kGiB);
  EXPECT_EQ(saturating_product(1ull << 40, 1ull << 40), std::numeric_limits<std::uint64_t>::max());
}

// The ring geometry of the issue: 1 TiB rings, 4 ranks on a host with 24 GiB of /dev/shm.
TEST(ShmBudget, OneTebibyteRingsAreRefusedWithTheArithmetic) {
  const std::uint64_t ring = 1ull << 40;
  const SegmentLayout layout{.slots = 4, .ring_bytes = ring};
  const ShmDemand demand{.variable = "BRAID_SHM_RING_BYTES", .value = static_cast<long long>(ring),
                         .total = saturating_product(4, layout.total_bytes()), .how = "4 ranks x 4 rings"};
  const MachineMemory machine{.shm_free_bytes = 24 * kGiB, .memory_available_bytes = 20 * kGiB};
  std::string problem = check_shm_demand(demand, shm_budget(machine), machine);
  EXPECT_THAT(problem, HasSubstr("BRAID_SHM_RING_BYTES=1099511627776 needs"));
  EXPECT_THAT(problem, HasSubstr("16384.0 GiB"));
  EXPECT_THAT(problem, HasSubstr("limit of 10737418240 bytes"));
  EXPECT_THAT(problem, HasSubstr("4 ranks x 4 rings"));
}

TEST(ShmBudget, TheDefaultGeometryFitsASmallMachine) {
  const SegmentLayout layout{.slots = 8, .ring_bytes = 512 << 10};
  const ShmDemand demand{.variable = "BRAID_SHM_RING_BYTES", .value = 512 << 10,
                         .total = saturating_product(8, layout.total_bytes()), .how = "8 ranks x 8 rings"};
  const MachineMemory machine{.shm_free_bytes = 1 * kGiB, .memory_available_bytes = 1 * kGiB};
  EXPECT_EQ(check_shm_demand(demand, shm_budget(machine), machine), "");
}

TEST(ShmBudget, UnknownFiguresBoundNothing) {
  const MachineMemory machine{.shm_free_bytes = std::numeric_limits<std::uint64_t>::max(),
                              .memory_available_bytes = 8 * kGiB};
  EXPECT_EQ(shm_budget(machine), 4 * kGiB);
  EXPECT_GT(probe_machine_memory().shm_free_bytes, 0u);
}

}  // namespace
}  // namespace braid::shm
