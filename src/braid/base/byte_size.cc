#include "braid/base/byte_size.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
// 2^64 as a double: the first value that no longer fits (kMax itself rounds up to it).
constexpr double kTooLarge = 18446744073709551616.0;

struct Unit {
  std::string_view name;  // upper case
  std::uint64_t factor;
};

constexpr std::array<Unit, 14> kUnits{{
    {"", 1},           {"B", 1},
    {"K", 1ull << 10}, {"M", 1ull << 20}, {"G", 1ull << 30}, {"T", 1ull << 40},
    {"KIB", 1ull << 10}, {"MIB", 1ull << 20}, {"GIB", 1ull << 30}, {"TIB", 1ull << 40},
    {"KB", 1000ull},   {"MB", 1000000ull}, {"GB", 1000000000ull}, {"TB", 1000000000000ull},
}};

constexpr std::string_view kForms = "8, 64K, 16M, 1G, 2T, 80GiB (binary) or 80GB (decimal)";

[[noreturn]] void refuse(std::string_view flag, std::string_view text, std::string_view why) {
  throw InvalidArgument({}, fmt::format("{}: '{}' {}", flag, text, why));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The factor of `unit`, or 0 when it is not one.
std::uint64_t unit_factor(std::string_view unit) {
  std::string upper(unit);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const Unit& u : kUnits) {
    if (u.name == upper) return u.factor;
  }
  return 0;
}

// The part of `text` a number is written with: digits, a point, an exponent ("1e9": only
// between digits, so the E of "1EB" still reads as a unit) and a sign at the start of either.
// What follows is the unit.
std::size_t number_length(std::string_view text) {
  auto digit = [&](std::size_t i) { return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); };
  auto exponent = [&](std::size_t i) {
    return (text[i] == 'e' || text[i] == 'E') && digit(i - 1) &&
           (digit(i + 1) || (i + 2 < text.size() && (text[i + 1] == '-' || text[i + 1] == '+') && digit(i + 2)));
  };
  std::size_t n = 0;
  while (n < text.size()) {
    const char c = text[n];
    const bool sign = (c == '-' || c == '+') && (n == 0 || text[n - 1] == 'e' || text[n - 1] == 'E');
    if (!digit(n) && c != '.' && !sign && !(n > 0 && exponent(n))) break;
    ++n;
  }
  return n;
}

// The wording of every braid-plan unit error ("--device-memory: cannot read '80 gigs'; ...").
[[noreturn]] void not_a_size(std::string_view flag, std::string_view text) {
  throw InvalidArgument({}, fmt::format("{}: cannot read '{}' as a size; expected a number with an optional unit, e.g. {}",
                                        flag, text, kForms));
}

[[noreturn]] void too_large(std::string_view flag, std::string_view text) {
  refuse(flag, text, fmt::format("is too large (at most {} bytes)", kMax));
}

// Whole bytes, exactly: the digits are read as an integer and multiplied with an overflow check.
std::uint64_t whole_bytes(std::string_view number, std::uint64_t factor, std::string_view flag, std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec == std::errc::result_out_of_range) too_large(flag, text);
  if (ec != std::errc() || end != number.data() + number.size()) not_a_size(flag, text);
  if (value > kMax / factor) too_large(flag, text);
  return value * factor;
}

// A sign, a fraction or an exponent ("-5", "1.5G", "1.5e9"): read as a double, refused unless
// positive and allowed, and rounded to the nearest byte.
std::uint64_t rounded_bytes(std::string_view number, std::uint64_t factor, std::string_view flag, std::string_view text,
                            ByteSizeRules rules) {
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if ((ec != std::errc() && ec != std::errc::result_out_of_range) || end != number.data() + number.size()) {
    not_a_size(flag, text);
  }
  if (number.front() == '-') refuse(flag, text, rules.zero ? "is negative" : "must be greater than zero");
  if (!rules.fractions) {
    refuse(flag, text, "is not a whole number; give the size in whole bytes or whole units (1536, 1536K)");
  }
  const double bytes = std::round(value * static_cast<double>(factor));
  if (ec == std::errc::result_out_of_range || !std::isfinite(bytes) || bytes >= kTooLarge) too_large(flag, text);
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace

std::uint64_t parse_byte_size(std::string_view raw, std::string_view flag, ByteSizeRules rules) {
  const std::string_view text = trim(raw);
  const std::string_view number = text.substr(0, number_length(text));
  const std::uint64_t factor = unit_factor(trim(text.substr(number.size())));
  if (number.find_first_of("0123456789") == std::string_view::npos || factor == 0) not_a_size(flag, text);
  const bool whole = number.find_first_not_of("0123456789") == std::string_view::npos;
  const std::uint64_t bytes =
      whole ? whole_bytes(number, factor, flag, text) : rounded_bytes(number, factor, flag, text, rules);
  if (bytes == 0 && !rules.zero) refuse(flag, text, "must be greater than zero");
  return bytes;
}

}  // namespace braid
