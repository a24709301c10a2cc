// braid-zero-checkpoint-rank's stage-3 scenarios (zero_checkpoint_scenarios.h): sharded
// checkpoints of a FullyShardedModule resharded n -> m element by element, across the stages, and
// refused without a change when damaged. Both stages wrap the same layers: a Sequential of three
// Linears (8 x 16 + 16, 16 x 4 + 4, 4 x 4 + 4: 232 floats), registered as "layers" in the module
// the ZeroOptimizer's DDP wraps, so that the stage-3 view with the prefix "layers." names the
// parameters as stage 1 does. Stage 3's units are padded at every world size (its last unit of 20
// floats holds only padding on ranks 2 and 3 of 4); stage 1's buckets (up to 131 floats) list the
// parameters in reverse order.
#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "zero_checkpoint_scenarios.h"

#include "braid/base/crc32c.h"
#include "braid/base/error.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/fully_sharded.h"
#include "braid/torch/zero_checkpoint.h"
#include "braid/torch/zero_optimizer.h"
#include "braid/torch/zero_optimizer_state.h"

namespace {

namespace fs = std::filesystem;
namespace nn = torch::nn;
using braid::torch::ZeroCheckpointView;

struct Wrapped : nn::Module {
  explicit Wrapped(int hidden) : layers(register_module("layers", nn::Sequential())) {
    layers->push_back(nn::Linear(8, hidden));
    layers->push_back(nn::ReLU());
    layers->push_back(nn::Linear(hidden, 4));
    layers->push_back(nn::Linear(4, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) { return layers->forward(x); }
  nn::Sequential layers;
};

// Either stage over the same layers, built from `seed` and stepped once (so that the optimizer
// has state).
struct Subject {
  std::shared_ptr<Wrapped> model;
  std::unique_ptr<braid::torch::FullyShardedModule> sharded;  // stage 3
  std::unique_ptr<braid::torch::DistributedDataParallel> ddp;  // stage 1
  std::unique_ptr<braid::torch::ZeroOptimizer> zero;

  ZeroCheckpointView view() { return sharded ? braid::torch::checkpoint_view(*sharded, "layers.") : braid::torch::checkpoint_view(*zero); }
};

Subject stepped(braid::Communicator& comm, int stage, const std::string& kind, int seed, int hidden = 16) {
  torch::manual_seed(seed);
  Subject s{.model = std::make_shared<Wrapped>(hidden)};
  auto factory = [&kind](std::vector<torch::Tensor> shards) { return make_checkpoint_optimizer(kind, std::move(shards)); };
  torch::manual_seed(100 + comm.rank());
  torch::Tensor x = torch::randn({4, 8});
  if (stage == 3) {
    s.sharded = std::make_unique<braid::torch::FullyShardedModule>(
        comm, s.model->layers, braid::torch::units_of_layers_with_parameters(s.model->layers), factory);
    s.sharded->forward(x).pow(2).mean().backward();
    s.sharded->synchronize();
    s.sharded->step();
  } else {
    s.ddp = std::make_unique<braid::torch::DistributedDataParallel>(
        comm, s.model, braid::torch::DdpOptions{.bucket_cap = "0.0005", .zero_stage = 1});
    s.zero = std::make_unique<braid::torch::ZeroOptimizer>(*s.ddp, factory);
    s.zero->zero_grad();
    s.model->forward(x).pow(2).mean().backward();
    s.ddp->synchronize();
    s.zero->step();
  }
  return s;
}

// The known value of tensor k (0: the parameter, k > 0: state tensor k - 1) at elements
// [begin, begin + length) of parameter `name`: a function of the element's place in the model
// with the parameters in name order, so it reads the same whichever stage lays them out.
torch::Tensor pattern(const ZeroCheckpointView& view, const std::string& name, std::int64_t begin, std::int64_t length,
                      int k) {
  std::map<std::string, std::int64_t> counts;
  for (const auto& buffer : view.buffers) {
    for (const auto& p : buffer.params) counts[p.name] = p.count;
  }
  std::int64_t start = 0;
  for (const auto& [other, count] : counts) {
    if (other == name) break;
    start += count;
  }
  torch::Tensor i = torch::arange(start + begin, start + begin + length, torch::kInt64);
  return ((i + k * 7919) % 65536).to(torch::kFloat32) / 256.0f;
}

// What this rank's shard of buffer b holds under the pattern (zero where no parameter is).
torch::Tensor expected_shard(const ZeroCheckpointView& view, const braid::engine::ShardLayout& layout, std::size_t b,
                             int k) {
  torch::Tensor shard = torch::zeros_like(view.shards[b]);
  for (const braid::engine::ShardPiece& piece : layout.buffers[b].shard_pieces[static_cast<std::size_t>(view.comm->rank())]) {
    shard.narrow(0, piece.shard_offset, piece.length)
        .copy_(pattern(view, layout.params[static_cast<std::size_t>(piece.param)].name, piece.param_offset, piece.length, k));
  }
  return shard;
}

void set_known_values(const ZeroCheckpointView& view, const std::string& kind) {
  torch::NoGradGuard no_grad;
  braid::engine::ShardLayout layout = view.layout();
  for (std::size_t b = 0; b < view.shards.size(); ++b) {
    view.shards[b].copy_(expected_shard(view, layout, b, 0));
    braid::torch::ShardState state = braid::torch::shard_state(*view.optimizer, kind, view.shards[b]);
    if (!state.present) continue;
    for (std::size_t k = 0; k < state.tensors.size(); ++k) state.tensors[k] = expected_shard(view, layout, b, int(k) + 1);
    state.step = 7;
    braid::torch::set_shard_state(*view.optimizer, kind, view.shards[b], state);
  }
}

// Every shard (padding included), every state tensor and step of a shard with parameter elements,
// and every whole parameter (stage 3: gathered; stage 1: the allgathered flat parameters).
int faults_after_load(Subject& s, const std::string& kind) {
  ZeroCheckpointView view = s.view();
  braid::engine::ShardLayout layout = view.layout();
  int faults = 0;
  for (std::size_t b = 0; b < view.shards.size(); ++b) {
    faults += !torch::equal(view.shards[b], expected_shard(view, layout, b, 0));
    if (layout.buffers[b].shard_pieces[static_cast<std::size_t>(view.comm->rank())].empty()) continue;
    braid::torch::ShardState state = braid::torch::shard_state(*view.optimizer, kind, view.shards[b]);
    faults += !state.present || (kind != "sgd" && state.step != 7);
    for (std::size_t k = 0; k < state.tensors.size(); ++k) {
      faults += !torch::equal(state.tensors[k], expected_shard(view, layout, b, int(k) + 1));
    }
  }
  torch::OrderedDict<std::string, torch::Tensor> whole;
  if (s.sharded) {
    for (const auto& item : s.sharded->full_state_dict()) whole.insert("layers." + item.key(), item.value());
  } else {
    for (const auto& item : s.model->named_parameters()) whole.insert(item.key(), item.value().detach());
  }
  for (const auto& item : whole) {
    faults += !torch::equal(item.value().reshape({-1}), pattern(view, item.key(), 0, item.value().numel(), 0));
  }
  return faults;
}

const char* stage_name(int stage) { return stage == 3 ? "stage3" : "stage1"; }

// Saves each stage at n = 1..W; loads stage 3's and stage 1's checkpoints into stage 3, and stage
// 3's into stage 1, at m = 1..W.
void reshard3(braid::Communicator& world, const std::string& dir) {
  auto where = [&dir](const std::string& kind, int stage, int n) { return fmt::format("{}/{}-{}-{}", dir, kind, stage, n); };
  for (const std::string kind : {"sgd", "adam-amsgrad"}) {
    for (int n = 1; n <= world.size(); ++n) {
      if (std::optional<braid::Communicator> comm = first_ranks(world, n)) {
        for (int stage : {3, 1}) {
          Subject s = stepped(*comm, stage, kind, 1);
          set_known_values(s.view(), kind);
          braid::torch::save_zero_checkpoint(s.view(), where(kind, stage, n), {.position = {.step = 1}}, "test");
        }
      }
      world.barrier();
    }
    for (int m = 1; m <= world.size(); ++m) {
      for (int n = 1; n <= world.size(); ++n) {
        for (auto [saved_by, into] : {std::pair{3, 3}, std::pair{1, 3}, std::pair{3, 1}}) {
          if (std::optional<braid::Communicator> comm = first_ranks(world, m)) {
            Subject s = stepped(*comm, into, kind, 2);  // another initialisation and state, overwritten by the load
            braid::torch::load_zero_checkpoint(s.view(), where(kind, saved_by, n), "test");
            std::printf("RESHARD3 %s %s %d -> %s %d faults %d\n", kind.c_str(), stage_name(saved_by), n,
                        stage_name(into), m, faults_after_load(s, kind));
          }
          world.barrier();
        }
      }
    }
  }
}

// A CRC32C of everything a load into stage 3 may write: the shards and the optimizer state.
std::uint32_t state_digest(const ZeroCheckpointView& view, const std::string& kind) {
  std::uint32_t crc = 0;
  auto add = [&crc](const torch::Tensor& t) {
    torch::Tensor c = t.contiguous();
    crc = braid::crc32c(c.data_ptr(), static_cast<std::size_t>(c.nbytes()), crc);
  };
  for (const torch::Tensor& shard : view.shards) {
    add(shard.detach());
    braid::torch::ShardState state = braid::torch::shard_state(*view.optimizer, kind, shard);
    for (const torch::Tensor& t : state.tensors) add(t);
    add(torch::tensor({state.step}));
  }
  return crc;
}

// Flips a bit inside rank 0's first parameter bytes (`needle`, found in the file): the middle of
// a shard file this small may fall in the zip's alignment padding, which no reader looks at.
void flip_inside(const std::string& file, const std::string& needle) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t at = bytes.find(needle);
  if (at == std::string::npos) throw std::runtime_error("the parameter bytes are not in " + file);
  bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

void refused3(braid::Communicator& comm, const std::string& dir) {
  const std::string kind = "adam-amsgrad";
  std::string needle;  // rank 0's first 4 floats of its first shard
  {
    Subject s = stepped(comm, 3, kind, 1);
    torch::Tensor first = s.view().shards[0];
    needle.assign(static_cast<const char*>(first.data_ptr()), 4 * sizeof(float));
    braid::torch::save_zero_checkpoint(s.view(), dir + "/intact", {.position = {.step = 1}}, "test");
  }
  for (const std::string name : {"flipped-byte", "truncated-shard", "missing-shard", "damaged-manifest", "another-model"}) {
    std::string copy = dir + "/" + name;
    if (comm.rank() == 0) {
      fs::copy(dir + "/intact", copy, fs::copy_options::recursive);
      if (name == "flipped-byte") {
        flip_inside(copy + "/zero-1-rank0.pt", needle);
      } else {
        damage_checkpoint(name, copy, comm.size());
      }
    }
    comm.barrier();
    Subject s = stepped(comm, 3, kind, 2, name == "another-model" ? 17 : 16);
    std::uint32_t before = state_digest(s.view(), kind);
    std::string error = "none";
    try {
      braid::torch::load_zero_checkpoint(s.view(), copy, "test");
    } catch (const braid::Error& e) {
      error = braid::error_kind_name(e.kind());
      std::printf("MESSAGE %s: %s\n", name.c_str(), e.what());
    }
    std::printf("REFUSED3 %s %s unchanged %d\n", name.c_str(), error.c_str(), state_digest(s.view(), kind) == before);
  }
}

}  // namespace

bool is_fully_sharded_checkpoint_scenario(const std::string& name) { return name == "reshard3" || name == "refused3"; }

void run_fully_sharded_checkpoint_scenario(braid::Communicator& world, const std::string& name, const std::string& dir) {
  if (name == "reshard3") reshard3(world, dir);
  if (name == "refused3") refused3(world, dir);
}
