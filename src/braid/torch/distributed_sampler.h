// DistributedSampler: which samples each rank trains on in an epoch (PyTorch's
// DistributedSampler, with a shuffle that is the same on every platform).
//
// Every rank builds the same permutation of 0..N-1 from (seed, epoch) and takes every world-th
// index starting at its rank, so the ranks' shards are disjoint and, together, cover the epoch:
//   - drop_last = false (default): the permutation is padded by wrapping around to its start
//     until it divides by the world size; up to world-1 samples are seen twice per epoch.
//   - drop_last = true: the last N mod world samples of the permutation are dropped; up to
//     world-1 samples are not seen this epoch (a different few each epoch when shuffling).
// Striding (rather than contiguous blocks) makes batch t of every rank, taken together, the
// samples perm[t*B .. (t+1)*B) of the global permutation: N ranks with batch B/N see exactly the
// batches one process with batch B would see, which is what makes data parallelism equivalent
// to a bigger batch.
//
// This header does not include torch: it is index arithmetic.
#pragma once

#include <cstdint>
#include <vector>

namespace braid::torch {

struct SamplerOptions {
  std::uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  // Throws InvalidArgument for a negative dataset size, a world size below 1, a rank outside
  // [0, world), or a dataset smaller than the world size (some rank would get no sample).
  DistributedSampler(std::int64_t dataset_size, int world, int rank, SamplerOptions options = {});

  // The permutation every rank agrees on for `epoch` (identity when not shuffling).
  std::vector<std::int64_t> permutation(std::int64_t epoch) const;
  // This rank's samples for `epoch`, in the order to train on them.
  std::vector<std::int64_t> shard(std::int64_t epoch) const;
  // Samples per rank per epoch (the same on every rank).
  std::int64_t shard_size() const;

  std::int64_t dataset_size() const { return size_; }
  const SamplerOptions& options() const { return options_; }

 private:
  std::int64_t size_;
  int world_;
  int rank_;
  SamplerOptions options_;
};

}  // namespace braid::torch
