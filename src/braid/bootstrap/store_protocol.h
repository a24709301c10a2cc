// Wire format of the rendezvous store (docs/bootstrap.md, "Store protocol").
//
// After the hello/verdict handshake (job_token.h) a StoreClient sends request frames and reads
// one response frame per request, in order. Every frame is
//
//   u32 payload length | payload
//
// Request payload:  u8 op | u32 key count | key count x (u32 length | bytes) | u32 value length | value
// Response payload: u8 status | u32 value length | value
//
// All integers little-endian. The value of an add request is the delta, and of its response
// the new counter, as 8-byte int64; check and delete answer one byte (0 or 1); an error
// response carries a message. Every length is bounded below before anything is allocated for
// it, so a hostile or confused peer costs at most one frame of kMaxFrameBytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace braid::store_wire {

inline constexpr std::size_t kMaxKeyBytes = 4 << 10;
inline constexpr std::size_t kMaxValueBytes = 64 << 20;
// All keys of one request together, with their length fields (a wait on ~10^4 short keys fits).
inline constexpr std::size_t kMaxKeyListBytes = 1 << 20;
inline constexpr std::size_t kLengthPrefixBytes = 4;
// Largest request payload (after the length prefix); responses are smaller.
inline constexpr std::size_t kMaxFrameBytes = 1 + 4 + kMaxKeyListBytes + 4 + kMaxValueBytes;
inline constexpr std::size_t kMaxResponseBytes = 1 + 4 + kMaxValueBytes;

// Values are on the wire: never renumber.
enum class Op : std::uint8_t { kSet = 1, kGet = 2, kWait = 3, kAdd = 4, kCheck = 5, kDelete = 6 };
enum class Status : std::uint8_t { kOk = 0, kError = 1 };

struct Request {
  Op op = Op::kGet;
  std::vector<std::string> keys;
  std::string value;
};

struct Response {
  Status status = Status::kOk;
  std::string value;
};

// "store.set", "store.get", ... (also the ErrorContext op of client calls).
const char* op_name(Op op);

// The frame with its length prefix. Throws InvalidArgument when a key, the key list or the
// value exceeds its limit (a caller error, caught before anything is sent).
std::string encode_request(const Request& request);
// Parses a request payload (without the prefix). Throws Corrupt on any bound or shape violation.
Request decode_request(std::string_view payload);

// The first whole request frame at the front of `bytes` (what a server has buffered from one
// client): the request and how many bytes its frame took, or nullopt while the frame is not all
// there yet. Throws Corrupt, before waiting for the rest, on a length prefix over
// kMaxFrameBytes, and on a payload decode_request refuses. The store server's parsing loop;
// tests/fuzz/store_frame_fuzz.cc drives it on arbitrary byte streams.
struct SplitRequest {
  Request request;
  std::size_t frame_bytes = 0;  // prefix and payload
};
std::optional<SplitRequest> next_request(std::string_view bytes);

std::string encode_response(const Response& response);
Response decode_response(std::string_view payload);

// Reads the u32 length prefix at the start of `bytes` (REQUIRES: at least 4 bytes).
std::uint32_t peek_length(std::string_view bytes);

std::string encode_i64(std::int64_t value);
// Throws Corrupt unless `bytes` is exactly 8 bytes.
std::int64_t decode_i64(std::string_view bytes);

}  // namespace braid::store_wire
