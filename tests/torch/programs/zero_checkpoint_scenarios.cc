// Rank program of the sharded ZeRO checkpoint tests (tests/torch/train_zero_checkpoint_test.cc),
// through the library directly (torch/zero_checkpoint.h):
//   braid-zero-checkpoint-rank reshard DIR   for SGD (momentum), Adam (amsgrad) and AdamW: a
//       ZeroOptimizer whose parameters and state are known functions of each element's place in
//       its bucket is saved at n = 1..W ranks (sub-communicators of the world of W) and every
//       checkpoint loaded at m = 1..W: "RESHARD <optimizer> <n> -> <m> faults F" per rank of m,
//       and at W into other buckets (one per parameter): "REGROUPED ... buckets 6 faults F"
//   braid-zero-checkpoint-rank refused DIR   a checkpoint damaged (a flipped byte, a truncated or
//       missing shard file, a damaged manifest) or of another model, loaded into a ZeroOptimizer
//       that has trained a step: "REFUSED <case> <error kind> unchanged <1|0>" per rank, 1 when
//       its parameters and optimizer state are bit for bit what they were before the load
//   braid-zero-checkpoint-rank reshard3|refused3 DIR   the same for stage 3's FullyShardedModule,
//       and across the stages (fully_sharded_checkpoint_scenarios.cc)
// Prints "PASS <scenario>" at the end; an unexpected braid::Error as "ERROR <kind>: <message>".
#include "zero_checkpoint_scenarios.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "braid/base/crc32c.h"
#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/zero_checkpoint.h"
#include "braid/torch/zero_optimizer.h"
#include "braid/torch/zero_optimizer_state.h"

namespace {

namespace fs = std::filesystem;
namespace nn = torch::nn;
using braid::torch::ZeroOptimizer;

struct Net : nn::Module {
  explicit Net(int hidden)
      : fc1(register_module("fc1", nn::Linear(8, hidden))),
        fc2(register_module("fc2", nn::Linear(hidden, 4))),
        fc3(register_module("fc3", nn::Linear(4, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc3->forward(fc2->forward(torch::relu(fc1->forward(x)))); }
  nn::Linear fc1, fc2, fc3;
};

// One ZeRO-1 model: 232 floats in buckets of up to 131 (fc1.weight alone, the rest together),
// padded on 3 and 4 ranks.
struct Trained {
  std::shared_ptr<Net> model;
  std::unique_ptr<braid::torch::DistributedDataParallel> ddp;
  std::unique_ptr<ZeroOptimizer> zero;
};

// Built and stepped once (so that the optimizer has state), from `seed`'s initialisation.
// cap "0.0005" MiB: buckets of up to 131 floats; "0.00001": every parameter a bucket of its own.
Trained train_one_step(braid::Communicator& comm, const std::string& kind, int seed, int hidden = 16,
                       const std::string& cap = "0.0005") {
  torch::manual_seed(seed);
  Trained t{.model = std::make_shared<Net>(hidden)};
  t.ddp = std::make_unique<braid::torch::DistributedDataParallel>(comm, t.model,
                                                                  braid::torch::DdpOptions{.bucket_cap = cap, .zero_stage = 1});
  t.zero = std::make_unique<ZeroOptimizer>(*t.ddp, [&](std::vector<torch::Tensor> shards) {
    return make_checkpoint_optimizer(kind, std::move(shards));
  });
  t.zero->zero_grad();
  torch::manual_seed(100 + comm.rank());
  t.model->forward(torch::randn({4, 8})).pow(2).mean().backward();
  t.ddp->synchronize();
  t.zero->step();
  return t;
}

// The known value of tensor k (0: the parameter, k > 0: state tensor k - 1) at elements
// [begin, end) of bucket b: a function of the element's place in the model's bucket order (the
// buckets before b, then its offset in b), so that it reads the same whatever the bucket cap;
// exact in float, different for every (element, k) of this small model.
torch::Tensor pattern(ZeroOptimizer& zero, int b, std::int64_t begin, std::int64_t end, int k) {
  std::int64_t before = 0;
  for (int a = 0; a < b; ++a) before += zero.ddp().grad_sync().plan().buckets[static_cast<std::size_t>(a)].elements;
  torch::Tensor i = torch::arange(before + begin, before + end, torch::kInt64);
  return ((i + k * 7919) % 65536).to(torch::kFloat32) / 256.0f;
}

void set_known_values(ZeroOptimizer& zero, const std::string& kind) {
  torch::NoGradGuard no_grad;
  for (int b = 0; b < zero.bucket_count(); ++b) {
    const braid::BucketShard& s = zero.bucket_shard(b);
    if (s.end == s.begin) continue;
    zero.shard(b).copy_(pattern(zero, b, s.begin, s.end, 0));
    braid::torch::ShardState state = braid::torch::shard_state(zero.inner(), kind, zero.shard(b));
    for (std::size_t k = 0; k < state.tensors.size(); ++k) state.tensors[k] = pattern(zero, b, s.begin, s.end, int(k) + 1);
    state.step = 7;
    braid::torch::set_shard_state(zero.inner(), kind, zero.shard(b), state);
  }
}

// After a load: every rank's whole flat parameters are the pattern (the allgather), the padding
// 0, and its shard's state the pattern of its new range.
int faults_after_load(ZeroOptimizer& zero, const std::string& kind) {
  int faults = 0;
  for (int b = 0; b < zero.bucket_count(); ++b) {
    std::int64_t elements = zero.ddp().grad_sync().plan().buckets[static_cast<std::size_t>(b)].elements;
    const torch::Tensor& flat = zero.flat_parameters(b);
    faults += !torch::equal(flat.slice(0, 0, elements), pattern(zero, b, 0, elements, 0));
    faults += static_cast<int>(flat.slice(0, elements).ne(0).sum().item<std::int64_t>());
    const braid::BucketShard& s = zero.bucket_shard(b);
    if (s.end == s.begin) continue;
    braid::torch::ShardState state = braid::torch::shard_state(zero.inner(), kind, zero.shard(b));
    faults += !state.present || (kind != "sgd" && state.step != 7);
    for (std::size_t k = 0; k < state.tensors.size(); ++k) {
      faults += !torch::equal(state.tensors[k], pattern(zero, b, s.begin, s.end, int(k) + 1));
    }
  }
  return faults;
}

// Saves at n = 1..W and loads each at m = 1..W (buckets of up to 131 floats), and at m = W into
// one bucket per parameter (other bucket boundaries: the re-cut crosses them).
void reshard(braid::Communicator& world, const std::string& dir) {
  for (const std::string kind : {"sgd", "adam-amsgrad", "adamw"}) {
    for (int n = 1; n <= world.size(); ++n) {
      if (std::optional<braid::Communicator> comm = first_ranks(world, n)) {
        Trained t = train_one_step(*comm, kind, 1);
        set_known_values(*t.zero, kind);
        braid::torch::save_zero_checkpoint(*comm, fmt::format("{}/{}-{}", dir, kind, n), *t.zero, {.step = 1}, "test");
      }
      world.barrier();
    }
    for (int m = 1; m <= world.size(); ++m) {
      for (int n = 1; n <= world.size(); ++n) {
        if (std::optional<braid::Communicator> comm = first_ranks(world, m)) {
          Trained t = train_one_step(*comm, kind, 2);  // another initialisation and state, overwritten by the load
          braid::torch::load_zero_checkpoint(*comm, fmt::format("{}/{}-{}", dir, kind, n), *t.zero, "test");
          std::printf("RESHARD %s %d -> %d faults %d\n", kind.c_str(), n, m, faults_after_load(*t.zero, kind));
        }
        world.barrier();
      }
    }
    for (int n = 1; n <= world.size(); ++n) {
      Trained t = train_one_step(world, kind, 2, 16, "0.00001");
      braid::torch::load_zero_checkpoint(world, fmt::format("{}/{}-{}", dir, kind, n), *t.zero, "test");
      std::printf("REGROUPED %s %d -> %d buckets %d faults %d\n", kind.c_str(), n, world.size(), t.zero->bucket_count(),
                  faults_after_load(*t.zero, kind));
    }
  }
}

// A CRC32C of everything a load may write: the flat parameters and the optimizer state.
std::uint32_t state_digest(ZeroOptimizer& zero, const std::string& kind) {
  std::uint32_t crc = 0;
  auto add = [&crc](const torch::Tensor& t) {
    torch::Tensor c = t.contiguous();
    crc = braid::crc32c(c.data_ptr(), static_cast<std::size_t>(c.nbytes()), crc);
  };
  for (int b = 0; b < zero.bucket_count(); ++b) {
    add(zero.flat_parameters(b));
    braid::torch::ShardState state = braid::torch::shard_state(zero.inner(), kind, zero.shard(b));
    for (const torch::Tensor& t : state.tensors) add(t);
    add(torch::tensor({state.step}));
  }
  return crc;
}

void refused(braid::Communicator& comm, const std::string& dir) {
  const std::string kind = "adam-amsgrad";
  {
    Trained t = train_one_step(comm, kind, 1);
    braid::torch::save_zero_checkpoint(comm, dir + "/intact", *t.zero, {.step = 1}, "test");
  }
  for (const std::string name : {"flipped-byte", "truncated-shard", "missing-shard", "damaged-manifest", "another-model"}) {
    std::string copy = dir + "/" + name;
    if (comm.rank() == 0) {
      fs::copy(dir + "/intact", copy, fs::copy_options::recursive);
      damage_checkpoint(name, copy, comm.size());
    }
    comm.barrier();
    Trained t = train_one_step(comm, kind, 2, name == "another-model" ? 17 : 16);
    std::uint32_t before = state_digest(*t.zero, kind);
    std::string error = "none";
    try {
      braid::torch::load_zero_checkpoint(comm, copy, *t.zero, "test");
    } catch (const braid::Error& e) {
      error = braid::error_kind_name(e.kind());
      std::printf("MESSAGE %s: %s\n", name.c_str(), e.what());
    }
    std::printf("REFUSED %s %s unchanged %d\n", name.c_str(), error.c_str(), state_digest(*t.zero, kind) == before);
  }
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_checkpoint_optimizer(const std::string& kind, std::vector<torch::Tensor> params) {
  if (kind == "sgd") return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(0.1).momentum(0.9));
  if (kind == "adam-amsgrad") {
    return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(0.01).amsgrad(true));
  }
  return std::make_unique<torch::optim::AdamW>(std::move(params), torch::optim::AdamWOptions(0.01));
}

std::optional<braid::Communicator> first_ranks(braid::Communicator& world, int n) {
  return world.split(world.rank() < n ? 0 : braid::Communicator::kUndefinedColor, world.rank());
}

void damage_checkpoint(const std::string& name, const std::string& dir, int world) {
  std::string shard0 = dir + "/zero-1-rank0.pt";
  if (name == "flipped-byte" || name == "damaged-manifest") {
    std::string file = name == "flipped-byte" ? shard0 : dir + "/zero-checkpoint.json";
    std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
    auto middle = static_cast<std::streamoff>(fs::file_size(file) / 2);
    char c = 0;
    io.seekg(middle);
    io.get(c);
    io.seekp(middle);
    io.put(static_cast<char>(c ^ 0x10));
  } else if (name == "truncated-shard") {
    fs::resize_file(shard0, fs::file_size(shard0) / 2);
  } else if (name == "missing-shard") {
    fs::remove(fmt::format("{}/zero-1-rank{}.pt", dir, world - 1));
  }
}


int main(int argc, char** argv) {
  using Scenario = void (*)(braid::Communicator&, const std::string&);
  const std::map<std::string, Scenario> scenarios = {{"reshard", reshard}, {"refused", refused}};
  auto scenario = argc == 3 ? scenarios.find(argv[1]) : scenarios.end();
  bool stage3 = argc == 3 && is_fully_sharded_checkpoint_scenario(argv[1]);
  if (scenario == scenarios.end() && !stage3) {
    std::fprintf(stderr, "usage: braid-zero-checkpoint-rank reshard|refused|reshard3|refused3 DIR\n");
    return 2;
  }
  try {
    braid::Communicator comm = braid::Communicator::init();
    if (stage3) {
      run_fully_sharded_checkpoint_scenario(comm, argv[1], argv[2]);
    } else {
      scenario->second(comm, argv[2]);
    }
    std::printf("PASS %s\n", argv[1]);
  } catch (const braid::Error& e) {  // the scenarios catch the errors they expect
    std::printf("ERROR %s: %s\n", braid::error_kind_name(e.kind()), e.what());
  }
  std::fflush(stdout);
  return 0;
}
