// The target that owns the test executables' precompiled GoogleTest headers
// (cmake/braid_gtest_pch.cmake). Never run.
int main() { return 0; }
