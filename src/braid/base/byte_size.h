// Reading the byte sizes people type on a command line: "8", "64K", "256M", "1G", "80GiB",
// "80GB", and, where a tool allows it, "1.5G" or "1.5e9". Every braid tool reads sizes through
// this one parser, so they agree on what a suffix means and all refuse the same mistakes
// (a value that overflows 64 bits used to wrap silently in one tool and abort in another).
//
// Units (case-insensitive):
//   (none), B            bytes
//   K, M, G, T           binary: 2^10, 2^20, 2^30, 2^40 (nccl-tests' -b/-e convention)
//   KiB, MiB, GiB, TiB   binary, spelt out
//   KB, MB, GB, TB       decimal: 10^3, 10^6, 10^9, 10^12 (as disks and links are sold)
// Spaces around the number and between the number and its unit are ignored.
#pragma once

#include <cstdint>
#include <string_view>

namespace braid {

struct ByteSizeRules {
  // Accept "1.5G", "0.5K", "1.5e9": the product is rounded to the nearest byte. Off by default:
  // a message size is whole bytes, and "1.1M" is more likely a typo than 1153434 bytes.
  bool fractions = false;
  // Accept 0 (a sweep may start at 0 bytes); a capacity or a limit sets this to false.
  bool zero = true;
};

// The number of bytes `text` names. Throws braid::InvalidArgument whose detail starts with
// `flag` and repeats `text`: for an empty or unreadable value, an unknown unit, a negative
// value, a fraction the rules refuse, 0 where it is refused, and any value above 2^64 - 1
// bytes (including those whose unit multiplies them past it, e.g. 17179869184G).
std::uint64_t parse_byte_size(std::string_view text, std::string_view flag, ByteSizeRules rules = {});

}  // namespace braid
