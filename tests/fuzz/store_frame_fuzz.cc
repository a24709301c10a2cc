// libFuzzer target over the rendezvous store's wire format (bootstrap/store_protocol.h): the
// input is the byte stream an authenticated client sends the store server, split into frames
// by store_wire::next_request exactly as the server's per-client loop does (store_server.cc
// calls nothing else on the bytes), and also read whole as one request payload and as one
// response payload (what StoreClient decodes).
//
// Findings (fuzz_support.h):
//   - an exception other than braid::Corrupt from next_request, decode_request,
//     decode_response or decode_i64;
//   - next_request waiting (nullopt) on a length prefix over kMaxFrameBytes, or on bytes that
//     hold a whole frame, or consuming more than it was given;
//   - a decoded request breaking the protocol's shape (op, key count, key and value lengths):
//     the server would act on it;
//   - a decoded request or response that encodes to other bytes than its frame: the format
//     has one encoding per message, so a decoder that accepts a second reading of the bytes
//     has a hole;
//   - an add request whose delta does not round-trip through decode_i64 / encode_i64.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "braid/bootstrap/store_protocol.h"
#include "fuzz_support.h"

namespace braid::store_wire {
namespace {

using fuzz::finding;
using fuzz::require;

void check_shape(const Request& request) {
  const bool multi_key = request.op == Op::kWait || request.op == Op::kCheck;
  require(multi_key || request.keys.size() == 1, "a request of a one-key op with another key count");
  std::size_t list_bytes = 0;
  for (const std::string& key : request.keys) {
    require(key.size() <= kMaxKeyBytes, "a key over kMaxKeyBytes");
    list_bytes += 4 + key.size();
  }
  require(list_bytes <= kMaxKeyListBytes, "a key list over kMaxKeyListBytes");
  require(request.value.size() <= kMaxValueBytes, "a value over kMaxValueBytes");
  if (request.op == Op::kAdd) {
    require(request.value.size() == 8, "an add whose delta is not 8 bytes");
    std::int64_t delta = decode_i64(request.value);
    require(encode_i64(delta) == request.value, "decode_i64 / encode_i64 do not round-trip");
  } else if (request.op != Op::kSet) {
    require(request.value.empty(), "a get, wait, check or delete with a value");
  }
}

// The server's loop over one client's buffered bytes: frames until one is incomplete or refused.
void split_stream(std::string_view stream) {
  while (!stream.empty()) {
    std::optional<SplitRequest> frame;
    if (!fuzz::succeeds("next_request", {ErrorKind::kCorrupt}, [&] { frame = next_request(stream); })) return;
    if (!frame) {
      require(stream.size() < kLengthPrefixBytes || stream.size() - kLengthPrefixBytes < peek_length(stream),
              "next_request waits although a whole frame is buffered");
      require(stream.size() < kLengthPrefixBytes || peek_length(stream) <= kMaxFrameBytes,
              "next_request waits for a frame over kMaxFrameBytes instead of refusing it");
      return;
    }
    require(frame->frame_bytes > kLengthPrefixBytes && frame->frame_bytes <= stream.size(),
            "next_request consumed more than it was given (or nothing)");
    check_shape(frame->request);
    require(encode_request(frame->request) == stream.substr(0, frame->frame_bytes),
            "a request frame that does not re-encode to its own bytes");
    stream.remove_prefix(frame->frame_bytes);
  }
}

void decode_whole(std::string_view payload) {
  Request request;
  if (fuzz::succeeds("decode_request", {ErrorKind::kCorrupt}, [&] { request = decode_request(payload); })) {
    check_shape(request);
    require(encode_request(request).substr(kLengthPrefixBytes) == payload, "decode_request accepted a second encoding");
  }
  Response response;
  if (fuzz::succeeds("decode_response", {ErrorKind::kCorrupt}, [&] { response = decode_response(payload); })) {
    require(response.value.size() <= kMaxValueBytes, "a response value over kMaxValueBytes");
    require(encode_response(response).substr(kLengthPrefixBytes) == payload,
            "decode_response accepted a second encoding");
  }
  fuzz::succeeds("decode_i64", {ErrorKind::kCorrupt}, [&] { (void)decode_i64(payload); });
}

}  // namespace
}  // namespace braid::store_wire

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "store_frame_fuzz";
  braid::fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input = braid::fuzz::as_text(data, size);
  braid::store_wire::split_stream(input);
  braid::store_wire::decode_whole(input);
  return 0;
}
