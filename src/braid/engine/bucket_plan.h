// Bucket assignment: which gradients travel together in one allreduce. A pure function of
// (parameter sizes, expected readiness order, byte cap), so a plan is a value that can be
// printed, compared across ranks and tested without a communicator (STYLE.md principle 6:
// PyTorch's reducer.cpp fuses this with everything else; here the assigner is on its own and
// GradSync, the issuer, consumes its output).
//
// Why buckets at all: one allreduce per gradient pays the per-message latency thousands of
// times; one allreduce for the whole model cannot start before backward ends. Buckets of a few
// MiB, filled in the order gradients become ready, let the first allreduces run while backward
// is still producing the later gradients (DDP's reducer; ../shared/seeds/002).
//
// Packing rule: params are taken in `order`; the open bucket is closed when adding the next
// param would make it exceed cap_bytes, so every bucket is within the cap except one holding a
// single param that is larger than the cap by itself. Zero-size params never close a bucket;
// they join the open one. DDP closes a bucket only *after* it reaches the cap (so its buckets
// overshoot by up to one param); we close before, so the cap is a true bound a user can size
// buffers and messages by. A change of element size also closes the bucket, because a bucket
// is one flat buffer of one element type (GradSync registers f32 only; DDP keys buckets by
// dtype and device the same way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace braid::engine {

struct ParamInfo {
  std::string name;          // for error messages only
  std::int64_t count = 0;    // elements, >= 0
  std::size_t element_bytes = 4;
  // Travels in a bucket of its own: PowerSGD compresses a gradient as a matrix, which a flat
  // bucket of several parameters is not (GradSync sets it for matrices when the policy may
  // choose powersgd).
  bool alone = false;
};

struct Bucket {
  std::vector<int> params;             // parameter ids (registration order), in bucket order
  std::vector<std::int64_t> offsets;   // element offset of each param inside the bucket buffer
  std::int64_t elements = 0;           // sum of the params' counts
  std::uint64_t bytes = 0;             // elements * element size
  bool operator==(const Bucket&) const = default;
};

struct BucketPlan {
  std::vector<Bucket> buckets;  // in launch order: the order they are expected to complete
  std::vector<int> bucket_of;   // per param id: its bucket
  std::vector<int> slot_of;     // per param id: its index inside buckets[bucket_of[id]].params
  std::uint64_t cap_bytes = 0;
  // Ranks compare plans (e.g. after a rebuild from rank 0's order) to prove they agree.
  bool operator==(const BucketPlan&) const = default;

  int param_count() const { return static_cast<int>(bucket_of.size()); }
};

// Packs `params` into buckets in `order` (see the file comment). Throws InvalidArgument when
// order is not a permutation of 0..params.size()-1 (naming the repeated or out-of-range id, or
// the size difference), cap_bytes is 0, a count is negative, an element size is 0, or a
// param's byte size overflows 64 bits.
BucketPlan plan_buckets(std::span<const ParamInfo> params, std::span<const int> order, std::uint64_t cap_bytes);

// The expected readiness order before anything was observed: backward produces gradients from
// the last layer to the first, so n-1, ..., 0 (DDP builds its initial buckets the same way).
std::vector<int> reverse_registration_order(int n);

// Throws InvalidArgument unless `order` is a permutation of 0..n-1. For orders read off the
// wire (rank 0's observed order, broadcast for a rebuild) as well as plan_buckets' own check.
void check_permutation(std::span<const int> order, int n);

// The automatic cap of ../shared/seeds/002 ("bucket_size 动态调整": optimal_bucket_size =
// max(4MB, total_parameters / (16 * num_gpus))): max(4 MiB, P / (16 N)) with P the total
// gradient bytes and N the world size. The seed writes "total_parameters" but compares it
// with 4MB, so P is read as bytes. Reasoning: about 16 buckets per rank-share of the model
// gives enough pipelining for overlap, and 4 MiB keeps each message well past the
// latency-bound range. The seed also advises staying under ~8 MB "for TCP"; that limit has no
// basis in TCP (a stream has no packet-size cap) and is not applied. Throws InvalidArgument
// for world_size < 1.
std::uint64_t auto_bucket_bytes(std::uint64_t total_param_bytes, int world_size);

// A cap as users write it: a positive number of MiB ("25", "4", "0.5"; DDP's bucket_cap_mb is
// MiB too: bucket_cap_mb * 1024 * 1024 bytes) or "auto" (auto_bucket_bytes). Throws
// InvalidArgument for anything else, zero, negative, or a cap under one byte or over 2^50.
std::uint64_t parse_bucket_cap(std::string_view text, std::uint64_t total_param_bytes, int world_size);

// One line per bucket, for logs and test failures:
//   "3 buckets, cap 1048576 bytes, 5 params
//    bucket 0: 262144 elements, 1048576 bytes, params [4 3]
//    ..."
std::string describe(const BucketPlan& plan);

}  // namespace braid::engine
