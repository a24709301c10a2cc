// A vocabulary: how braid spells the values of one enum, with the one parser and the one
// printer every library layer and tool shares, so that a name means the same thing in every
// CLI and every refusal lists the same choices (op_kind.h and pipeline_schedule_kind.h are the
// two vocabularies). Each value has one canonical name, the one braid prints, and may have
// aliases that are accepted and never printed.
//
// Type-erased on int so that one implementation serves every enum; the enum's own header
// wraps it in typed functions.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace braid {

// One way to spell a value. A value's first spelling in a table is its canonical name; any
// later spelling of the same value is an alias.
struct Spelling {
  int value;
  std::string_view text;
  std::string_view listed = {};  // how lists of accepted names show it, when not `text` ("interleaved:V")
};

// A row of an enum's table: spelling(OpKind::kAllreduce, "allreduce").
template <typename Enum>
constexpr Spelling spelling(Enum value, std::string_view text, std::string_view listed = {}) {
  return {static_cast<int>(value), text, listed};
}

class Vocabulary {
 public:
  // Which values a caller takes (every value when empty).
  using Accepts = std::function<bool(int value)>;

  // `what` names the thing in errors ("schedule", "operation").
  // REQUIRES: `spellings` outlives the vocabulary (a static table).
  constexpr Vocabulary(std::string_view what, std::span<const Spelling> spellings)
      : what_(what), spellings_(spellings) {}

  // The canonical name of `value`, or `fallback` when the table does not have it (a raw value
  // read off the wire, say).
  std::string_view name(int value, std::string_view fallback = "unknown") const;
  // The value `text` spells exactly (canonical name or alias), if any.
  std::optional<int> find(std::string_view text) const;
  // The value `text` spells, when `accepts` takes it. Otherwise throws InvalidArgument:
  //   "<field>: unknown <what> '<text>' (accepted: a, b (alias b2) or c)"
  // listing every value `accepts` takes (the "<field>: " prefix only when `field` is not empty).
  int parse(std::string_view text, std::string_view field, const Accepts& accepts = {}) const;
  // "a, b (alias b2) or c": the names of every value `accepts` takes, canonical name first.
  std::string accepted_names(const Accepts& accepts = {}) const;
  // The canonical names and aliases of every value `accepts` takes, in table order.
  std::vector<std::string_view> spellings(const Accepts& accepts = {}) const;

 private:
  std::string_view what_;
  std::span<const Spelling> spellings_;
};

// "<field>: ", or nothing when `field` is empty: how a refusal names the flag it is about.
std::string field_prefix(std::string_view field);

}  // namespace braid
