// braid-train --zero-pp: which ZeRO++ parts (Wang et al. 2023; docs/zero.md "ZeRO++") a run
// switches on, parsed from a comma list. Torch-free.
#pragma once

#include <string>
#include <string_view>

namespace braid::train {

struct ZeroPlusPlus {
  bool qwz = false;                 // int8 parameter allgather (ZeroOptions::quantize_weights)
  bool qgz = false;                 // int8 gradient reduce-scatter (DdpOptions::zero_codec)
  bool qgz_error_feedback = false;  // qgz with an error-feedback residual ("qgz-ef")
  bool hpz = false;                 // stage 3: backward gathers from a host-local copy (secondary_partition.h)
  bool any() const { return qwz || qgz || hpz; }
};

// "" (nothing), or a comma list of qwz, qgz, qgz-ef (qgZ with error feedback). Throws
// InvalidArgument naming the flag for an unknown part, for any part with `zero_stage` 0 (ZeRO++
// rides on ZeRO's collectives), for hpz without stage 3 and for qgz-ef with stage 3.
ZeroPlusPlus parse_zero_pp(std::string_view text, int zero_stage);

}  // namespace braid::train
