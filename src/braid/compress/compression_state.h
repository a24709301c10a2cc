// What compression carries from one step to the next, per tensor: the error-feedback
// residuals (what compression dropped, added back into the next step's gradient — Seide et
// al. 2014, Karimireddy et al. 2019), DGC's momentum buffer (Lin et al. 2018) and PowerSGD's
// warm-started Q factor (Vogels et al. 2019). It is part of a training checkpoint: serialize()
// and deserialize() round-trip it exactly, and a damaged image raises braid::Corrupt.
//
// Buffers are keyed by "<tensor name>/<role>" and created zero-filled (or by the caller's
// initialiser) on first use; a later request with another length is an error, since it means
// two tensors share a name or the model changed under a live state.
//
// Thread-safety: none; one CompressionState belongs to one stream of compressed collectives
// (the owner serialises calls, as GradSync's engine thread does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace braid::compress {

// The roles a tensor's state buffers play.
inline constexpr std::string_view kResidualRole = "residual";          // error feedback, worker side
inline constexpr std::string_view kShardResidualRole = "shard-residual";  // error feedback of the re-compressed shard
inline constexpr std::string_view kMomentumRole = "momentum";          // DGC momentum correction (topk)
inline constexpr std::string_view kPowerSgdQRole = "powersgd-q";        // PowerSGD's Q, warm-started

class CompressionState {
 public:
  // The buffer of (name, role) with `count` floats, zero-filled when created, or filled by
  // `init` when given. Throws InvalidArgument if it exists with another length.
  std::span<float> buffer(const std::string& name, std::string_view role, std::size_t count,
                          const std::function<void(std::span<float>)>& init = {});
  // The buffer if it exists (empty span otherwise); creates nothing.
  std::span<const float> find(const std::string& name, std::string_view role) const;

  std::size_t size() const { return buffers_.size(); }
  // Bytes of state held (what a checkpoint of it costs).
  std::size_t bytes() const;
  void clear() { buffers_.clear(); }

  // A self-checking image: magic "BRCS", version, entry count, then per entry the key and
  // the floats, and a CRC32C over everything before it.
  std::vector<std::byte> serialize() const;
  // Replaces this state by an image serialize() wrote. Throws braid::Corrupt if the image is
  // truncated, tampered (checksum) or from an unknown version; the state is unchanged then.
  void deserialize(std::span<const std::byte> image);

  bool operator==(const CompressionState&) const = default;

 private:
  std::map<std::string, std::vector<float>> buffers_;  // key "<name>/<role>", ordered: images are canonical
};

}  // namespace braid::compress
