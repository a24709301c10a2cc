// Inputs and references of the compressed-allreduce scenarios: every rank can generate every
// rank's input (a pure function of seed, rank and index), so each rank computes the exact
// allreduce and a local simulation of the compressed scheme without any communication.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "braid/comm/topology.h"
#include "braid/compress/codec_spec.h"

namespace braid::testing {

// Gradient-like values: uniform in (-1, 1) times a magnitude that changes every 300 elements
// over 2^-3 .. 2^3 (blocks of different scale, as layers of a network have), never below
// 2^-13 in magnitude (so fp16 stays in its normal range).
std::vector<float> compressed_input(std::uint64_t seed, int rank, std::size_t count);

// The exact average (or sum) over `ranks` ranks, in double, rounded once.
std::vector<float> exact_allreduce(std::uint64_t seed, int ranks, std::size_t count, bool average);

// What the two-stage scheme (fp16, bf16, int8, sign) without error feedback must produce,
// simulated with the same codecs in one process: bitwise what every rank must hold.
std::vector<float> simulate_two_stage(const compress::CodecSpec& spec, std::uint64_t seed, int ranks, std::size_t count,
                                      bool average);

// The same across hosts (compressed_allreduce_host_striped.cc): each host's fp32 sum of each
// of L shards (averaged over the host), then the two stages over the hosts per shard. Bitwise
// what every rank must hold when hosts have at most two ranks (a sum of two floats does not
// depend on the order; with more, braid's reduce_scatter may add in another order).
std::vector<float> simulate_host_striped(const compress::CodecSpec& spec, std::uint64_t seed, const Topology& topology,
                                         std::size_t count, bool average);

// What topk without error feedback must produce: the decoded selections added in rank order.
std::vector<float> simulate_topk(const compress::CodecSpec& spec, std::uint64_t seed, int ranks, std::size_t count,
                                 bool average);

}  // namespace braid::testing
