#include "braid/tools/braid_train/zero_pp.h"

#include <fmt/format.h>

#include <algorithm>

#include "braid/base/error.h"

namespace braid::train {

ZeroPlusPlus parse_zero_pp(std::string_view text, int zero_stage) {
  auto bad = [text](const std::string& detail) {
    throw InvalidArgument({.op = "braid-train --zero-pp"}, fmt::format("--zero-pp {}: {}", text, detail));
  };
  ZeroPlusPlus parts;
  // Every comma separates two parts, so "qwz," names an empty one (refused) rather than hiding a typo.
  for (std::size_t begin = 0; !text.empty() && begin <= text.size();) {
    std::size_t comma = std::min(text.find(',', begin), text.size());
    std::string_view part = text.substr(begin, comma - begin);
    begin = comma + 1;
    if (part == "qwz") {
      parts.qwz = true;
    } else if (part == "qgz" || part == "qgz-ef") {
      parts.qgz = true;
      parts.qgz_error_feedback = parts.qgz_error_feedback || part == "qgz-ef";
    } else if (part == "hpz") {
      parts.hpz = true;
    } else {
      bad(fmt::format("unknown part '{}' (expected a comma list of qwz, qgz, qgz-ef, hpz)", part));
    }
  }
  if (parts.any() && zero_stage < 1) {
    bad(fmt::format("needs --zero 1, 2 or 3 (ZeRO++ compresses ZeRO's allgather and reduce-scatter); the run has "
                    "--zero {}",
                    zero_stage));
  }
  if (parts.hpz && zero_stage != 3) {
    bad("hpz (a secondary partition of stage 3's parameters inside each host) needs --zero 3");
  }
  if (parts.qgz_error_feedback && zero_stage == 3) {
    bad("qgz-ef with --zero 3: stage 3 keeps no full-size residual (use qgz)");
  }
  return parts;
}

}  // namespace braid::train
