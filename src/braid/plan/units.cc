#include "braid/plan/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "braid/base/byte_size.h"
#include "braid/base/error.h"

namespace braid::plan {

namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

[[noreturn]] void bad_value(std::string_view field, std::string_view text, std::string_view forms) {
  throw InvalidArgument({.op = "braid-plan"},
                        fmt::format("{}: cannot read '{}'; expected a positive number with an optional unit, e.g. {}",
                                    field, text, forms));
}

// Splits "12.5GiB" into 12.5 and "GiB"; the number may carry an exponent (70e9).
bool split_number(std::string_view text, double& value, std::string_view& suffix) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) return false;
  suffix = std::string_view(ptr, static_cast<std::size_t>(end - ptr));
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  return true;
}

template <std::size_t N>
double parse_with(std::string_view text, std::string_view field, const std::array<Suffix, N>& suffixes,
                  std::string_view forms) {
  double value = 0;
  std::string_view suffix;
  if (!split_number(text, value, suffix)) bad_value(field, text, forms);
  for (const Suffix& s : suffixes) {
    if (s.text == suffix) {
      double result = value * s.factor;
      if (!std::isfinite(result)) bad_value(field, text, forms);
      if (result <= 0) {
        throw InvalidArgument({.op = "braid-plan"},
                              fmt::format("{}: '{}' must be greater than zero", field, text));
      }
      return result;
    }
  }
  bad_value(field, text, forms);
}

constexpr double kKi = 1024.0;

}  // namespace

double parse_count(std::string_view text, std::string_view field) {
  static constexpr std::array<Suffix, 9> kSuffixes{{{"", 1}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"m", 1e6},
                                                     {"B", 1e9}, {"b", 1e9}, {"G", 1e9}, {"T", 1e12}}};
  return parse_with(text, field, kSuffixes, "7B, 70e9, 1.3T, 4096, 32K");
}

// The one size parser of every braid tool (base/byte_size.h), with the planner's leniency:
// fractions ("1.5G", "1.5e9") are rounded to whole bytes, and a size must be positive.
double parse_bytes(std::string_view text, std::string_view field) {
  return static_cast<double>(parse_byte_size(text, field, {.fractions = true, .zero = false}));
}

double parse_bandwidth(std::string_view text, std::string_view field) {
  static constexpr std::array<Suffix, 20> kSuffixes{{
      {"", 1}, {"B/s", 1},
      {"Gbps", 1e9 / 8}, {"Gb/s", 1e9 / 8}, {"Mbps", 1e6 / 8}, {"Mb/s", 1e6 / 8}, {"Tbps", 1e12 / 8},
      {"Tb/s", 1e12 / 8},
      {"GB/s", 1e9}, {"GBps", 1e9}, {"MB/s", 1e6}, {"MBps", 1e6}, {"TB/s", 1e12}, {"TBps", 1e12},
      {"GiB/s", kKi * kKi * kKi}, {"MiB/s", kKi * kKi}, {"TiB/s", kKi * kKi * kKi * kKi}, {"KB/s", 1e3},
      {"KiB/s", kKi}, {"kB/s", 1e3}}};
  return parse_with(text, field, kSuffixes, "400Gbps, 400Gb/s, 25GB/s, 25GBps, 900GiB/s");
}

double parse_time(std::string_view text, std::string_view field) {
  static constexpr std::array<Suffix, 7> kSuffixes{
      {{"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ns", 1e-9}, {"min", 60}}};
  return parse_with(text, field, kSuffixes, "5us, 1.5ms, 2s, 800ns");
}

double parse_flop_rate(std::string_view text, std::string_view field) {
  static constexpr std::array<Suffix, 16> kSuffixes{{
      {"", 1}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15},
      {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15}, {"FLOPS", 1},
      {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {"FLOP/s", 1},
      {"Gflops", 1e9}, {"Tflops", 1e12}, {"Pflops", 1e15}, {"flops", 1}}};
  return parse_with(text, field, kSuffixes, "989T, 989TFLOPS, 1.98e15, 2P");
}

void require_range(std::string_view field, double value, double lo, double hi, std::string_view why) {
  if (value >= lo && value <= hi) return;
  throw InvalidArgument({.op = "braid-plan"}, fmt::format("{} = {} is out of range [{}, {}]{}{}", field, value, lo, hi,
                                                          why.empty() ? "" : ": ", why));
}

std::string format_bytes(double bytes) {
  static constexpr std::array<std::string_view, 6> kDecimal{"B", "KB", "MB", "GB", "TB", "PB"};
  static constexpr std::array<std::string_view, 6> kBinary{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1000) return fmt::format("{:.0f} B", bytes);
  std::size_t d = 0;
  double dv = bytes;
  while (dv >= 1000 && d + 1 < kDecimal.size()) dv /= 1000, ++d;
  std::size_t b = 0;
  double bv = bytes;
  while (bv >= 1024 && b + 1 < kBinary.size()) bv /= 1024, ++b;
  return fmt::format("{:.2f} {} ({:.2f} {})", dv, kDecimal[d], bv, kBinary[b]);
}

std::string format_seconds(double seconds) {
  double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a >= 1) return fmt::format("{:.3f} s", seconds);
  if (a >= 1e-3) return fmt::format("{:.2f} ms", seconds * 1e3);
  if (a >= 1e-6) return fmt::format("{:.2f} us", seconds * 1e6);
  return fmt::format("{:.1f} ns", seconds * 1e9);
}

std::string format_rate(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_second / 1e9);
  return fmt::format("{:.2f} MB/s", bytes_per_second / 1e6);
}

std::string format_flops(double flop) {
  static constexpr std::array<std::string_view, 7> kPrefix{"", "K", "M", "G", "T", "P", "E"};
  std::size_t p = 0;
  while (flop >= 1000 && p + 1 < kPrefix.size()) flop /= 1000, ++p;
  return fmt::format("{:.2f} {}FLOP", flop, kPrefix[p]);
}

}  // namespace braid::plan
