// Smoke test of an installed braid: the headers are found under <prefix>/include/braid/, the
// static libraries and their dependencies (fmt, ISA-L, Threads) link, and an exception thrown
// inside the library is caught by its type in the user's code.
#include <cstdio>
#include <string_view>

#include "braid/base/dtype.h"
#include "braid/base/error.h"

int main() {
  // parse_dtype lives in libbraid_base.a, so this also proves the archive was linked.
  if (braid::parse_dtype("bf16") != braid::DType::kBF16) {
    std::fprintf(stderr, "parse_dtype(\"bf16\") did not return DType::kBF16\n");
    return 1;
  }
  try {
    braid::throw_error(braid::ErrorKind::kInvalidArgument, braid::ErrorContext{.rank = 0, .op = "consumer"},
                       "thrown on purpose");
  } catch (const braid::InvalidArgument& e) {
    std::printf("caught braid::InvalidArgument: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "caught the wrong exception type: %s\n", e.what());
    return 1;
  }
  const std::string_view name = braid::dtype_name(braid::DType::kBF16);
  std::printf("dtype_name(DType::kBF16) = %.*s\n", static_cast<int>(name.size()), name.data());
  std::printf("braid consumer OK\n");
  return 0;
}
