// Two emulated hosts for the multi-node tests: network namespaces <prefix>0 and <prefix>1
// joined by a veth pair, at 10.77.0.1/24 and 10.77.0.2/24 (as network_failure_test.cc and
// bench/slow_link.sh build them). Removed again at destruction; needs root and `ip netns`.
// With Link::kThroughRouter, each host's veth leads instead to a third namespace <prefix>r
// (ends <prefix>r0 and <prefix>r1, no addresses), where a user-space relay forwards the frames
// (braid-link-relay: netem's delay for a kernel without sch_netem; netem_test.cc starts it).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace braid::testing {

inline bool have_netns() { return ::geteuid() == 0 && std::system("ip netns list >/dev/null 2>&1") == 0; }

class TwoEmulatedHosts {
 public:
  enum class Link { kDirect, kThroughRouter };
  explicit TwoEmulatedHosts(const std::string& tag, Link link = Link::kDirect)
      : prefix_(tag + std::to_string(::getpid() % 100000)) {
    remove();
    ok_ = sh("ip netns add " + ns(0)) && sh("ip netns add " + ns(1));
    if (link == Link::kDirect) {
      ok_ = ok_ && sh("ip link add " + dev(0) + " type veth peer name " + dev(1)) && join(0) && join(1);
    } else {
      ok_ = ok_ && sh("ip netns add " + router()) && attach_to_router(0) && attach_to_router(1) && join(0) &&
            join(1);
    }
  }
  ~TwoEmulatedHosts() { remove(); }
  TwoEmulatedHosts(const TwoEmulatedHosts&) = delete;
  TwoEmulatedHosts& operator=(const TwoEmulatedHosts&) = delete;

  bool ok() const { return ok_; }
  std::string ns(int host) const { return prefix_ + std::to_string(host); }
  std::string dev(int host) const { return prefix_ + "v" + std::to_string(host); }
  // Kind kThroughRouter: the relay's namespace and its end of `host`'s link.
  std::string router() const { return prefix_ + "r"; }
  std::string router_dev(int host) const { return prefix_ + "r" + std::to_string(host); }
  static std::string address(int host) { return "10.77.0." + std::to_string(host + 1); }
  // Cuts the link: host 0's end of the veth pair goes down.
  bool cut() const { return sh("ip -n " + ns(0) + " link set " + dev(0) + " down"); }
  // Whether any process still runs inside `host`'s namespace.
  bool has_processes(int host) const {
    return std::system(("test -n \"$(ip netns pids " + ns(host) + " 2>/dev/null)\"").c_str()) == 0;
  }

 private:
  static bool sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }
  bool join(int h) const {
    return sh("ip link set " + dev(h) + " netns " + ns(h)) && sh("ip -n " + ns(h) + " link set lo up") &&
           sh("ip -n " + ns(h) + " addr add " + address(h) + "/24 dev " + dev(h)) &&
           sh("ip -n " + ns(h) + " link set " + dev(h) + " up");
  }
  bool attach_to_router(int h) const {
    return sh("ip link add " + dev(h) + " type veth peer name " + router_dev(h)) &&
           sh("ip link set " + router_dev(h) + " netns " + router()) &&
           sh("ip -n " + router() + " link set " + router_dev(h) + " up");
  }
  void remove() const {
    sh("ip netns del " + ns(0));
    sh("ip netns del " + ns(1));
    sh("ip netns del " + router());
  }
  std::string prefix_;
  bool ok_ = false;
};

}  // namespace braid::testing
