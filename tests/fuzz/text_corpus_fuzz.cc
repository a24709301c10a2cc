// libFuzzer target over braid-train's text corpus reader (tools/braid_train/text_corpus.h):
// the input becomes the files of a fortunes directory (`braid-train --model gpt --data DIR`),
// and the tokens read are checked against an independent reading of the same text.
//
// Findings (fuzz_support.h):
//   - an exception other than braid::InvalidArgument (too little text);
//   - a vocabulary that is not the distinct bytes of the text in ascending order;
//   - tokens that do not spell the text: the files in name order, '%' separator lines dropped,
//     every line ending in '\n' (the last one too), the last tenth as validation;
//   - refusing a text long enough for the context, or accepting one too short.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "braid/tools/braid_train/text_corpus.h"
#include "fuzz_support.h"
#include "scratch_dir.h"

namespace braid::train {
namespace {

using fuzz::require;

// The reader's contract, written independently of it.
std::string expected_text(const std::vector<std::string>& files) {
  std::string text;
  for (const std::string& content : files) {
    std::istringstream in(content);
    std::string line;
    while (std::getline(in, line)) {
      if (line != "%") text += line + '\n';
    }
  }
  return text;
}

void check_corpus(const TextCorpus& corpus, const std::string& text) {
  std::set<std::uint8_t> distinct(text.begin(), text.end());
  require(std::vector<std::uint8_t>(distinct.begin(), distinct.end()) == corpus.vocabulary,
          "the vocabulary is not the text's distinct bytes in ascending order");
  require(corpus.validation.size() == text.size() / 10, "validation is not the last tenth of the text");
  std::string spelled;
  for (const auto* split : {&corpus.train, &corpus.validation}) {
    for (std::int32_t id : *split) {
      require(id >= 0 && static_cast<std::size_t>(id) < corpus.vocabulary.size(), "a token id outside the vocabulary");
      spelled.push_back(static_cast<char>(corpus.vocabulary[static_cast<std::size_t>(id)]));
    }
  }
  require(spelled == text, "the tokens do not spell the corpus text");
}

}  // namespace
}  // namespace braid::train

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "text_corpus_fuzz";
  return 0;
}

// Input: context (1 byte, 1..16) | file count (1 byte, 1..3) | the rest, cut into that many
// files of equal length (the last takes the remainder), named in order; plus an index file
// (".dat") the reader must skip.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid;
  fuzz::Cursor in(data, size);
  const std::int64_t context = 1 + in.u8() % 16;
  const std::size_t count = 1 + in.u8() % 3;
  const std::size_t each = in.remaining() / count;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < count; ++i) files.emplace_back(in.bytes(i + 1 == count ? in.remaining() : each));

  fuzz::scratch_dir().clear();
  for (std::size_t i = 0; i < files.size(); ++i) fuzz::scratch_dir().write("fortunes" + std::to_string(i), files[i]);
  fuzz::scratch_dir().write("fortunes0.dat", "index bytes the reader skips\n");
  const std::string text = train::expected_text(files);
  train::TextCorpus corpus;
  const bool read = fuzz::succeeds("read_text_corpus", {ErrorKind::kInvalidArgument},
                                   [&] { corpus = train::read_text_corpus(fuzz::scratch_dir().path(), context); });
  fuzz::require(read == (text.size() >= static_cast<std::size_t>(20 * (context + 1))),
                "read_text_corpus's verdict on the text's length is not its contract's");
  if (read) train::check_corpus(corpus, text);
  return 0;
}
