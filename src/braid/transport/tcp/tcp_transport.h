// Point-to-point transport over TCP: BRAID_TCP_STREAMS connections per pair of ranks (1 by
// default), full duplex, TCP_NODELAY, non-blocking, optionally inside TLS 1.3 (BRAID_TLS=on:
// tls_session.h; then headers and payloads are written as TLS records instead of by writev,
// and a pair runs one connection). Each direction of stream 0 is a stream of frames
// (message_header.h): a data frame's payload is written straight from the sender's buffer
// (writev of header + payload) and read straight into the matched receive's buffer, so large
// messages stream without a staging copy. Abort and bye control frames travel between data
// frames.
//
// Striping (tcp_stripe_stream.h, stripe_plan.h): a message large enough is cut into one stripe
// per stream; stream 0 carries its header and first stripe, stream i its stripe i, all at once,
// each read straight into its place in the matched receive's buffer. One TCP connection is
// bounded by its congestion window and by the one core that runs its softirq work; several
// fill a link that one cannot (NCCL's NCCL_NSOCKS_PERTHREAD). Small messages stay on stream 0:
// their order and latency are unchanged. A peer lost on any of its streams is lost.
//
// BRAID_TCP_BUFFER_BYTES fixes SO_SNDBUF/SO_RCVBUF of every connection; 0 (the default) leaves
// them to the kernel's autotuning (docs/transports.md says why).
//
// A connection that reaches EOF after the peer's bye frame was closed in order; one that
// reaches EOF (or ECONNRESET) without it means the peer died. Either way a pending or later
// request with that peer fails with braid::PeerLost at once (no waiting for the timeout).
// A peer that goes silent without closing (a cut or black-holed link, a host that went down)
// counts as lost after BRAID_PEER_TIMEOUT: keepalive fails an idle connection, and
// check_peers() reads the kernel's retransmission state for one with data in flight
// (Note [Lost peers] in bootstrap/tcp_liveness.cc).
//
// Thread-safety: see transport.h (everything but sleep() under the Fabric's lock).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/uio.h>

#include "braid/base/unique_fd.h"
#include "braid/transport/matcher.h"
#include "braid/transport/transport.h"

namespace braid {
class KeyValueStore;
}

namespace braid::tcp {

struct StripedIncoming;  // tcp_stripe_stream.h

struct TcpOptions {
  int rank = 0;
  std::vector<int> peers;        // global ranks reached over TCP (ascending, without `rank`)
  std::string bind_addr;         // where this rank's listener binds
  std::string advertise_addr;    // what peers are told to connect to
  std::string token;             // the job token every connection proves
  bool tls = false;              // BRAID_TLS: every connection also runs TLS 1.3 (tls_session.h)
  int streams = 1;               // BRAID_TCP_STREAMS: connections per pair (1 under TLS)
  std::size_t buffer_bytes = 0;  // BRAID_TCP_BUFFER_BYTES: SO_SNDBUF/SO_RCVBUF; 0 = autotuning
};

class TcpTransport final : public Transport {
 public:
  // Collective over `options.peers` (through `store`): listen, publish, connect the mesh (each
  // rank connects to lower ranks and accepts higher ones), prove the job token both ways.
  static std::unique_ptr<TcpTransport> connect(const TcpOptions& options, KeyValueStore& store, Deadline deadline);
  ~TcpTransport() override;

  std::string_view name() const override { return "tcp"; }
  void post_send(const RequestPtr& send) override;
  void post_recv(const RequestPtr& recv) override;
  void post_any_source_recv(const RequestPtr& recv, int peer_rank) override;
  bool progress() override;
  void check_peers() override;
  std::string lost_reason(int peer) override;
  std::optional<Envelope> unexpected(int peer, const MatchKey& key) override;
  void arm_wakeup(WakeupArm& arm) override;
  void sleep(const WakeupArm& arm, Seconds max_wait) override;
  void disarm_wakeup() override {}
  void send_abort(int peer, const Error& error) noexcept override;
  void fail_all(const std::exception_ptr& error) noexcept override;
  bool has_pending() const override;
  bool close_for_fault(int peer) noexcept override;
  void shutdown(Deadline deadline) noexcept override;

  struct Peer;

 private:
  explicit TcpTransport(TcpOptions options);
  Peer& peer(int rank);
  bool progress_sends(Peer& p);
  bool progress_recvs(Peer& p);
  // What one read from a peer's socket did.
  struct Received {
    std::size_t bytes = 0;  // that arrived
    bool go_on = true;      // false once the socket has nothing more (or closed)
  };
  Received receive(Peer& p, std::byte* dst, std::size_t want);
  Received receive(Peer& p, iovec* iov, int count);
  // One send of `iov` (plain: sendmsg; TLS: the first part as records), as ::send returns.
  static ssize_t send_parts(Peer& p, const iovec* iov, int count);
  // The steps of progress_recvs, one per Peer::ReadTarget: each reads into its target and
  // acts on it once complete.
  Received read_header(Peer& p);
  Received read_data_payload(Peer& p);
  Received read_abort_text(Peer& p);
  void start_frame(Peer& p);
  void on_eof(Peer& p, int err);
  // Striping (tcp_stripes.cc): the stripes beyond the first of a send being posted, and of a
  // message whose header stream 0 just read; moving the extra streams' bytes.
  void post_stripes(Peer& p, const RequestPtr& send);
  void receive_stripes(Peer& p);
  void stripe_arrived(Peer& p, std::uint64_t bytes, const std::shared_ptr<StripedIncoming>& target);
  bool progress_stripes(Peer& p);
  bool progress_stripe_sends(Peer& p, int stream);
  bool progress_stripe_recvs(Peer& p, int stream);
  void stripe_stream_failed(Peer& p, int stream, int err);
  [[noreturn]] void throw_lost(const Peer& p, const std::string& why) const;
  void check_silent_peers();

  TcpOptions options_;
  Seconds lost_after_{0};                  // BRAID_PEER_TIMEOUT, read once at connect
  Clock::time_point next_silence_check_{};  // TCP_INFO is read at most once a second
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<int> peer_index_;  // global rank -> index in peers_, or -1
};

}  // namespace braid::tcp
