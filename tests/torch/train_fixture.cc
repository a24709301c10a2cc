#include "train_fixture.h"

#include <torch/torch.h>

#include <cstdlib>

#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/models.h"

namespace braid::testing {
namespace {

// Where OpenBLAS picks a core far below the CPU's (this VM: Prescott on an AVX-512 Xeon),
// every braid-train rank restarts itself once (blas_runtime.h), loading LibTorch twice: about
// 0.45 s of CPU each time, a third of a short 4-rank test run's wall time on two cores. The
// tests choose that core up front, as a user may with OPENBLAS_CORETYPE, so each rank loads
// once and computes with the same kernels. The restart keeps its own test
// (TrainTest.ABlasCoreFarBelowTheCpusIsReplacedUnlessTheUserChoseIt clears the variable).
class BlasCoreUpFront : public ::testing::Environment {
 public:
  void SetUp() override {
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the caller's choice
    std::string better = braid::train::better_blas_core_for_this_cpu();
    if (!better.empty()) ::setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
  }
};
[[maybe_unused]] ::testing::Environment* const blas_core_up_front =
    ::testing::AddGlobalTestEnvironment(new BlasCoreUpFront);

}  // namespace

std::vector<float> exported_parameters(const std::string& model, const std::string& file) {
  std::shared_ptr<braid::train::TrainModel> m = braid::train::make_model({.name = model, .vocab = 0, .context = 0});
  auto as_module = std::static_pointer_cast<::torch::nn::Module>(m);
  ::torch::load(as_module, file);
  std::vector<float> flat;
  for (const ::torch::Tensor& p : m->parameters()) {
    ::torch::Tensor c = p.detach().contiguous();
    flat.insert(flat.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return flat;
}

void damage(const std::string& file, std::uintmax_t offset, std::size_t count, std::uint8_t mask) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(io) << file;
  std::vector<char> bytes(count);
  io.seekg(static_cast<std::streamoff>(offset));
  io.read(bytes.data(), static_cast<std::streamsize>(count));
  for (char& b : bytes) b = static_cast<char>(mask != 0 ? (b ^ mask) : 0xA5);
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(bytes.data(), static_cast<std::streamsize>(count));
}

}  // namespace braid::testing
