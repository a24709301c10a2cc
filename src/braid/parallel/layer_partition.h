// Which layers of a model each virtual stage holds: the cut of an L-layer model into p*v
// consecutive pieces (virtual stage chunk*p + stage holds piece number chunk*p + stage; see
// pipeline_action.h). Pure functions, shared by the runtime's users (the plain-C++ MLP of the
// tests, the LibTorch adapter cutting an nn::Sequential).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace braid::parallel {

struct LayerRange {
  int begin = 0;  // first layer
  int end = 0;    // one past the last
  int size() const { return end - begin; }
  bool operator==(const LayerRange&) const = default;
};

struct LayerPartition {
  int stages = 1;
  int chunks = 1;
  std::vector<LayerRange> pieces;  // per virtual stage, in model order

  const LayerRange& range(int stage, int chunk) const {
    return pieces[static_cast<std::size_t>(chunk * stages + stage)];
  }
};

// Equal pieces, as Megatron-LM cuts: requires layers % (stages * chunks) == 0. Throws
// InvalidArgument naming the field (stages, chunks, layers) and what would divide.
LayerPartition even_layer_partition(int layers, int stages, int chunks);

// Cuts at the given layer indices: `boundaries` holds the p*v-1 first layers of pieces 1..p*v-1,
// strictly increasing inside 1..layers-1. Throws InvalidArgument naming the stage and chunk
// that would hold no layers (or the wrong count of boundaries).
LayerPartition layer_partition_from_boundaries(int layers, int stages, int chunks, std::span<const int> boundaries);

// Consecutive pieces minimising the heaviest piece (weights: parameter counts or measured
// times per layer); every piece gets at least one layer. Throws InvalidArgument when there are
// fewer layers than pieces (naming the first stage left empty) or a weight is negative.
LayerPartition balanced_layer_partition(std::span<const std::int64_t> layer_weights, int stages, int chunks);

}  // namespace braid::parallel
