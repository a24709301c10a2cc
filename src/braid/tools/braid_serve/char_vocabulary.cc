#include "braid/tools/braid_serve/char_vocabulary.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/tools/braid_train/text_corpus.h"

namespace braid::serve {
namespace {

std::string printable(std::uint8_t byte) {
  if (byte >= 0x20 && byte < 0x7f) return fmt::format("'{}'", static_cast<char>(byte));
  return fmt::format("byte 0x{:02x}", byte);
}

}  // namespace

CharVocabulary::CharVocabulary(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)), id_of_(256, -1) {
  for (std::size_t i = 0; i < bytes_.size(); ++i) id_of_[bytes_[i]] = static_cast<std::int64_t>(i);
}

CharVocabulary CharVocabulary::of_corpus(const std::string& dir, std::int64_t context) {
  return CharVocabulary(train::read_text_corpus(dir, context).vocabulary);
}

std::vector<std::int64_t> CharVocabulary::encode(const std::string& text) const {
  std::vector<std::int64_t> tokens;
  tokens.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto byte = static_cast<std::uint8_t>(text[i]);
    if (id_of_[byte] < 0) {
      throw InvalidArgument({.op = "braid-serve prompt"},
                            fmt::format("{} at position {} is not in the model's vocabulary of {} characters",
                                        printable(byte), i, bytes_.size()));
    }
    tokens.push_back(id_of_[byte]);
  }
  return tokens;
}

std::string CharVocabulary::decode(const std::vector<std::int64_t>& tokens) const {
  std::string text;
  text.reserve(tokens.size());
  for (std::int64_t t : tokens) text.push_back(static_cast<char>(bytes_.at(static_cast<std::size_t>(t))));
  return text;
}

}  // namespace braid::serve
