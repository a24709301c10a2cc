// LD_PRELOADed by train_test: makes this machine look like one whose OpenBLAS does not know
// the CPU (Debian's 0.3.21 on Intel family 6 model 207 picks its Prescott kernels). Only the
// name OpenBLAS reports changes: when OPENBLAS_CORETYPE is unset it says "Prescott", otherwise
// the real OpenBLAS answers (so a restart with the variable set sees the core it asked for).
#include <dlfcn.h>

#include <cstdlib>

extern "C" char* openblas_get_corename() {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  static char prescott[] = "Prescott";
  if (forced == nullptr || *forced == '\0') return prescott;
  auto real = reinterpret_cast<char* (*)()>(dlsym(RTLD_NEXT, "openblas_get_corename"));
  return real != nullptr ? real() : prescott;
}
