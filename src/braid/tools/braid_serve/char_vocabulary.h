// braid-train's character vocabulary (tools/braid_train/text_corpus.h): the distinct bytes of
// the fortunes corpus, ascending, token id = position. braid-serve reads the same corpus so that
// the same --seed builds the same GPT (its embedding and head are sized by the vocabulary) and a
// prompt maps to the ids the model was trained on. Torch-free.
//
// Thread-safety: an immutable value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::serve {

class CharVocabulary {
 public:
  explicit CharVocabulary(std::vector<std::uint8_t> bytes);
  // The corpus's vocabulary (read_text_corpus: InvalidArgument naming a missing directory).
  static CharVocabulary of_corpus(const std::string& dir, std::int64_t context);

  std::int64_t size() const { return static_cast<std::int64_t>(bytes_.size()); }
  // InvalidArgument naming the first character the vocabulary lacks and its position.
  std::vector<std::int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<std::int64_t>& tokens) const;

 private:
  std::vector<std::uint8_t> bytes_;
  std::vector<std::int64_t> id_of_;  // byte -> id, -1 when absent
};

}  // namespace braid::serve
