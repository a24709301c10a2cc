#include "braid/bootstrap/store_protocol.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::store_wire {
namespace {

std::string payload_of(const std::string& frame) {
  EXPECT_EQ(peek_length(frame), frame.size() - kLengthPrefixBytes);
  return frame.substr(kLengthPrefixBytes);
}

TEST(StoreProtocol, RequestRoundTrip) {
  Request set{Op::kSet, {"addr/3"}, std::string("10.0.0.3:4000\0x", 15)};
  Request decoded = decode_request(payload_of(encode_request(set)));
  EXPECT_EQ(decoded.op, Op::kSet);
  EXPECT_EQ(decoded.keys, set.keys);
  EXPECT_EQ(decoded.value, set.value);

  Request wait{Op::kWait, {"a", "", "c"}, {}};
  EXPECT_EQ(decode_request(payload_of(encode_request(wait))).keys, wait.keys);

  Request add{Op::kAdd, {"n"}, encode_i64(-5)};
  EXPECT_EQ(decode_i64(decode_request(payload_of(encode_request(add))).value), -5);
}

TEST(StoreProtocol, ResponseRoundTrip) {
  Response response{Status::kError, "no such luck"};
  Response decoded = decode_response(payload_of(encode_response(response)));
  EXPECT_EQ(decoded.status, Status::kError);
  EXPECT_EQ(decoded.value, "no such luck");
}

TEST(StoreProtocol, EncoderEnforcesLimits) {
  EXPECT_THROW(encode_request({Op::kGet, {std::string(kMaxKeyBytes + 1, 'k')}, {}}), InvalidArgument);
  EXPECT_THROW(encode_request({Op::kSet, {"k"}, std::string(kMaxValueBytes + 1, 'v')}), InvalidArgument);
  std::vector<std::string> many(kMaxKeyListBytes / 8, std::string(8, 'k'));
  EXPECT_THROW(encode_request({Op::kWait, many, {}}), InvalidArgument);
  EXPECT_NO_THROW(encode_request({Op::kGet, {std::string(kMaxKeyBytes, 'k')}, {}}));
}

TEST(StoreProtocol, DecoderRejectsMalformedPayloads) {
  std::string good = payload_of(encode_request({Op::kGet, {"key"}, {}}));
  EXPECT_THROW(decode_request(""), Corrupt);
  EXPECT_THROW(decode_request(good.substr(0, good.size() - 1)), Corrupt);  // truncated
  EXPECT_THROW(decode_request(good + "x"), Corrupt);                       // trailing byte
  std::string bad_op = good;
  bad_op[0] = 99;
  EXPECT_THROW(decode_request(bad_op), Corrupt);
  std::string huge_key = good;
  huge_key[5] = huge_key[6] = huge_key[7] = huge_key[8] = '\xff';  // key length 4 GiB
  EXPECT_THROW(decode_request(huge_key), Corrupt);
  std::string two_keys = payload_of(encode_request({Op::kWait, {"a", "b"}, {}}));
  two_keys[0] = static_cast<char>(Op::kGet);  // get takes exactly one key
  EXPECT_THROW(decode_request(two_keys), Corrupt);
  std::string short_delta = payload_of(encode_request({Op::kSet, {"n"}, "1234"}));
  short_delta[0] = static_cast<char>(Op::kAdd);  // add needs an 8-byte delta
  EXPECT_THROW(decode_request(short_delta), Corrupt);
  // A huge key count with no keys behind it must fail on the bytes, not allocate for the count.
  std::string many = good;
  many[1] = many[2] = many[3] = many[4] = '\xff';
  many[0] = static_cast<char>(Op::kWait);
  EXPECT_THROW(decode_request(many), Corrupt);
}

// The server's framing (store_server.cc's per-client loop): whole frames one by one, nothing
// while a frame is still arriving, and an oversized length refused before waiting for it.
TEST(StoreProtocol, NextRequestSplitsWholeFramesAndRefusesOversizedOnes) {
  const std::string set = encode_request({Op::kSet, {"k"}, "v"});
  const std::string get = encode_request({Op::kGet, {"k"}, ""});
  const std::string stream = set + get;
  auto first = next_request(stream);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->frame_bytes, set.size());
  EXPECT_EQ(first->request.value, "v");
  auto second = next_request(std::string_view(stream).substr(first->frame_bytes));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->request.op, Op::kGet);
  EXPECT_FALSE(next_request(std::string_view(get).substr(0, get.size() - 1)).has_value());
  EXPECT_FALSE(next_request("\x05\x00").has_value());
  const std::string oversized = "\xff\xff\xff\xff";  // 4 GiB announced: refused at once
  EXPECT_THROW(next_request(oversized), Corrupt);
  EXPECT_THROW(next_request(std::string("\x01\x00\x00\x00\x09", 5)), Corrupt);  // unknown op
}

}  // namespace
}  // namespace braid::store_wire
