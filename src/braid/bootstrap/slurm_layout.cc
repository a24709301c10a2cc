#include "braid/bootstrap/slurm_layout.h"

#include <charconv>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::slurm {

namespace {

[[noreturn]] void malformed(std::string_view what, std::string_view text, std::string_view why) {
  throw InvalidArgument({.op = "discover"}, fmt::format("Slurm {} '{}' {}", what, text, why));
}

}  // namespace

std::string first_host(std::string_view list) {
  std::string host;
  std::size_t i = 0;
  while (i < list.size() && list[i] != ',') {
    if (list[i] == ']') malformed("node list", list, "has a ']' without its '['");
    if (list[i] != '[') {
      host += list[i++];
      continue;
    }
    // A range group: its first item (up to ',', '-' or ']') is the first host's part.
    const std::size_t close = list.find(']', i);
    if (close == std::string_view::npos) malformed("node list", list, "has a '[' without its ']'");
    const std::string_view group = list.substr(i + 1, close - i - 1);
    const std::string_view first = group.substr(0, group.find_first_of(",-"));
    if (first.empty()) malformed("node list", list, "has an empty range");
    host += first;
    i = close + 1;
  }
  if (host.empty()) malformed("node list", list, "names no host");
  return host;
}

std::vector<int> tasks_per_node(std::string_view text) {
  std::vector<int> counts;
  std::size_t i = 0;
  while (i < text.size()) {
    int count = 0, repeat = 1;
    auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), count);
    if (ec != std::errc() || count < 1) malformed("task counts", text, "are not counts like 2(x3),1");
    i = static_cast<std::size_t>(end - text.data());
    if (text.substr(i).starts_with("(x")) {
      auto [rep_end, rep_ec] = std::from_chars(text.data() + i + 2, text.data() + text.size(), repeat);
      i = static_cast<std::size_t>(rep_end - text.data());
      if (rep_ec != std::errc() || repeat < 1 || i >= text.size() || text[i] != ')') {
        malformed("task counts", text, "are not counts like 2(x3),1");
      }
      ++i;
    }
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), count);
    if (i < text.size() && text[i++] != ',') malformed("task counts", text, "are not counts like 2(x3),1");
  }
  if (counts.empty()) malformed("task counts", text, "are empty");
  return counts;
}

std::uint16_t default_store_port(long long job_id, long long step_id) {
  const long long mixed = (job_id % 20000) * 16 + step_id % 16;
  return static_cast<std::uint16_t>(10000 + mixed % 20000);
}

}  // namespace braid::slurm
