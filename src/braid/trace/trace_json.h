// Internal to trace/: the JSON vocabulary shared by the writer (chrome_trace.cc), the reader
// (trace_reader.cc) and the merger (trace_merge.cc), and the checks every reader applies. The
// public headers keep nlohmann-json out of their includes; this one is not for callers.
//
// A braid trace is a Chrome "JSON Object Format" trace (the format Perfetto and
// chrome://tracing load) whose otherData carries "braid_trace": <format version>. See
// docs/tracing.md for the full layout.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace braid::trace::json_format {

inline constexpr int kVersion = 1;
inline constexpr const char* kVersionKey = "braid_trace";
inline constexpr const char* kCatCompute = "compute";
inline constexpr const char* kCatComm = "comm";
inline constexpr const char* kCatMark = "mark";
inline constexpr const char* kCatStep = "step";
inline constexpr const char* kCatCounters = "counters";

// Chrome traces count microseconds; braid records nanoseconds. Doubles keep nanosecond
// precision for any offset below 2^53 ns (104 days), and nlohmann writes them round-trip.
inline double ns_to_us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }
inline std::int64_t us_to_ns(double us) { return std::llround(us * 1000.0); }

// What a reader accepts: a file from elsewhere may hold anything, and a value past these would
// print as nonsense (step -2147483648, 8796093022208 MiB on the wire) or overflow the counters.
// Times: |ts| and dur up to 2^53 ns (104 days), where doubles still hold nanoseconds. Bytes:
// 2^40 (1 TiB) per operation, so even the recorder's 2^20 events cannot overflow a 64-bit sum.
inline constexpr double kMaxTimeUs = 9007199254740.992;  // 2^53 ns
inline constexpr double kMaxRank = (1 << 24) - 1;
inline constexpr double kMaxLane = (1 << 16) - 1;
inline constexpr double kMaxStep = 2147483647;
inline constexpr double kMaxEventBytes = 1099511627776.0;  // 2^40
// Clock readings (ns since the epoch: 9e18 is the year 2255) and counts, below 2^63 so they fit an int64.
inline constexpr double kMaxInt64Field = 9e18;

// Parses `text` as a braid trace (read from `path`, which every error names): a JSON object
// with a "traceEvents" array whose events pass check_event, and otherData.braid_trace no newer
// than kVersion, every field braid reads within the limits above. Throws braid::Corrupt
// otherwise, naming the file, the event and the field.
nlohmann::json parse_braid_trace(const std::string& text, const std::string& path);
// read_whole_file + parse_braid_trace; a missing file is braid::InvalidArgument.
nlohmann::json load_braid_trace(const std::string& path);

// Whether the trace is the output of `braid-trace merge` (several ranks) rather than one
// rank's file.
bool is_merged(const nlohmann::json& trace);

// `value` as JSON text. A string that is not UTF-8 (a span name, hostname or file name is any
// bytes) is written with U+FFFD for each bad byte instead of throwing nlohmann's type_error.
inline std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace braid::trace::json_format
