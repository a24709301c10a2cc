// Tuning files: a TuningTable as JSON, written by `braid-bench --tune` and read through
// BRAID_TUNING_FILE (schema in docs/collectives.md, "Choosing an algorithm"):
//
//   {"format": "braid-tuning", "version": 1,
//    "metadata": {"date": ..., "hostname": ..., "world": 4, "hosts": 1, "measurements": ...},
//    "rules": [{"op": "allreduce", "algorithm": "recursive_doubling",
//               "min_bytes": 0, "max_bytes": 16383, "min_world": 4, "max_world": 4,
//               "min_hosts": 1, "max_hosts": 1}, ...]}
//
// A bound that is absent or null is open. Loading is strict, because a silently ignored typo
// would leave a job running with other algorithms than its owner believes: unknown keys, an
// unknown op or algorithm, min > max, negative or non-integer bounds all raise InvalidArgument
// naming the file and the offending rule. The metadata is kept for people, not read back.
//
// nlohmann-json stays inside tuning_file.cc, so that this public header needs no JSON library.
#pragma once

#include <string>
#include <string_view>

#include "braid/collectives/tuning_table.h"

namespace braid {

inline constexpr int kTuningFileVersion = 1;

// Parses the text of a tuning file; `source` (its path) names it in error messages.
TuningTable parse_tuning_json(std::string_view text, std::string_view source);

// Reads and parses the tuning file at `path` (InvalidArgument if it cannot be read).
TuningTable load_tuning_file(const std::string& path);

// The text of a tuning file holding `table`, with `metadata_json` (the text of a JSON object)
// stored under "metadata". InvalidArgument if metadata_json is not a JSON object.
std::string tuning_json(const TuningTable& table, std::string_view metadata_json = "{}");

}  // namespace braid
