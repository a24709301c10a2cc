#include <array>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/socket.h"
#include "braid/bootstrap/store.h"

namespace braid {

namespace {

using store_wire::Op;
using store_wire::Request;
using store_wire::Response;

constexpr std::size_t kKeysShownInErrors = 8;

double seconds_since(Clock::time_point start) { return Seconds(Clock::now() - start).count(); }

// "[a, b, c]", eliding after a few keys so a wait on every rank's key stays one readable line.
std::string format_keys(const std::vector<std::string>& keys) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size() && i < kKeysShownInErrors; ++i) {
    if (i > 0) out += ", ";
    out += keys[i];
  }
  if (keys.size() > kKeysShownInErrors) out += fmt::format(", ... ({} keys)", keys.size());
  return out + "]";
}

bool is_waiting_op(Op op) { return op == Op::kGet || op == Op::kWait; }

bool decode_flag(const Response& response, const ErrorContext& ctx) {
  BRAID_CHECK_EQ(response.value.size(), 1, Corrupt, ctx, "store answer to a flag query");
  return response.value[0] != 0;
}

}  // namespace

StoreClient::StoreClient(const std::string& host, std::uint16_t port, std::string token, int rank,
                         Deadline connect_deadline)
    : host_(host), port_(port), token_(std::move(token)), rank_(rank), address_(net::format_endpoint(host, port)) {
  connect(connect_deadline);
}

void StoreClient::connect(Deadline deadline) {
  const ErrorContext ctx{.rank = rank_, .op = "store.connect"};
  UniqueFd fd;
  try {
    fd = net::tcp_connect(host_, port_, deadline, ctx);
  } catch (const Timeout& e) {
    throw Timeout(ctx, fmt::format("could not reach the rendezvous store: {} — is rank 0 running, and do "
                                   "BRAID_MASTER_ADDR / BRAID_MASTER_PORT (or MASTER_ADDR / MASTER_PORT) point at it?",
                                   e.detail()));
  }
  net::Hello hello{.role = net::Role::kStoreClient, .rank = rank_, .token = token_};
  net::client_handshake(fd.get(), hello, deadline, ctx);
  fd_ = std::move(fd);
}

Response StoreClient::read_response(Deadline deadline, const ErrorContext& ctx) {
  std::array<char, store_wire::kLengthPrefixBytes> prefix{};
  net::read_all(fd_.get(), prefix.data(), prefix.size(), deadline, ctx);
  std::uint32_t length = store_wire::peek_length(std::string_view(prefix.data(), prefix.size()));
  if (length > store_wire::kMaxResponseBytes) {
    throw Corrupt(ctx, fmt::format("store at {} sent a {}-byte response (limit {})", address_, length,
                                   store_wire::kMaxResponseBytes));
  }
  std::string payload(length, '\0');
  net::read_all(fd_.get(), payload.data(), payload.size(), deadline, ctx);
  try {
    return store_wire::decode_response(payload);
  } catch (const Corrupt& e) {
    throw Corrupt(ctx, fmt::format("store at {}: {}", address_, e.detail()));
  }
}

Response StoreClient::call(const Request& request, Deadline deadline) {
  const ErrorContext ctx{.rank = rank_, .op = store_wire::op_name(request.op)};
  if (lost_) throw PeerLost(ctx, *lost_);
  std::string frame;
  try {
    frame = store_wire::encode_request(request);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(ctx, e.detail());
  }
  if (!fd_.valid()) connect(deadline);
  const auto start = Clock::now();
  Response response;
  try {
    net::write_all(fd_.get(), frame.data(), frame.size(), deadline, ctx);
    response = read_response(deadline, ctx);
  } catch (const Timeout&) {
    // The server still owes this request an answer; reading it as the next call's answer would
    // put every later call out of step, so the next call starts a fresh connection.
    fd_.reset();
    if (is_waiting_op(request.op)) {
      throw Timeout(ctx, fmt::format("timed out after {:.1f} s waiting for store keys {} at {} — did every rank start "
                                     "and reach this point?",
                                     seconds_since(start), format_keys(request.keys), address_));
    }
    throw Timeout(ctx, fmt::format("timed out after {:.1f} s waiting for the store at {} to answer {} of {}",
                                   seconds_since(start), address_, ctx.op, format_keys(request.keys)));
  } catch (const PeerLost& e) {
    fd_.reset();
    lost_ = fmt::format("lost the rendezvous store at {} (served by rank 0): {} — did rank 0 exit?", address_,
                        e.detail());
    throw PeerLost(ctx, *lost_);
  } catch (const Corrupt&) {
    fd_.reset();  // the stream is no longer known to be in step
    throw;
  }
  if (response.status != store_wire::Status::kOk) {
    throw InvalidArgument(ctx, fmt::format("store at {} refused {}: {}", address_, ctx.op, response.value));
  }
  return response;
}

void StoreClient::set(const std::string& key, std::string_view value, Deadline deadline) {
  call({Op::kSet, {key}, std::string(value)}, deadline);
}

std::string StoreClient::get(const std::string& key, Deadline deadline) {
  return call({Op::kGet, {key}, {}}, deadline).value;
}

void StoreClient::wait(const std::vector<std::string>& keys, Deadline deadline) {
  if (keys.empty()) return;
  call({Op::kWait, keys, {}}, deadline);
}

std::int64_t StoreClient::add(const std::string& key, std::int64_t delta, Deadline deadline) {
  Response response = call({Op::kAdd, {key}, store_wire::encode_i64(delta)}, deadline);
  try {
    return store_wire::decode_i64(response.value);
  } catch (const Corrupt& e) {
    throw Corrupt({.rank = rank_, .op = "store.add"}, fmt::format("store at {}: {}", address_, e.detail()));
  }
}

bool StoreClient::check(const std::vector<std::string>& keys, Deadline deadline) {
  return decode_flag(call({Op::kCheck, keys, {}}, deadline), {.rank = rank_, .op = "store.check"});
}

bool StoreClient::delete_key(const std::string& key, Deadline deadline) {
  return decode_flag(call({Op::kDelete, {key}, {}}, deadline), {.rank = rank_, .op = "store.delete"});
}

}  // namespace braid
