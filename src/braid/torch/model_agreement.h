// Proving every rank built the same model before any gradient is averaged: DDP would otherwise
// sum mismatched tensors element by element and train garbage without a word.
//
// Rank 0's list of (name, dtype, shape) is broadcast; every rank compares it with its own and
// the ranks agree, through one allgather, on the first rank that differs. Then every rank
// throws the same InvalidArgument naming that rank and its first differing parameter, so no
// rank is left waiting in a later collective. Torch-free: parameters are described by value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"

namespace braid::torch {

struct ParamSignature {
  std::string name;
  std::string dtype;                // torch's name: "float", "long", ...
  std::vector<std::int64_t> shape;
  bool operator==(const ParamSignature&) const = default;
};

std::string describe(const ParamSignature& param);  // "fc1.weight float [1024, 784]"

// Throws InvalidArgument (same message on every rank) when some rank's list differs from rank
// 0's: naming the rank, the index and both descriptions, or "missing"/"extra" for a list that
// is shorter or longer.
void check_same_model(Communicator& comm, const std::vector<ParamSignature>& params, const std::string& what);

}  // namespace braid::torch
