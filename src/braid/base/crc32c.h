// CRC32C (Castagnoli), computed by ISA-L's hardware-accelerated crc32_iscsi.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid {

std::uint32_t crc32c(const void* data, std::size_t bytes, std::uint32_t seed = 0);

}  // namespace braid
