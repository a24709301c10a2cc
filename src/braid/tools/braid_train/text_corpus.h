// The character-level corpus of the gpt model: the fortunes files (Debian `fortunes`), read as
// bytes, split into training and validation text, and a vocabulary of the bytes that occur.
// Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::train {

struct TextCorpus {
  std::vector<std::uint8_t> vocabulary;  // the distinct bytes, ascending; token id = position
  std::vector<std::int32_t> train;       // token ids
  std::vector<std::int32_t> validation;  // the last tenth of the text
};

// Reads every fortune file in `dir` (regular files; the .dat indexes and .u8 copies are skipped),
// in name order, dropping the '%' separator lines. Throws InvalidArgument naming the directory
// when it is missing or holds too little text (under 2 * context tokens per split).
TextCorpus read_text_corpus(const std::string& dir, std::int64_t context);

}  // namespace braid::train
