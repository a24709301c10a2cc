#include "braid/engine/bucket_plan.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "braid/base/error.h"

namespace braid::engine {

namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kAutoFloorBytes = 4 * kMiB;       // seeds/002: max(4MB, ...)
constexpr int kAutoBucketsPerShare = 16;                   // seeds/002: P / (16 N)
constexpr std::uint64_t kMaxCapBytes = std::uint64_t{1} << 50;

[[noreturn]] void reject(const std::string& why) { throw InvalidArgument({.op = "bucket plan"}, why); }

// Byte size of every param, validated; the total must fit in int64 so that no bucket sum
// (elements or bytes) can overflow whatever the cap.
std::vector<std::uint64_t> param_bytes(std::span<const ParamInfo> params) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::vector<std::uint64_t> bytes(params.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    if (p.count < 0) reject(fmt::format("param {} ('{}') has a negative count {}", i, p.name, p.count));
    if (p.element_bytes == 0) reject(fmt::format("param {} ('{}') has a zero element size", i, p.name));
    if (static_cast<std::uint64_t>(p.count) > kMax / p.element_bytes) {
      reject(fmt::format("param {} ('{}'): {} elements of {} bytes overflow", i, p.name, p.count, p.element_bytes));
    }
    bytes[i] = static_cast<std::uint64_t>(p.count) * p.element_bytes;
    if (bytes[i] > kMax - total) reject("the parameters' total byte size overflows");
    total += bytes[i];
  }
  return bytes;
}

}  // namespace

void check_permutation(std::span<const int> order, int n) {
  if (n < 0) reject(fmt::format("negative parameter count {}", n));
  if (order.size() != static_cast<std::size_t>(n)) {
    reject(fmt::format("order lists {} params but the model has {}", order.size(), n));
  }
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    int id = order[pos];
    if (id < 0 || id >= n) reject(fmt::format("order[{}] = {} is not a param id in [0, {})", pos, id, n));
    if (seen[static_cast<std::size_t>(id)]) reject(fmt::format("order[{}] = {} repeats a param id", pos, id));
    seen[static_cast<std::size_t>(id)] = true;
  }
}

BucketPlan plan_buckets(std::span<const ParamInfo> params, std::span<const int> order, std::uint64_t cap_bytes) {
  if (cap_bytes == 0) reject("bucket cap must be positive");
  if (params.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) reject("too many params");
  const int n = static_cast<int>(params.size());
  check_permutation(order, n);
  const std::vector<std::uint64_t> bytes = param_bytes(params);

  BucketPlan plan{.bucket_of = std::vector<int>(params.size(), -1),
                  .slot_of = std::vector<int>(params.size(), -1),
                  .cap_bytes = cap_bytes};
  std::size_t open_element_bytes = 0;  // element size of the open bucket (0: none open)
  bool open_alone = false;             // the open bucket holds an `alone` param: closed to others
  for (int id : order) {
    const std::uint64_t b = bytes[static_cast<std::size_t>(id)];
    const std::size_t element_bytes = params[static_cast<std::size_t>(id)].element_bytes;
    const bool alone = params[static_cast<std::size_t>(id)].alone;
    if (!plan.buckets.empty()) {
      const Bucket& open = plan.buckets.back();
      // Written to avoid overflow: open.bytes may exceed the cap (a single oversize param).
      bool fits = b == 0 || (open.bytes <= cap_bytes && b <= cap_bytes - open.bytes);
      if (!fits || element_bytes != open_element_bytes || alone || open_alone) plan.buckets.emplace_back();
    } else {
      plan.buckets.emplace_back();
    }
    open_element_bytes = element_bytes;
    open_alone = alone;
    Bucket& bucket = plan.buckets.back();
    plan.bucket_of[static_cast<std::size_t>(id)] = static_cast<int>(plan.buckets.size()) - 1;
    plan.slot_of[static_cast<std::size_t>(id)] = static_cast<int>(bucket.params.size());
    bucket.params.push_back(id);
    bucket.offsets.push_back(bucket.elements);
    bucket.elements += params[static_cast<std::size_t>(id)].count;
    bucket.bytes += b;
  }
  return plan;
}

std::vector<int> reverse_registration_order(int n) {
  if (n < 0) reject(fmt::format("negative parameter count {}", n));
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = n - 1 - i;
  return order;
}

std::uint64_t auto_bucket_bytes(std::uint64_t total_param_bytes, int world_size) {
  if (world_size < 1) reject(fmt::format("world size {} must be at least 1", world_size));
  std::uint64_t share = total_param_bytes / (static_cast<std::uint64_t>(kAutoBucketsPerShare) *
                                             static_cast<std::uint64_t>(world_size));
  return std::max(kAutoFloorBytes, share);
}

std::uint64_t parse_bucket_cap(std::string_view text, std::uint64_t total_param_bytes, int world_size) {
  if (text == "auto") return auto_bucket_bytes(total_param_bytes, world_size);
  double mib = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), mib);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(mib)) {
    reject(fmt::format("bucket cap '{}' is neither a number of MiB nor 'auto'", text));
  }
  const double bytes = mib * static_cast<double>(kMiB);
  if (!(bytes >= 1.0) || bytes > static_cast<double>(kMaxCapBytes)) {
    reject(fmt::format("bucket cap '{}' MiB is outside [1 byte, 2^50 bytes]", text));
  }
  return static_cast<std::uint64_t>(bytes);  // truncates like DDP's int(bucket_cap_mb * 1024 * 1024)
}

std::string describe(const BucketPlan& plan) {
  std::string out = fmt::format("{} buckets, cap {} bytes, {} params\n", plan.buckets.size(), plan.cap_bytes,
                                plan.param_count());
  for (std::size_t i = 0; i < plan.buckets.size(); ++i) {
    const Bucket& b = plan.buckets[i];
    out += fmt::format("bucket {}: {} elements, {} bytes, params [{}]\n", i, b.elements, b.bytes,
                       fmt::join(b.params, " "));
  }
  return out;
}

}  // namespace braid::engine
