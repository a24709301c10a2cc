#include "braid/tools/braid_train/blas_runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/tools/braid_train/blas_core_choice.h"

namespace braid::train {
namespace {

template <typename Fn>
Fn find(const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, symbol));
}

void set(const env::Variable& var, const std::string& value) {
  ::setenv(std::string(var.name).c_str(), value.c_str(), 1);
}
void unset(const env::Variable& var) { ::unsetenv(std::string(var.name).c_str()); }

// How the running core came about, and the fix when it is too narrow for this CPU.
std::string core_note() {
  std::string core = blas_core();
  if (auto picked = env::get(env::kBlasRestarted)) {
    return fmt::format("; core {}: braid-train restarted itself with OPENBLAS_CORETYPE={} because OpenBLAS had picked "
                       "{} for this CPU",
                       core, core, *picked);
  }
  std::string better = better_blas_core(core, best_blas_core(cpu_features()));
  if (better.empty()) return "";
  if (auto chosen = env::get(env::kOpenblasCoretype)) {
    return fmt::format("; warning: core {} (OPENBLAS_CORETYPE={}, respected) is far below this CPU's {}", core,
                       *chosen, better);
  }
  return fmt::format("; warning: core {} is far below this CPU's {}: export OPENBLAS_CORETYPE={} for several times "
                     "the speed",
                     core, better, better);
}

}  // namespace

bool blas_is_openblas() { return find<char* (*)()>("openblas_get_config") != nullptr; }

std::string blas_core() {
  auto corename = find<char* (*)()>("openblas_get_corename");
  return corename != nullptr ? corename() : "";
}

std::string blas_description() {
  auto config = find<char* (*)()>("openblas_get_config");
  if (config == nullptr) return "not OpenBLAS (the reference BLAS is ~20x slower: run scripts/setup.sh)";
  return config() + core_note();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Zen MAX_THREADS=64"
}

void set_blas_threads(int threads) {
  if (auto set_threads = find<void (*)(int)>("openblas_set_num_threads")) set_threads(threads);
}

std::string better_blas_core_for_this_cpu() { return better_blas_core(blas_core(), best_blas_core(cpu_features())); }

void restart_with_better_blas_core(char** argv) {
  if (env::get(env::kOpenblasCoretype) || env::get(env::kBlasRestarted)) return;  // the user's choice, or done once
  std::string running = blas_core();
  std::string better = better_blas_core_for_this_cpu();
  if (better.empty()) return;
  set(env::kOpenblasCoretype, better);
  set(env::kBlasRestarted, running);
  ::execv("/proc/self/exe", argv);
  unset(env::kOpenblasCoretype);  // exec failed: run on, and let blas_description() warn with the fix
  unset(env::kBlasRestarted);
}

}  // namespace braid::train
