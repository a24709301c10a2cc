#include "braid/torch/model_agreement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"

namespace braid::torch {
namespace {

// One line per parameter: names never contain '\n' (torch joins module paths with '.').
std::string encode(const std::vector<ParamSignature>& params) {
  std::string text;
  for (const ParamSignature& p : params) text += describe(p) + '\n';
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

std::string broadcast_text(Communicator& comm, std::string text) {
  std::int64_t length = static_cast<std::int64_t>(text.size());
  broadcast(comm, &length, 1, DType::kI64, 0);
  text.resize(static_cast<std::size_t>(length));
  broadcast(comm, text.data(), length, DType::kU8, 0);
  return text;
}

}  // namespace

std::string describe(const ParamSignature& param) {
  return fmt::format("{} {} [{}]", param.name, param.dtype, fmt::join(param.shape, ", "));
}

void check_same_model(Communicator& comm, const std::vector<ParamSignature>& params, const std::string& what) {
  std::vector<std::string> mine = lines_of(encode(params));
  std::vector<std::string> reference = lines_of(broadcast_text(comm, encode(params)));
  std::size_t common = std::min(mine.size(), reference.size());
  auto first = static_cast<std::size_t>(std::mismatch(mine.begin(), mine.begin() + common, reference.begin()).first -
                                        mine.begin());
  bool differs = first < common || mine.size() != reference.size();
  // Every rank learns which ranks differ and where, so all throw the same message.
  std::vector<std::int64_t> verdicts(static_cast<std::size_t>(comm.size()) * 2);
  std::int64_t verdict[2] = {differs ? static_cast<std::int64_t>(first) : -1, static_cast<std::int64_t>(mine.size())};
  allgather(comm, verdict, verdicts.data(), 2, DType::kI64);
  for (int r = 0; r < comm.size(); ++r) {
    std::int64_t index = verdicts[static_cast<std::size_t>(r) * 2];
    if (index < 0) continue;
    std::int64_t count = verdicts[static_cast<std::size_t>(r) * 2 + 1];
    std::string detail;
    if (static_cast<std::size_t>(index) < reference.size() && index < count) {
      detail = fmt::format("its {} #{} differs from rank 0's '{}'", what, index, reference[static_cast<std::size_t>(index)]);
      if (r == comm.rank()) detail += fmt::format(" (here: '{}')", mine[static_cast<std::size_t>(index)]);
    } else {
      detail = fmt::format("it has {} {}s where rank 0 has {}", count, what, reference.size());
    }
    throw InvalidArgument({.rank = comm.rank(), .peer = r, .op = "DistributedDataParallel"},
                          fmt::format("the model on rank {} is not the model on rank 0: {}", r, detail));
  }
}

}  // namespace braid::torch
