// The ring arithmetic of SendBufferPool (engine/send_buffer_pool.h), without a communicator:
// default Works are complete, so a retired loan frees at once and the offsets the ring hands
// out show its rule (next after the newest, wrap to the front, wait for the oldest).
#include "braid/engine/send_buffer_pool.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "braid/base/error.h"

namespace braid::engine {
namespace {

std::ptrdiff_t offset_of(SendBufferPool& pool, std::size_t floats, const float* base) {
  float* region = pool.acquire(floats);
  pool.attach(Work());
  return region - base;
}

TEST(SendBufferPoolTest, RegionsFollowTheNewestWrapAndRetireTheOldest) {
  SendBufferPool pool;
  pool.reset(10);
  const float* base = pool.acquire(1);  // the ring's start
  pool.reclaim_all();
  EXPECT_EQ(offset_of(pool, 4, base), 0);
  EXPECT_EQ(offset_of(pool, 4, base), 4);
  EXPECT_EQ(offset_of(pool, 4, base), 0);  // no room at 8: the oldest [0, 4) retires, wrap
  EXPECT_EQ(offset_of(pool, 3, base), 4);  // [4, 8) retires: after the newest again
  EXPECT_EQ(offset_of(pool, 3, base), 7);
  EXPECT_EQ(offset_of(pool, 10, base), 0);  // the whole ring: everything retires
  EXPECT_LE(pool.peak_lent(), 10u);
  pool.reclaim_all();
  EXPECT_EQ(offset_of(pool, 2, base), 0);
  EXPECT_EQ(pool.bytes(), 40u);
}

// Random sizes: every region lies inside the ring, and the loans alive never overlap: each
// loan is stamped with its number, and the loans the ring still holds (the last `alive`, whose
// total the ring reports) must keep their stamps when a new one is handed out.
TEST(SendBufferPoolTest, LoansNeverOverlapOrLeaveTheRing) {
  SendBufferPool pool;
  pool.reset(1000);
  const float* base = pool.acquire(1);
  pool.reclaim_all();
  std::mt19937 rng(7);
  struct Loan {
    std::ptrdiff_t at;
    std::size_t floats;
    float stamp;
  };
  std::vector<Loan> loans;
  for (int i = 0; i < 5000; ++i) {
    std::size_t floats = 1 + rng() % 400;
    std::ptrdiff_t at = offset_of(pool, floats, base);
    ASSERT_GE(at, 0);
    ASSERT_LE(static_cast<std::size_t>(at) + floats, 1000u);
    float* region = const_cast<float*>(base) + at;
    for (std::size_t k = 0; k < floats; ++k) region[k] = static_cast<float>(i);
    loans.push_back({at, floats, static_cast<float>(i)});
    // The newest loans whose sizes add up to what the ring says is lent are the ones alive.
    std::size_t alive = 0;
    for (auto loan = loans.rbegin(); loan != loans.rend() && alive < pool.lent_floats(); ++loan) {
      alive += loan->floats;
      for (std::size_t k = 0; k < loan->floats; ++k) ASSERT_EQ(base[loan->at + static_cast<std::ptrdiff_t>(k)], loan->stamp) << "loan " << i;
    }
    ASSERT_EQ(alive, pool.lent_floats());
    ASSERT_LE(pool.peak_lent(), 1000u);
  }
}

TEST(SendBufferPoolTest, RegionsOutsideTheRingAreRefused) {
  SendBufferPool pool;
  pool.reset(8);
  EXPECT_THROW(pool.acquire(9), InvalidArgument);
  EXPECT_THROW(pool.acquire(0), InvalidArgument);
}

}  // namespace
}  // namespace braid::engine
