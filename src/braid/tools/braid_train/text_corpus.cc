#include "braid/tools/braid_train/text_corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>

#include "braid/base/error.h"

namespace braid::train {
namespace {

std::vector<std::filesystem::path> fortune_files(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) {
    throw InvalidArgument({.op = "read_text_corpus"}, fmt::format("{}: no such directory", dir));
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto ext = entry.path().extension();
    if (entry.is_regular_file() && ext != ".dat" && ext != ".u8") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string without_separators(std::istream& in) {
  std::string text, line;
  while (std::getline(in, line)) {
    if (line == "%") continue;
    text += line;
    text += '\n';
  }
  return text;
}

}  // namespace

TextCorpus read_text_corpus(const std::string& dir, std::int64_t context) {
  std::string text;
  for (const auto& path : fortune_files(dir)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InvalidArgument({.op = "read_text_corpus"}, fmt::format("{}: cannot read", path.string()));
    text += without_separators(in);
  }
  std::size_t need = static_cast<std::size_t>(20 * (context + 1));  // validation gets a tenth: >= 2 windows
  if (text.size() < need) {
    throw InvalidArgument({.op = "read_text_corpus"},
                          fmt::format("{}: {} bytes of text, fewer than the {} a context of {} needs", dir,
                                      text.size(), need, context));
  }
  std::array<bool, 256> present{};
  for (unsigned char c : text) present[c] = true;
  TextCorpus corpus;
  std::array<std::int32_t, 256> id{};
  for (int c = 0; c < 256; ++c) {
    if (!present[static_cast<std::size_t>(c)]) continue;
    id[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(corpus.vocabulary.size());
    corpus.vocabulary.push_back(static_cast<std::uint8_t>(c));
  }
  std::size_t split = text.size() - text.size() / 10;
  for (std::size_t i = 0; i < text.size(); ++i) {
    (i < split ? corpus.train : corpus.validation).push_back(id[static_cast<unsigned char>(text[i])]);
  }
  return corpus;
}

}  // namespace braid::train
