#include "braid/python/staging.h"

namespace braid::python {

at::Tensor concatenated(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

at::Tensor flat_like(const at::Tensor& like, std::int64_t count) { return at::empty({count}, like.options()); }

void scatter_back(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  std::int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    const std::int64_t n = t.numel();
    at::Tensor(t).copy_(flat.narrow(0, offset, n).view(t.sizes()));
    offset += n;
  }
}

}  // namespace braid::python
