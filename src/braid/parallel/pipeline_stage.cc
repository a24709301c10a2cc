#include "braid/parallel/pipeline_stage.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "braid/base/error.h"

namespace braid::parallel {

std::int64_t element_count(std::span<const std::int64_t> shape) {
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw InvalidArgument({}, fmt::format("tensor shape {} has a negative dimension", shape_string(shape)));
    count *= d;
  }
  return count;
}

std::string shape_string(std::span<const std::int64_t> shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace braid::parallel
