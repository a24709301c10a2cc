// Agreement on a few named values over a group, for layers whose ranks must be configured
// alike (the MoE layer's experts, top-k, hidden size, ...): one small allgather, then every rank
// compares every rank's values and, if any differ, all raise the same Mismatch naming each field
// that differs with every rank's value. Internal to parallel/.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "braid/comm/communicator.h"

namespace braid::parallel {

struct AgreedField {
  const char* name;
  std::int64_t value;     // a double travels as its bits (as_double)
  bool as_double = false;
};

AgreedField agreed_double(const char* name, double value);

// Collective over `group`: Mismatch ({.rank, .op = op}) "ranks disagree on ...: <field>: rank 0
// has 8, rank 1 has 6; <field>: ..." on every rank when any field differs.
void agree_on_fields(Communicator& group, std::span<const AgreedField> fields, const std::string& op);

}  // namespace braid::parallel
