#include "braid/tools/braid_train/blas_runtime.h"

#include <dlfcn.h>

namespace braid::train {
namespace {

template <typename Fn>
Fn find(const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, symbol));
}

}  // namespace

bool blas_is_openblas() { return find<char* (*)()>("openblas_get_config") != nullptr; }

std::string blas_description() {
  auto config = find<char* (*)()>("openblas_get_config");
  if (config == nullptr) return "not OpenBLAS (the reference BLAS is ~20x slower: run scripts/setup.sh)";
  return config();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Zen MAX_THREADS=64"
}

void set_blas_threads(int threads) {
  if (auto set = find<void (*)(int)>("openblas_set_num_threads")) set(threads);
}

}  // namespace braid::train
