// The target that owns the executables' precompiled <torch/torch.h> (cmake/braid_torch_pch.cmake):
// it has no compile definitions of its own, so every torch executable can reuse its header (gcc
// refuses a header precompiled with a macro the user does not define). Never run.
int main() { return 0; }
