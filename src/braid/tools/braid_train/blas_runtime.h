// Which BLAS LibTorch's CPU matmuls run on, and its thread count. Debian's LibTorch links the
// generic libblas.so.3, which the alternatives system points at OpenBLAS or at the reference
// BLAS; the reference one is ~20x slower on these models (scripts/setup.sh selects OpenBLAS).
// Looked up at run time (dlsym), so braid-train links no BLAS itself. Torch-free.
#pragma once

#include <string>

namespace braid::train {

// "OpenBLAS 0.3.21 ..." or "not OpenBLAS (reference BLAS?)".
std::string blas_description();
bool blas_is_openblas();
// Sets OpenBLAS's thread count (no-op for another BLAS): one per rank by default, since ranks
// share the cores.
void set_blas_threads(int threads);

}  // namespace braid::train
