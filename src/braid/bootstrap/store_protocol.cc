#include "braid/bootstrap/store_protocol.h"

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/bootstrap/byte_codec.h"

namespace braid::store_wire {

namespace {

bool is_known_op(std::uint8_t raw) { return raw >= 1 && raw <= 6; }

// How many keys each op takes: exactly one, or any number (wait, check).
bool key_count_ok(Op op, std::size_t count) {
  return op == Op::kWait || op == Op::kCheck || count == 1;
}

// What value each op carries: the set value, the add delta (8 bytes), or nothing.
bool value_ok(Op op, std::size_t length) {
  if (op == Op::kSet) return true;
  if (op == Op::kAdd) return length == 8;
  return length == 0;
}

std::size_t key_list_bytes(const std::vector<std::string>& keys) {
  std::size_t total = 0;
  for (const auto& key : keys) total += 4 + key.size();
  return total;
}

void check_request_limits(const Request& request) {
  for (const auto& key : request.keys) {
    if (key.size() > kMaxKeyBytes) {
      throw InvalidArgument({.op = op_name(request.op)},
                            fmt::format("store key of {} bytes exceeds the {}-byte limit", key.size(), kMaxKeyBytes));
    }
  }
  if (key_list_bytes(request.keys) > kMaxKeyListBytes) {
    throw InvalidArgument({.op = op_name(request.op)},
                          fmt::format("{} keys are too many for one store request (limit {} bytes of keys)",
                                      request.keys.size(), kMaxKeyListBytes));
  }
  if (request.value.size() > kMaxValueBytes) {
    throw InvalidArgument({.op = op_name(request.op)}, fmt::format("store value of {} bytes exceeds the {}-byte limit",
                                                                   request.value.size(), kMaxValueBytes));
  }
}

}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::kSet: return "store.set";
    case Op::kGet: return "store.get";
    case Op::kWait: return "store.wait";
    case Op::kAdd: return "store.add";
    case Op::kCheck: return "store.check";
    case Op::kDelete: return "store.delete";
  }
  return "store.?";
}

std::string encode_request(const Request& request) {
  check_request_limits(request);
  std::string out;
  out.reserve(kLengthPrefixBytes + 9 + key_list_bytes(request.keys) + request.value.size());
  net::ByteWriter w(out);
  w.u32(0);  // patched below, once the payload length is known
  w.u8(static_cast<std::uint8_t>(request.op));
  w.u32(static_cast<std::uint32_t>(request.keys.size()));
  for (const auto& key : request.keys) {
    w.u32(static_cast<std::uint32_t>(key.size()));
    w.bytes(key);
  }
  w.u32(static_cast<std::uint32_t>(request.value.size()));
  w.bytes(request.value);
  std::string prefix;
  net::ByteWriter(prefix).u32(static_cast<std::uint32_t>(out.size() - kLengthPrefixBytes));
  out.replace(0, kLengthPrefixBytes, prefix);
  return out;
}

Request decode_request(std::string_view payload) {
  if (payload.size() > kMaxFrameBytes) throw Corrupt({}, fmt::format("store request of {} bytes", payload.size()));
  net::ByteReader r(payload, "store request");
  std::uint8_t raw_op = r.u8();
  if (!is_known_op(raw_op)) throw Corrupt({}, fmt::format("unknown store op {}", raw_op));
  Request request;
  request.op = static_cast<Op>(raw_op);
  std::uint32_t key_count = r.u32();
  if (!key_count_ok(request.op, key_count)) {
    throw Corrupt({}, fmt::format("{} with {} keys", op_name(request.op), key_count));
  }
  // Each key costs at least its 4-byte length, so the reader bounds this loop by the payload.
  std::size_t list_bytes = 0;
  for (std::uint32_t i = 0; i < key_count; ++i) {
    std::uint32_t length = r.u32();
    if (length > kMaxKeyBytes) throw Corrupt({}, fmt::format("store key of {} bytes (limit {})", length, kMaxKeyBytes));
    list_bytes += 4 + length;
    if (list_bytes > kMaxKeyListBytes) throw Corrupt({}, "store request key list over its limit");
    request.keys.emplace_back(r.bytes(length));
  }
  std::uint32_t value_length = r.u32();
  if (value_length > kMaxValueBytes || !value_ok(request.op, value_length)) {
    throw Corrupt({}, fmt::format("{} with a {}-byte value", op_name(request.op), value_length));
  }
  request.value = std::string(r.bytes(value_length));
  BRAID_CHECK_EQ(r.remaining(), 0, Corrupt, {}, "trailing bytes after a store request");
  return request;
}

std::optional<SplitRequest> next_request(std::string_view bytes) {
  if (bytes.size() < kLengthPrefixBytes) return std::nullopt;
  std::uint32_t length = peek_length(bytes);
  if (length > kMaxFrameBytes) {
    throw Corrupt({}, fmt::format("frame of {} bytes exceeds the {}-byte limit", length, kMaxFrameBytes));
  }
  if (bytes.size() - kLengthPrefixBytes < length) return std::nullopt;
  return SplitRequest{.request = decode_request(bytes.substr(kLengthPrefixBytes, length)),
                      .frame_bytes = kLengthPrefixBytes + length};
}

std::string encode_response(const Response& response) {
  std::string out;
  out.reserve(kLengthPrefixBytes + 5 + response.value.size());
  net::ByteWriter w(out);
  w.u32(static_cast<std::uint32_t>(5 + response.value.size()));
  w.u8(static_cast<std::uint8_t>(response.status));
  w.u32(static_cast<std::uint32_t>(response.value.size()));
  w.bytes(response.value);
  return out;
}

Response decode_response(std::string_view payload) {
  net::ByteReader r(payload, "store response");
  Response response;
  std::uint8_t status = r.u8();
  if (status > 1) throw Corrupt({}, fmt::format("unknown store response status {}", status));
  response.status = static_cast<Status>(status);
  std::uint32_t length = r.u32();
  if (length > kMaxValueBytes) throw Corrupt({}, fmt::format("store response value of {} bytes", length));
  response.value = std::string(r.bytes(length));
  BRAID_CHECK_EQ(r.remaining(), 0, Corrupt, {}, "trailing bytes after a store response");
  return response;
}

std::uint32_t peek_length(std::string_view bytes) { return net::ByteReader(bytes.substr(0, 4), "length prefix").u32(); }

std::string encode_i64(std::int64_t value) {
  std::string out;
  net::ByteWriter(out).i64(value);
  return out;
}

std::int64_t decode_i64(std::string_view bytes) {
  BRAID_CHECK_EQ(bytes.size(), 8, Corrupt, {}, "store counter size");
  return net::ByteReader(bytes, "counter").i64();
}

}  // namespace braid::store_wire
