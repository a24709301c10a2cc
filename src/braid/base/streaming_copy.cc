#include "braid/base/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace braid {

#if !defined(__SSE2__)
void streaming_copy(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
#else

// SSE2 is part of x86-64, so this needs no run-time dispatch; 16-byte streaming stores fill
// write-combining buffers as well as wider ones do.
void streaming_copy(void* dst_ptr, const void* src_ptr, std::size_t bytes) {
  auto* dst = static_cast<std::byte*>(dst_ptr);
  const auto* src = static_cast<const std::byte*>(src_ptr);
  std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(dst) & 15)) & 15;
  if (head > bytes) head = bytes;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  for (std::size_t i = 0; i < bytes / 64; ++i, src += 64, dst += 64) {
    const auto* s = reinterpret_cast<const __m128i*>(src);
    auto* d = reinterpret_cast<__m128i*>(dst);
    const __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1), c = _mm_loadu_si128(s + 2),
                  e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  std::memcpy(dst, src, bytes % 64);
  _mm_sfence();
}
#endif

namespace {
void plain_copy(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
}  // namespace

CopyFunction copy_for_output(std::size_t output_bytes, int ranks_on_host) {
  const std::size_t host_bytes = output_bytes * static_cast<std::size_t>(ranks_on_host > 0 ? ranks_on_host : 1);
  return host_bytes >= (std::size_t{4} << 20) ? streaming_copy : plain_copy;
}

}  // namespace braid
