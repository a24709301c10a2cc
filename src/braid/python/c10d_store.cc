#include "braid/python/c10d_store.h"

#include <chrono>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "braid/base/error.h"

namespace braid::python {

namespace {

// c10d reads a zero timeout as "the store's default", so an expired deadline still waits 1 ms.
std::chrono::milliseconds store_timeout(Deadline deadline) {
  const int ms = deadline.remaining_ms(std::numeric_limits<int>::max());
  return std::chrono::milliseconds(std::max(ms, 1));
}

}  // namespace

void C10dStore::set(const std::string& key, std::string_view value, Deadline /*deadline*/) {
  try {
    store_->set(prefixed(key), std::vector<std::uint8_t>(value.begin(), value.end()));
  } catch (const std::exception& e) {
    throw PeerLost({.rank = rank_, .op = "store.set"}, fmt::format("torch.distributed's store failed: {}", e.what()));
  }
}

std::string C10dStore::get(const std::string& key, Deadline deadline) {
  wait({key}, deadline);
  try {
    const std::vector<std::uint8_t> value = store_->get(prefixed(key));
    return std::string(value.begin(), value.end());
  } catch (const std::exception& e) {
    throw PeerLost({.rank = rank_, .op = "store.get"}, fmt::format("torch.distributed's store failed: {}", e.what()));
  }
}

// c10d stores throw c10::Error both for a timeout and for a lost store, with no way to tell
// them apart but the text; braid reports either as a Timeout naming the keys, which is what
// the caller can act on (did every rank start?).
void C10dStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  std::vector<std::string> ours;
  for (const std::string& key : keys) ours.push_back(prefixed(key));
  try {
    store_->wait(ours, store_timeout(deadline));
  } catch (const std::exception& e) {
    throw Timeout({.rank = rank_, .op = "store.wait"},
                  fmt::format("waiting for keys [{}] in torch.distributed's store: {} — did every rank of the group "
                              "call init_process_group / new_group?",
                              fmt::join(keys, ", "), e.what()));
  }
}

}  // namespace braid::python
