#include "braid/torch/storage_pool.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

// A tensor whose StorageImpl holds nothing, as FullyShardedModule keeps a freed unit's buffer.
::torch::Tensor empty_tensor(std::int64_t floats) {
  ::torch::Tensor t = ::torch::zeros({floats});
  t.storage().unsafeGetStorageImpl()->set_data_ptr_noswap(at::DataPtr(nullptr, t.device()));
  t.storage().unsafeGetStorageImpl()->set_nbytes(0);
  return t;
}

// Fill and drain cycles reuse the same buffers (no fresh pages per gather), a drained storage
// holds no byte, and no more than `keep` idle buffers outlive a drain.
TEST(StoragePoolTest, ReusesBuffersKeepsAtMostKeepIdleAndLeavesDrainedStoragesEmpty) {
  StoragePool pool(400, 2);
  ::torch::Tensor a = empty_tensor(100), b = empty_tensor(60), c = empty_tensor(10);
  pool.fill(a);
  EXPECT_EQ(a.storage().nbytes(), 400u);
  a.fill_(1.0f);  // usable memory
  void* first = a.data_ptr();
  pool.drain(a);
  EXPECT_EQ(a.storage().nbytes(), 0u);
  EXPECT_EQ(a.storage().data(), nullptr);
  pool.fill(b);
  EXPECT_EQ(b.data_ptr(), first) << "the idle buffer was not reused";
  EXPECT_EQ(b.storage().nbytes(), 240u);
  pool.fill(a);
  pool.fill(c);
  EXPECT_EQ(pool.held_bytes(), 3 * 400);
  pool.drain(a);
  pool.drain(b);
  pool.drain(c);  // a third idle buffer is freed
  EXPECT_EQ(pool.held_bytes(), 2 * 400);
  pool.drain(c);  // draining an empty storage is a no-op
  EXPECT_EQ(pool.held_bytes(), 2 * 400);
  EXPECT_THROW(pool.fill(empty_tensor(101)), InvalidArgument);
}

}  // namespace
}  // namespace braid::torch
