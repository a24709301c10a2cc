// braid-train --zero-pp: which ZeRO++ parts (Wang et al. 2023; docs/zero.md "ZeRO++") a run
// switches on, parsed from a comma list. Torch-free.
#pragma once

#include <string>
#include <string_view>

#include "braid/compress/codec_spec.h"

namespace braid::train {

struct ZeroPlusPlus {
  bool qwz = false;                 // int8 parameter allgather (ZeroOptions::quantize_weights)
  bool qgz = false;                 // int8 gradient reduce-scatter (DdpOptions::zero_codec)
  bool qgz_error_feedback = false;  // qgz with an error-feedback residual ("qgz-ef")
  bool hpz = false;                 // stage 3: backward gathers from a host-local copy (secondary_partition.h)
  bool any() const { return qwz || qgz || hpz; }
  // The codec of ZeRO's parameter allgathers and of its gradient reduce-scatters: int8 where
  // the part is on, else `otherwise` (--precision's wire; --zero-pp and --precision exclude each other).
  compress::CodecId weight_codec(compress::CodecId otherwise) const { return qwz ? compress::CodecId::kInt8 : otherwise; }
  compress::CodecId gradient_codec(compress::CodecId otherwise) const { return qgz ? compress::CodecId::kInt8 : otherwise; }
};

// "" (nothing), or a comma list of qwz, qgz, qgz-ef (qgZ with error feedback). Throws
// InvalidArgument naming the flag for an unknown part, for any part with `zero_stage` 0 (ZeRO++
// rides on ZeRO's collectives), for hpz without stage 3 and for qgz-ef with stage 3.
ZeroPlusPlus parse_zero_pp(std::string_view text, int zero_stage);

}  // namespace braid::train
