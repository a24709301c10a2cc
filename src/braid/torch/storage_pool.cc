#include "braid/torch/storage_pool.h"

#include <c10/core/CPUAllocator.h>

#include "braid/base/check.h"
#include "braid/base/error.h"

namespace braid::torch {

void StoragePool::fill(const ::torch::Tensor& tensor) {
  auto bytes = static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
  BRAID_CHECK(bytes <= buffer_bytes_, InvalidArgument, {.op = "StoragePool"}, "{} bytes do not fit buffers of {}",
              bytes, buffer_bytes_);
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  at::DataPtr buffer;
  if (idle_.empty()) {
    buffer = c10::GetCPUAllocator()->allocate(buffer_bytes_);
  } else {
    buffer = std::move(idle_.back());
    idle_.pop_back();
  }
  storage->set_data_ptr_noswap(std::move(buffer));
  storage->set_nbytes(bytes);
  ++lent_;
}

void StoragePool::drain(const ::torch::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  if (storage->data() == nullptr) return;
  at::DataPtr buffer = storage->set_data_ptr(at::DataPtr(nullptr, tensor.device()));
  storage->set_nbytes(0);
  --lent_;
  if (idle_.size() < keep_) idle_.push_back(std::move(buffer));  // else freed here, with `buffer`
}

}  // namespace braid::torch
