// braid-link-relay DEV_A DEV_B DELAY_MS JITTER_MS: netem's delay and jitter for a kernel built
// without sch_netem (this one), in user space. It forwards every Ethernet frame between two
// interfaces of its namespace (an L2 bridge of two ports, bench/link_conditions.sh puts it
// between two emulated hosts), each frame held DELAY_MS +- JITTER_MS (uniform) before it goes
// on. Frames keep their order, as netem's with a rate or a pfifo child: a jittered delay that
// reordered TCP segments would measure the reordering, not the delay. So within a burst a
// frame waits at least as long as the one before it, and the mean hold is above DELAY_MS. Runs until SIGTERM or
// SIGINT, then says on stderr how many frames went each way and how long they were held.
//
// Why a packet socket with virtio-net headers (PACKET_VNET_HDR): veth hands over TCP
// segmentation-offload frames of up to 64 KiB whose checksums are not filled in yet; the
// header carries that state (gso type and size, checksum start and offset) from the receive
// to the send, so the kernel segments and checksums them on the way out as it would have.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <ctime>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
// sizeof(struct virtio_net_hdr): <linux/virtio_net.h> does not compile as C++ (a member named
// `class`), and the relay only carries the header from recv to send, never reads it.
constexpr std::size_t kVnetHeaderBytes = 10;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "braid-link-relay: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

// A raw packet socket on `device` that sees every frame arriving there (promiscuous), not the
// ones this relay sends out of it.
int open_port(const char* device) {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
  if (fd < 0) die("socket");
  const unsigned index = ::if_nametoindex(device);
  if (index == 0) die(std::string("no interface ") + device);
  const int on = 1;
  if (::setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof on) != 0) die("PACKET_VNET_HDR");
  if (::setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &on, sizeof on) != 0) die("PACKET_IGNORE_OUTGOING");
  // Frames arrive while this direction's thread is sending a burst of due frames; the default
  // receive buffer (about 200 KiB, three 64 KiB frames) then drops some, a loss nobody asked
  // for (TCP retransmitted thousands of segments before this). Root may force a larger one.
  const int buffer_bytes = 64 << 20;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof buffer_bytes) != 0) die("SO_RCVBUFFORCE");
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer_bytes, sizeof buffer_bytes) != 0) die("SO_SNDBUFFORCE");
  sockaddr_ll address{};
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ETH_P_ALL);
  address.sll_ifindex = static_cast<int>(index);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) die("bind");
  packet_mreq promiscuous{};
  promiscuous.mr_ifindex = static_cast<int>(index);
  promiscuous.mr_type = PACKET_MR_PROMISC;
  if (::setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &promiscuous, sizeof promiscuous) != 0) die("promisc");
  return fd;
}

// Set by SIGTERM / SIGINT; the forwarding loops look at it at least every kPollCapMs.
std::atomic<bool> g_stop{false};  // NOLINT: a signal handler's only channel
constexpr int kPollCapMs = 100;
extern "C" void request_stop(int) { g_stop.store(true); }

struct HeldFrame {
  Clock::time_point arrived, due;
  std::vector<char> bytes;  // virtio-net header + Ethernet frame
};

struct DirectionStats {
  long frames = 0;
  long dropped = 0;  // by the kernel before the relay read them (PACKET_STATISTICS), or on send
  double bytes = 0;
  double held_seconds = 0;  // arrival to send, summed over frames
};

// One direction: frames read from `in` wait in `held` until due, then go out of `out`.
void forward(int in, int out, std::chrono::microseconds delay, std::chrono::microseconds jitter, unsigned seed,
             DirectionStats& stats) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<long> spread(-jitter.count(), jitter.count());
  std::deque<HeldFrame> held;
  std::vector<char> buffer(kVnetHeaderBytes + 65536 + 64);
  Clock::time_point last_due{};
  while (!g_stop.load()) {
    auto wait = std::chrono::nanoseconds(std::chrono::milliseconds(kPollCapMs));
    if (!held.empty()) wait = std::clamp<std::chrono::nanoseconds>(held.front().due - Clock::now(), {}, wait);
    const timespec timeout{static_cast<time_t>(wait.count() / 1'000'000'000),
                           static_cast<long>(wait.count() % 1'000'000'000)};
    pollfd readable{in, POLLIN, 0};
    if (::ppoll(&readable, 1, &timeout, nullptr) < 0 && errno != EINTR) die("ppoll");
    for (;;) {
      const ssize_t n = ::recv(in, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        die("recv");
      }
      const Clock::time_point now = Clock::now();
      const Clock::time_point due = std::max(last_due, now + delay + std::chrono::microseconds(spread(random)));
      last_due = due;
      held.push_back({now, due, std::vector<char>(buffer.begin(), buffer.begin() + n)});
    }
    while (!held.empty() && held.front().due <= Clock::now()) {
      const std::vector<char>& frame = held.front().bytes;
      if (::send(out, frame.data(), frame.size(), 0) < 0) {
        if (errno != ENOBUFS && errno != ENETDOWN) die("send");
        ++stats.dropped;
      }
      ++stats.frames;
      stats.bytes += static_cast<double>(frame.size());
      stats.held_seconds += std::chrono::duration<double>(Clock::now() - held.front().arrived).count();
      held.pop_front();
    }
  }
  tpacket_stats kernel{};
  socklen_t size = sizeof kernel;
  if (::getsockopt(in, SOL_PACKET, PACKET_STATISTICS, &kernel, &size) == 0) stats.dropped += kernel.tp_drops;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: braid-link-relay DEV_A DEV_B DELAY_MS JITTER_MS\n");
    return 2;
  }
  const auto delay = std::chrono::microseconds(static_cast<long>(std::atof(argv[3]) * 1000));
  const auto jitter = std::chrono::microseconds(static_cast<long>(std::atof(argv[4]) * 1000));
  if (delay.count() < 0 || jitter.count() < 0 || jitter > delay) {
    std::fprintf(stderr, "braid-link-relay: need 0 <= JITTER_MS <= DELAY_MS, got %s and %s\n", argv[4], argv[3]);
    return 2;
  }
  // The emulated hosts' ranks keep both cores busy, and a relay scheduled behind them would add
  // milliseconds of its own to the delay (measured: 8-10 ms held for 5 asked, at a load of 12
  // on 2 cores). Real links are not slowed by the hosts' CPUs, so the relay asks for a
  // real-time priority; it sleeps in ppoll between frames, so it cannot starve anyone.
  const sched_param priority{.sched_priority = 10};
  if (::sched_setscheduler(0, SCHED_FIFO, &priority) != 0) {
    std::fprintf(stderr, "braid-link-relay: no real-time priority (%s): delays may run long\n", std::strerror(errno));
  }
  std::signal(SIGTERM, request_stop);
  std::signal(SIGINT, request_stop);
  const int a = open_port(argv[1]), b = open_port(argv[2]);
  DirectionStats there, back;
  std::thread a_to_b(forward, a, b, delay, jitter, 1u, std::ref(there));
  forward(b, a, delay, jitter, 2u, back);
  a_to_b.join();
  for (const auto* d : {&there, &back}) {
    std::fprintf(stderr, "braid-link-relay: %s -> %s: %ld frames, %ld dropped, %.1f MB, held %.2f ms on average\n",
                 d == &there ? argv[1] : argv[2], d == &there ? argv[2] : argv[1], d->frames, d->dropped, d->bytes / 1e6,
                 d->frames > 0 ? 1e3 * d->held_seconds / static_cast<double>(d->frames) : 0.0);
  }
}
