// Shard layout for ZeRO (issue 19, item 1): the parameters laid out in flat buffers, each
// buffer partitioned into equal shards over the data-parallel group, and the maps between a
// parameter's elements and the shards that hold them. A pure function of (parameters, world
// size, alignment), so a layout is a value that is printed, compared across ranks and tested
// without a communicator (STYLE.md principle 6, like bucket_plan.h). The stages consume it:
// stage 1/2 reduce-scatter gradient buffers into each rank's shard, stage 3 allgathers a
// group's buffer before its module runs, checkpoints save shards and reshard on load.
//
// Flat buffers. Parameters with the same (group, element size) share one flat buffer, in model
// order; buffers are numbered by their first parameter. One element size per buffer because a
// buffer is one typed allocation and one collective's operand (DDP keys buckets by dtype the
// same way). Groups are the caller's: stage 3 gives each module its own group so that it
// gathers one module's buffer at a time; stage 1/2 put everything in group 0.
//
// Offsets. Inside a buffer each parameter starts at a multiple of `alignment_bytes` (default
// 64): a cache line, one AVX-512 load, and the unit the collectives' kernels and chunking work
// in, so a parameter's view into the gathered buffer is as aligned as a fresh allocation.
// Zero-size parameters sit at the aligned cursor and take no room. The offsets depend on the
// parameters and the alignment only, never on the world size: a flat buffer reads the same at
// every world size, and only its tail padding changes (which makes resharding a re-cut).
//
// Shards. A buffer of E used elements (the end of its last parameter) is padded at the tail to
// n x S elements, S = round_up(ceil(E / n), Q), Q = lcm(alignment_bytes / element_bytes,
// shard_elements_multiple). Every rank's shard has S elements because reduce-scatter and
// allgather move equal blocks; S is a multiple of the alignment so that every shard (rank r's
// starts at r x S) is aligned too, in the full buffer and as a rank's own allocation. A caller
// that splits a shard further (a hierarchical reduce-scatter inside a host, a codec's block)
// asks for shard_elements_multiple; the buffer itself is always a multiple of n elements.
// Guaranteed bounds, per buffer: the tail padding n x S - E is at most n x Q - 1 elements
// (< n x alignment_bytes when shard_elements_multiple is 1), and the padding between
// parameters is less than alignment_bytes per non-empty parameter. Both are reported.
//
// Pieces. A parameter's elements [0, count) lie at [offset, offset + count) of its buffer,
// which the shard boundaries (multiples of S) cut into pieces {rank, offset inside the
// parameter, offset inside that rank's shard, length}: one parameter may span several shards,
// one shard may hold pieces of several parameters, a zero-size parameter has no piece, and a
// rank's shard may hold no piece at all (only padding). A parameter's pieces, in order, are
// also the plan that assembles it whole from the shards (a full state_dict).
//
// Resharding (DeepSpeed's "universal checkpoint"): a checkpoint saved as the shards of one
// layout loads into another, at another world size, alignment or grouping, through a copy plan
// computed from the two layouts alone. Only parameter elements are copied (padding is not
// state); copies are coalesced into maximal contiguous runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace braid::engine {

struct ShardParamInfo {
  std::string name;        // for error messages and describe()
  std::int64_t count = 0;  // elements, >= 0
  std::size_t element_bytes = 4;
  int group = 0;           // parameters of equal (group, element_bytes) share a flat buffer
  bool operator==(const ShardParamInfo&) const = default;
};

struct ShardLayoutOptions {
  int world_size = 1;                       // n >= 1: the data-parallel group
  std::size_t alignment_bytes = 64;         // a power of two, a multiple of every element size
  std::int64_t shard_elements_multiple = 1;  // >= 1: every shard's element count is a multiple
  bool operator==(const ShardLayoutOptions&) const = default;
};

// A contiguous run of one parameter that lives in one rank's shard of its buffer.
struct ShardPiece {
  int param = 0;                  // parameter id (model order)
  int rank = 0;                   // the shard holding it
  std::int64_t param_offset = 0;  // element offset inside the parameter
  std::int64_t shard_offset = 0;  // element offset inside that rank's shard
  std::int64_t length = 0;        // elements, > 0
  bool operator==(const ShardPiece&) const = default;
};

struct FlatBuffer {
  int group = 0;
  std::size_t element_bytes = 4;
  std::vector<int> params;             // parameter ids in model order
  std::vector<std::int64_t> offsets;   // per entry of params: element offset in the buffer
  std::int64_t used_elements = 0;      // E: the end of the last parameter
  std::int64_t shard_elements = 0;     // S: every rank's shard
  std::int64_t elements = 0;           // n x S
  std::int64_t padding_elements = 0;   // elements - the sum of the params' counts
  std::int64_t tail_padding_elements = 0;         // elements - used_elements
  std::vector<std::vector<ShardPiece>> shard_pieces;  // per rank: its pieces, by shard offset
  bool operator==(const FlatBuffer&) const = default;
};

struct ShardLayout {
  ShardLayoutOptions options;
  std::vector<ShardParamInfo> params;             // the input, kept to check resharding
  std::vector<FlatBuffer> buffers;
  std::vector<int> buffer_of;                     // per parameter: its buffer
  std::vector<std::int64_t> offset_of;            // per parameter: its offset in that buffer
  std::vector<std::vector<ShardPiece>> pieces_of;  // per parameter: its pieces, by param offset
  // Ranks compare layouts to prove they agree before any shard is exchanged.
  bool operator==(const ShardLayout&) const = default;

  int world_size() const { return options.world_size; }
  int param_count() const { return static_cast<int>(params.size()); }
};

// Lays out `params` (see the file comment). Throws InvalidArgument naming the field (and the
// parameter) for: world_size < 1, alignment_bytes not a power of two in [1, 2^30],
// shard_elements_multiple outside [1, 2^30], a negative count, an element size of 0 or not dividing alignment_bytes, a negative
// group, or sizes that overflow 64 bits.
ShardLayout plan_shard_layout(std::span<const ShardParamInfo> params, const ShardLayoutOptions& options);

// One copy of a resharding plan: `length` elements from the source rank's shard of source
// buffer `source_buffer` at `source_offset` into the target shard at `target_offset`.
struct ShardCopy {
  int source_buffer = 0;
  int source_rank = 0;
  std::int64_t source_offset = 0;
  std::int64_t target_offset = 0;
  std::int64_t length = 0;
  bool operator==(const ShardCopy&) const = default;
};

struct ReshardPlan {
  // copies[b][r]: what fills target rank r's shard of target buffer b, by target offset, each
  // a maximal run (two consecutive copies are never contiguous in both source and target).
  // Target elements no copy writes are padding; the loader zeroes them.
  std::vector<std::vector<std::vector<ShardCopy>>> copies;
  bool operator==(const ReshardPlan&) const = default;

  std::int64_t copied_elements() const;
};

// The plan that turns shards saved under `from` into shards of `to`. Throws InvalidArgument,
// naming the first difference, unless both lay out the same parameters (count, and per
// parameter name, element count and element size); groups, world size and alignment may
// differ.
ReshardPlan plan_reshard(const ShardLayout& from, const ShardLayout& to);

// As plan_reshard, matching the parameters by name instead of by position: `from` may list
// them in another order (ZeRO-1/2 lay a model out in bucket order, stage 3 in module order),
// which is what lets a checkpoint of one stage load into another. Throws InvalidArgument
// naming the first target parameter (in `to`'s order) that is not in `from` or has another
// element count or size, a name that appears twice in either layout, or a source parameter
// the target lacks.
ReshardPlan plan_reshard_by_name(const ShardLayout& from, const ShardLayout& to);

// One line for the options and two per buffer (its parameters as name@offset), for logs and
// for the error when ranks' layouts differ:
//   "shard layout: 3 params, world 4, alignment 16 bytes, shard multiple 1, 1 buffers
//    buffer 0: group 0, 4-byte elements, 4 x 8 elements, 19 used, 15 padding (13 at the tail)
//      params [p0@0 p1@12 p2@12]"
std::string describe(const ShardLayout& layout);

// Copies and elements per target buffer, and each target rank's copies in full.
std::string describe(const ReshardPlan& plan);

}  // namespace braid::engine
