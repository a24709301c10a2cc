#include "braid/parallel/layer_partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "braid/base/error.h"

namespace braid::parallel {
namespace {

[[noreturn]] void invalid(const std::string& detail) { throw InvalidArgument({}, detail); }

void check_shape(int stages, int chunks) {
  if (stages < 1) invalid(fmt::format("layer partition: stages must be >= 1, got {}", stages));
  if (chunks < 1) invalid(fmt::format("layer partition: chunks (v) must be >= 1, got {}", chunks));
}

// "stage 1, chunk 0 (virtual stage 1)"
std::string piece_name(int piece, int stages) {
  return fmt::format("stage {}, chunk {} (virtual stage {})", piece % stages, piece / stages, piece);
}

void check_enough_layers(int layers, int stages, int chunks) {
  if (layers < stages * chunks) {
    invalid(fmt::format("layer partition: {} would have no layers: {} layers for {} stages x {} chunks",
                        piece_name(std::max(layers, 0), stages), layers, stages, chunks));
  }
}

LayerPartition from_starts(int layers, int stages, int chunks, const std::vector<int>& starts) {
  LayerPartition partition{stages, chunks, {}};
  for (std::size_t i = 0; i < starts.size(); ++i) {
    partition.pieces.push_back({starts[i], i + 1 < starts.size() ? starts[i + 1] : layers});
  }
  return partition;
}

}  // namespace

LayerPartition even_layer_partition(int layers, int stages, int chunks) {
  check_shape(stages, chunks);
  check_enough_layers(layers, stages, chunks);
  const int pieces = stages * chunks;
  if (layers % pieces != 0) {
    const std::string why = layers % stages != 0
                                ? "or give boundaries"
                                : fmt::format(
                                      "each stage's {} layers do not split into {} equal chunks: choose chunks (v) "
                                      "dividing {}, or give boundaries",
                                      layers / stages, chunks, layers / stages);
    invalid(
        fmt::format("layer partition: layers ({}) must be divisible by stages x chunks ({} x {} = {}) for an even "
                    "cut; {}",
                    layers, stages, chunks, pieces, why));
  }
  std::vector<int> starts;
  for (int i = 0; i < pieces; ++i) starts.push_back(i * (layers / pieces));
  return from_starts(layers, stages, chunks, starts);
}

LayerPartition layer_partition_from_boundaries(int layers, int stages, int chunks, std::span<const int> boundaries) {
  check_shape(stages, chunks);
  const int pieces = stages * chunks;
  if (static_cast<int>(boundaries.size()) != pieces - 1) {
    invalid(fmt::format("layer partition: {} boundaries given, {} stages x {} chunks need {}", boundaries.size(),
                        stages, chunks, pieces - 1));
  }
  std::vector<int> starts{0};
  for (int b : boundaries) {
    const int piece = static_cast<int>(starts.size()) - 1;
    if (b <= starts.back()) {
      invalid(fmt::format("layer partition: {} would have no layers (boundary {} after {})", piece_name(piece, stages),
                          b, starts.back()));
    }
    starts.push_back(b);
  }
  if (starts.back() >= layers) {
    invalid(fmt::format("layer partition: {} would have no layers (boundary {} with {} layers)",
                        piece_name(pieces - 1, stages), starts.back(), layers));
  }
  return from_starts(layers, stages, chunks, starts);
}

LayerPartition balanced_layer_partition(std::span<const std::int64_t> layer_weights, int stages, int chunks) {
  check_shape(stages, chunks);
  const int layers = static_cast<int>(layer_weights.size());
  check_enough_layers(layers, stages, chunks);
  std::vector<std::int64_t> prefix{0};
  for (int i = 0; i < layers; ++i) {
    if (layer_weights[static_cast<std::size_t>(i)] < 0) {
      invalid(fmt::format("layer partition: weight of layer {} is negative ({})", i,
                          layer_weights[static_cast<std::size_t>(i)]));
    }
    prefix.push_back(prefix.back() + layer_weights[static_cast<std::size_t>(i)]);
  }
  // best[k][i]: the smallest possible heaviest piece when the first i layers form k pieces.
  const int pieces = stages * chunks;
  constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();
  auto at = [&](int k, int i) { return static_cast<std::size_t>(k * (layers + 1) + i); };
  std::vector<std::int64_t> best(static_cast<std::size_t>((pieces + 1) * (layers + 1)), kInf);
  std::vector<int> cut(best.size(), 0);
  best[at(0, 0)] = 0;
  for (int k = 1; k <= pieces; ++k) {
    for (int i = k; i <= layers - (pieces - k); ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (best[at(k - 1, j)] == kInf) continue;
        const std::int64_t heaviest =
            std::max(best[at(k - 1, j)], prefix[static_cast<std::size_t>(i)] - prefix[static_cast<std::size_t>(j)]);
        if (heaviest < best[at(k, i)]) best[at(k, i)] = heaviest, cut[at(k, i)] = j;
      }
    }
  }
  std::vector<int> starts(static_cast<std::size_t>(pieces));
  for (int k = pieces, i = layers; k > 0; i = cut[at(k, i)], --k)
    starts[static_cast<std::size_t>(k - 1)] = cut[at(k, i)];
  return from_starts(layers, stages, chunks, starts);
}

}  // namespace braid::parallel
