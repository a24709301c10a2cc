#include "braid/torch/distributed_sampler.h"

#include <fmt/format.h>

#include <numeric>
#include <utility>

#include "braid/base/error.h"
#include "braid/base/splitmix64.h"

namespace braid::torch {

DistributedSampler::DistributedSampler(std::int64_t dataset_size, int world, int rank, SamplerOptions options)
    : size_(dataset_size), world_(world), rank_(rank), options_(options) {
  ErrorContext context{.rank = rank, .op = "DistributedSampler"};
  if (world < 1) throw InvalidArgument(context, fmt::format("world size {} (must be at least 1)", world));
  if (rank < 0 || rank >= world) throw InvalidArgument(context, fmt::format("rank {} outside [0, {})", rank, world));
  if (dataset_size < world) {
    throw InvalidArgument(context, fmt::format("the dataset has {} samples, fewer than the {} ranks: some rank would "
                                               "have nothing to train on",
                                               dataset_size, world));
  }
}

std::vector<std::int64_t> DistributedSampler::permutation(std::int64_t epoch) const {
  std::vector<std::int64_t> order(static_cast<std::size_t>(size_));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!options_.shuffle) return order;
  // Fisher-Yates on SplitMix64 seeded from (seed, epoch): the same permutation on every rank
  // and every platform (std::shuffle's algorithm is implementation-defined).
  SplitMix64 rng(options_.seed ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(epoch + 1)));
  for (std::size_t i = order.size(); i > 1; --i) {
    std::size_t j = uniform_below(rng, i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::int64_t DistributedSampler::shard_size() const {
  return options_.drop_last ? size_ / world_ : (size_ + world_ - 1) / world_;
}

std::vector<std::int64_t> DistributedSampler::shard(std::int64_t epoch) const {
  std::vector<std::int64_t> order = permutation(epoch);
  std::int64_t per_rank = shard_size();
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(per_rank));
  for (std::int64_t i = 0; i < per_rank; ++i) {
    std::int64_t position = i * world_ + rank_;  // < size_ * world_ when padding: wrap around
    mine.push_back(order[static_cast<std::size_t>(position % size_)]);
  }
  return mine;
}

}  // namespace braid::torch
