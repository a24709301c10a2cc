// libFuzzer target over the tuning file reader (collectives/tuning_file.h): the input is the
// text of a BRAID_TUNING_FILE, which every rank of a job reads at its first collective.
//
// Findings (fuzz_support.h):
//   - an exception other than braid::InvalidArgument (the reader's one error: strict loading
//     names the file and the rule), nlohmann's own exceptions included;
//   - an accepted rule naming an algorithm the registry does not have, or with min > max;
//   - an accepted table that does not survive tuning_json: writing it and parsing the text
//     again must give the same rules, in order;
//   - TuningTable::matching (the tuner's lookup) listing other than the rules that match a key, in
//     table order.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/tuning_file.h"
#include "fuzz_support.h"

namespace braid {
namespace {

using fuzz::require;

void check_table(const TuningTable& table, std::uint64_t probe) {
  for (const TuningRule& rule : table.rules) {
    require(find_algorithm(rule.op, rule.algorithm) != nullptr, "a rule naming an unknown algorithm was accepted");
    require(rule.min_bytes <= rule.max_bytes && rule.min_world <= rule.max_world && rule.min_hosts <= rule.max_hosts,
            "a rule with min > max was accepted");
    require(rule.min_world >= 1 && rule.min_hosts >= 1, "a rule for fewer than one rank or host was accepted");
  }
  // matching() is the rules that match, in table order; probed at every rule's corners.
  for (const TuningRule& corner : table.rules) {
    for (std::uint64_t bytes : {corner.min_bytes, corner.max_bytes, probe}) {
      const TuningKey key{.op = corner.op, .bytes = bytes, .world = corner.min_world, .hosts = corner.max_hosts};
      std::vector<std::string_view> expected;
      for (const TuningRule& rule : table.rules) {
        if (rule.matches(key)) expected.push_back(rule.algorithm);
      }
      require(table.matching(key) == expected, "matching() is not the matching rules in table order");
    }
  }
  TuningTable again;
  // No error allowed: tuning_json must write a file the reader takes.
  fuzz::succeeds("parse_tuning_json of tuning_json", {},
                 [&] { again = parse_tuning_json(tuning_json(table), "rewritten.json"); });
  require(again.rules == table.rules, "a tuning table does not survive tuning_json and parse_tuning_json");
}

}  // namespace
}  // namespace braid

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "tuning_file_fuzz";
  braid::fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  braid::TuningTable table;
  if (braid::fuzz::succeeds("parse_tuning_json", {braid::ErrorKind::kInvalidArgument}, [&] {
        table = braid::parse_tuning_json(braid::fuzz::as_text(data, size), "fuzz.json");
      })) {
    braid::check_table(table, size * 977);
  }
  return 0;
}
