// Which BLAS LibTorch's CPU matmuls run on, and its thread count. Debian's LibTorch links the
// generic libblas.so.3, which the alternatives system points at OpenBLAS or at the reference
// BLAS; the reference one is ~20x slower on these models (scripts/setup.sh selects OpenBLAS).
// Looked up at run time (dlsym), so braid-train links no BLAS itself. Torch-free.
#pragma once

#include <string>

namespace braid::train {

// "OpenBLAS 0.3.21 ...", plus how its core was chosen and a warning (with the fix) when it is
// far below the CPU's; or "not OpenBLAS (reference BLAS?)".
std::string blas_description();
bool blas_is_openblas();
// OpenBLAS's core ("SkylakeX", "Prescott", ...); "" for another BLAS.
std::string blas_core();
// Sets OpenBLAS's thread count (no-op for another BLAS): one per rank by default, since ranks
// share the cores.
void set_blas_threads(int threads);

// Called first in main, before any thread or socket exists. When OpenBLAS runs a core narrower
// than this CPU supports (blas_core_choice.h) and the user did not choose one
// (OPENBLAS_CORETYPE), re-executes this program (/proc/self/exe, same argv, same pid, so
// braid-run still knows its rank) with OPENBLAS_CORETYPE set: OpenBLAS reads it in its load-time
// constructor, too late for this process. BRAID_BLAS_RESTARTED keeps it to one restart. Returns
// when there is nothing better, or exec failed (then blas_description() warns).
void restart_with_better_blas_core(char** argv);
// The core restart_with_better_blas_core would choose in this process ("" when OpenBLAS's own
// choice stands): what a caller that starts braid-train many times can put in
// OPENBLAS_CORETYPE up front, so that no rank loads LibTorch twice (the test fixtures do).
std::string better_blas_core_for_this_cpu();

}  // namespace braid::train
