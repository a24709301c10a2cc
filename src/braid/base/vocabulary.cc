#include "braid/base/vocabulary.h"

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

namespace {

bool takes(const Vocabulary::Accepts& accepts, int value) { return !accepts || accepts(value); }

}  // namespace

std::string_view Vocabulary::name(int value, std::string_view fallback) const {
  for (const Spelling& s : spellings_) {
    if (s.value == value) return s.text;
  }
  return fallback;
}

std::optional<int> Vocabulary::find(std::string_view text) const {
  for (const Spelling& s : spellings_) {
    if (s.text == text) return s.value;
  }
  return std::nullopt;
}

std::vector<std::string_view> Vocabulary::spellings(const Accepts& accepts) const {
  std::vector<std::string_view> out;
  for (const Spelling& s : spellings_) {
    if (takes(accepts, s.value)) out.push_back(s.text);
  }
  return out;
}

std::string Vocabulary::accepted_names(const Accepts& accepts) const {
  std::vector<std::string> entries;  // one per accepted value: its listed name, then its aliases
  for (std::size_t i = 0; i < spellings_.size(); ++i) {
    const Spelling& s = spellings_[i];
    if (!takes(accepts, s.value) || name(s.value) != s.text) continue;  // a value's canonical name leads its entry
    std::string entry(s.listed.empty() ? s.text : s.listed);
    std::string aliases;
    for (std::size_t j = i + 1; j < spellings_.size(); ++j) {
      if (spellings_[j].value == s.value) aliases += fmt::format("{}{}", aliases.empty() ? "" : ", ", spellings_[j].text);
    }
    if (!aliases.empty()) entry += fmt::format(" (alias {})", aliases);
    entries.push_back(std::move(entry));
  }
  std::string out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    out += i == 0 ? "" : i + 1 == entries.size() ? " or " : ", ";
    out += entries[i];
  }
  return out;
}

int Vocabulary::parse(std::string_view text, std::string_view field, const Accepts& accepts) const {
  if (std::optional<int> value = find(text); value && takes(accepts, *value)) return *value;
  throw InvalidArgument({}, fmt::format("{}unknown {} '{}' (accepted: {})", field_prefix(field), what_, text,
                                        accepted_names(accepts)));
}

std::string field_prefix(std::string_view field) { return field.empty() ? "" : fmt::format("{}: ", field); }

}  // namespace braid
