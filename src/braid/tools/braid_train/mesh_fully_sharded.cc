#include "braid/tools/braid_train/mesh_fully_sharded.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/tools/braid_train/fully_sharded_training.h"
#include "braid/tools/braid_train/training_common.h"

namespace braid::train {

namespace {

// A unit must hold a parameter. Every rank checks every piece (all know the whole partition), so
// all refuse alike instead of one stage failing while the others wait on it.
void check_every_piece_holds_parameters(Communicator& data_parallel, ::torch::nn::Sequential& layers,
                                        const parallel::LayerPartition& partition) {
  for (std::size_t v = 0; v < partition.pieces.size(); ++v) {
    const parallel::LayerRange& range = partition.pieces[v];
    bool holds = false;
    auto it = layers->begin() + range.begin;
    for (int i = range.begin; i < range.end; ++i, ++it) holds = holds || !it->ptr()->parameters().empty();
    if (!holds) {
      throw InvalidArgument({.rank = data_parallel.rank(), .op = "braid-train --zero 3"},
                            fmt::format("pipeline piece {} (layers [{}, {}) of stage {}, chunk {}) holds no parameter: "
                                        "stage 3 on the mesh shards each piece as one unit; use fewer --pp stages or "
                                        "chunks, or --zero 1",
                                        v, range.begin, range.end, static_cast<int>(v) % partition.stages,
                                        static_cast<int>(v) / partition.stages));
    }
  }
}

}  // namespace

std::vector<torch::ShardedUnit> units_inside_chunk(::torch::nn::Sequential& own, int begin, int end, int chunk,
                                                   int layers_per_unit) {
  std::vector<torch::ShardedUnit> units;
  int first = begin, with_parameters = 0;
  for (int i = begin; i < end; ++i) {
    if (own->ptr(static_cast<std::size_t>(i))->parameters().empty()) continue;
    if (++with_parameters < layers_per_unit) continue;
    units.push_back({.name = fmt::format("chunk{}.{}", chunk, own->named_children()[static_cast<std::size_t>(first)].key()),
                     .begin = first, .end = i + 1});
    first = i + 1;
    with_parameters = 0;
  }
  if (with_parameters > 0) {  // a last group shorter than K
    units.push_back({.name = fmt::format("chunk{}.{}", chunk, own->named_children()[static_cast<std::size_t>(first)].key()),
                     .begin = first, .end = end});
  }
  units.back().end = end;  // trailing parameterless layers join the last unit
  return units;
}

MeshFullySharded make_mesh_fully_sharded(Communicator& data_parallel, const TrainConfig& config,
                                         ::torch::nn::Sequential& layers, const parallel::LayerPartition& partition,
                                         int stage) {
  check_every_piece_holds_parameters(data_parallel, layers, partition);
  ::torch::nn::Sequential own;
  std::vector<torch::ShardedUnit> units;
  MeshFullySharded built{.chunk_units = {0}, .units_inside_chunks = config.zero_unit_layers > 0};
  for (int chunk = 0; chunk < partition.chunks; ++chunk) {
    const parallel::LayerRange& range = partition.range(stage, chunk);
    int begin = static_cast<int>(own->size());
    auto it = layers->begin() + range.begin;
    for (int i = range.begin; i < range.end; ++i, ++it) own->push_back("layer" + std::to_string(i), *it);
    int end = static_cast<int>(own->size());
    if (built.units_inside_chunks) {
      for (torch::ShardedUnit& unit : units_inside_chunk(own, begin, end, chunk, config.zero_unit_layers)) {
        units.push_back(std::move(unit));
      }
    } else {
      units.push_back({.name = "chunk" + std::to_string(chunk), .begin = begin, .end = end});
    }
    built.chunk_units.push_back(static_cast<int>(units.size()));
  }
  built.module = std::make_unique<torch::FullyShardedModule>(
      data_parallel, own, std::move(units),
      [&config](std::vector<::torch::Tensor> shards) { return make_optimizer(config, std::move(shards)); },
      fully_sharded_options(config));  // --zero-pp qwz / qgz; hpz is refused on the mesh (train_config.cc)
  return built;
}

void average_replicated_shard_gradients(torch::FullyShardedModule& sharded, const std::set<std::string>& replicated,
                                        Communicator& tp) {
  if (tp.size() == 1) return;
  const engine::ShardLayout& layout = sharded.layout();
  const int rank = sharded.communicator().rank();
  std::vector<::torch::Tensor> slices;  // views of the shard gradients
  for (int u = 0; u < sharded.unit_count(); ++u) {
    ::torch::Tensor grad = sharded.shard(u).grad();
    for (const engine::ShardPiece& piece : layout.buffers[static_cast<std::size_t>(u)].shard_pieces[static_cast<std::size_t>(rank)]) {
      if (replicated.count(layout.params[static_cast<std::size_t>(piece.param)].name) == 0) continue;
      slices.push_back(grad.narrow(0, piece.shard_offset, piece.length));
    }
  }
  if (slices.empty()) return;  // the same on every TP rank: the same layout
  ::torch::Tensor flat = ::torch::cat(slices);
  allreduce(tp, flat.data_ptr(), flat.data_ptr(), flat.numel(), DType::kF32, ReduceOp::kAvg);
  std::int64_t offset = 0;
  for (::torch::Tensor& slice : slices) {
    slice.copy_(flat.narrow(0, offset, slice.numel()));
    offset += slice.numel();
  }
}

FullyShardedPipelineStage::FullyShardedPipelineStage(torch::SequentialStage& inner, torch::FullyShardedModule& sharded,
                                                     const MeshFullySharded& built)
    : inner_(inner), sharded_(sharded), chunk_units_(built.chunk_units), units_inside_chunks_(built.units_inside_chunks) {
  const ::torch::ScalarType dtype = sharded_.parameter_dtype();
  if (!units_inside_chunks_ && dtype == ::torch::kFloat32) return;
  // 16-bit storage: the residual stream is bf16 from the embeddings on (bf16 rows, bf16 adds), and
  // crossed the pipeline widened to fp32; narrowed back (exactly) it meets bf16 LayerNorm weights
  // in its dtype, as in one process. With chunk units the call's gather already holds the unit,
  // so forward_units gathers nothing more.
  inner_.set_chunk_runner([this, dtype](int chunk, const ::torch::Tensor& x) {
    ::torch::Tensor input = x.is_floating_point() && dtype != ::torch::kFloat32 ? x.to(dtype) : x;
    return sharded_.forward_units(chunk_units_[static_cast<std::size_t>(chunk)],
                                  chunk_units_[static_cast<std::size_t>(chunk) + 1], input);
  });
}

// The units are released even when the call throws, so a failed step leaves nothing gathered.
template <typename Call>
auto FullyShardedPipelineStage::gathered(int chunk, Call call) {
  int first = chunk_units_[static_cast<std::size_t>(chunk)], last = chunk_units_[static_cast<std::size_t>(chunk) + 1];
  if (!units_inside_chunks_) sharded_.gather_unit(first);
  struct Release {
    torch::FullyShardedModule& sharded;
    int first, last;
    ~Release() {
      for (int u = first; u < last; ++u) sharded.release_unit(u);
    }
  } release{sharded_, first, last};
  return call();
}

parallel::StageTensor FullyShardedPipelineStage::forward(int mb, int chunk, const parallel::StageTensor& input) {
  return gathered(chunk, [&] { return inner_.forward(mb, chunk, input); });
}

parallel::StageTensor FullyShardedPipelineStage::backward_input(int mb, int chunk,
                                                                const parallel::StageTensor& grad_output) {
  return gathered(chunk, [&] { return inner_.backward_input(mb, chunk, grad_output); });
}

void FullyShardedPipelineStage::backward_weight(int mb, int chunk) {
  gathered(chunk, [&] { inner_.backward_weight(mb, chunk); });
}

parallel::StageTensor FullyShardedPipelineStage::backward(int mb, int chunk, const parallel::StageTensor& grad_output) {
  return gathered(chunk, [&] { return inner_.backward(mb, chunk, grad_output); });
}

}  // namespace braid::train
