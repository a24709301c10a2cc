#include "braid/tools/braid_run/node_watch.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/start_thread.h"

namespace braid::launcher {

namespace {

// braid-runs are not ranks; the store names clients by rank in its logs.
constexpr int kLauncherClient = -1;
constexpr const char* kFailureCountKey = "braid-run/failures";

Deadline call_deadline() { return Deadline::after(kCallLimit); }

UniqueFd make_eventfd() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd.valid()) throw_system_error({.op = "node watch"}, "eventfd", errno);
  return fd;
}

// Stores `failure` unless another node's failure came first. Throws what the store throws.
void publish_first(StoreClient& store, const NodeFailure& failure) {
  if (store.add(kFailureCountKey, 1, call_deadline()) == 1) {
    store.set(kFailedKey, encode_failure(failure), call_deadline());
  }
}

}  // namespace

std::string node_key(int node) { return fmt::format("braid-run/node/{}", node); }
std::string beat_key(int node) { return fmt::format("braid-run/beat/{}", node); }
std::string exited_key(int node) { return fmt::format("braid-run/exited/{}", node); }

std::string encode_failure(const NodeFailure& failure) {
  return fmt::format("{} {}", failure.exit_code, failure.message);
}

NodeFailure decode_failure(const std::string& value) {
  NodeFailure out;
  const auto space = value.find(' ');
  const auto [end, ec] = std::from_chars(value.data(), value.data() + std::min(space, value.size()), out.exit_code);
  if (ec != std::errc() || space == std::string::npos || out.exit_code <= 0) return {1, value};
  out.message = value.substr(space + 1);
  return out;
}

NodeWatch::NodeWatch(NodeWatchSetup setup)
    : setup_(std::move(setup)),
      thread_store_(setup_.store_host, setup_.store_port, setup_.token, kLauncherClient, call_deadline()),
      caller_store_(setup_.store_host, setup_.store_port, setup_.token, kLauncherClient, call_deadline()),
      event_(make_eventfd()) {
  for (int node = 1; node < setup_.num_nodes; ++node) beats_[node] = {"", Clock::now()};
  thread_ = start_thread({.op = "node watch"}, [this] { run(); });
}

NodeWatch::~NodeWatch() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void NodeWatch::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    std::optional<NodeFailure> found = observe();
    lock.lock();
    if (found) {
      if (!stop_) report(std::move(*found));
      return;  // the job's fate is known: nothing left to watch
    }
    wake_.wait_for(lock, kBeatPeriod, [this] { return stop_; });
  }
}

std::optional<NodeFailure> NodeWatch::observe() {
  try {
    thread_store_.add(beat_key(setup_.node_rank), 1, call_deadline());
    if (thread_store_.check({kFailedKey}, call_deadline())) {
      return decode_failure(thread_store_.get(kFailedKey, call_deadline()));
    }
    return setup_.node_rank == 0 ? check_silent_nodes() : std::nullopt;
  } catch (const Error& e) {
    return NodeFailure{1, fmt::format("node {} lost the launchers' store on node 0 at {}:{} ({}): node 0's braid-run "
                                      "(ranks 0..{}) is gone or this node cannot reach it",
                                      setup_.node_rank, setup_.store_host, setup_.store_port, e.detail(),
                                      setup_.ranks_per_node - 1)};
  }
}

std::optional<NodeFailure> NodeWatch::check_silent_nodes() {
  const Clock::time_point now = Clock::now();
  for (auto& [node, last] : beats_) {
    if (thread_store_.check({exited_key(node)}, call_deadline())) continue;
    std::string beat = thread_store_.check({beat_key(node)}, call_deadline())
                           ? thread_store_.get(beat_key(node), call_deadline())
                           : "";
    if (beat != last.first) {
      last = {beat, now};
      continue;
    }
    const Seconds silent = now - last.second;
    if (silent < kNodeSilence) continue;
    NodeFailure lost{1, fmt::format("node {} ({}) stopped answering: no heartbeat from its braid-run for {:.0f} s (it "
                                    "was killed, or its link is down); its ranks {}..{} are lost",
                                    node, thread_store_.get(node_key(node), call_deadline()), silent.count(),
                                    node * setup_.ranks_per_node, (node + 1) * setup_.ranks_per_node - 1)};
    publish_first(thread_store_, lost);
    // It will never say it exited: say it for it, so node 0 does not linger for it.
    thread_store_.set(exited_key(node), "lost", call_deadline());
    return decode_failure(thread_store_.get(kFailedKey, call_deadline()));
  }
  return std::nullopt;
}

void NodeWatch::report(NodeFailure failure) {
  failure_ = std::move(failure);
  const std::uint64_t one = 1;
  ssize_t ignored = ::write(event_.get(), &one, sizeof one);
  (void)ignored;  // an eventfd write only fails on overflow, which one write cannot reach
}

std::optional<NodeFailure> NodeWatch::failure() {
  std::lock_guard lock(mutex_);
  return failure_;
}

void NodeWatch::publish_failure(const NodeFailure& failure) noexcept {
  try {
    publish_first(caller_store_, failure);
  } catch (...) {  // the store is gone: the other nodes notice that themselves
  }
}

void NodeWatch::publish_exit(int exit_code) noexcept {
  try {
    caller_store_.set(exited_key(setup_.node_rank), std::to_string(exit_code), call_deadline());
  } catch (...) {  // as above
  }
}

std::optional<NodeFailure> NodeWatch::published_failure() noexcept {
  try {
    if (!caller_store_.check({kFailedKey}, call_deadline())) return std::nullopt;
    return decode_failure(caller_store_.get(kFailedKey, call_deadline()));
  } catch (...) {
    return failure();  // the store is gone: what the watch thread saw, if anything
  }
}

bool NodeWatch::all_exited() noexcept {
  try {
    for (int node = 0; node < setup_.num_nodes; ++node) {
      if (!caller_store_.check({exited_key(node)}, call_deadline())) return false;
    }
    return true;
  } catch (...) {
    return false;  // the watch thread reports the lost store
  }
}

}  // namespace braid::launcher
