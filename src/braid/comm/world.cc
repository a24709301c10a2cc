#include "braid/comm/world.h"

#include <sched.h>

#include <algorithm>

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/base/fault_spec.h"
#include "braid/base/log.h"
#include "braid/base/random.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/refusal.h"
#include "braid/bootstrap/socket.h"
#include "braid/transport/shm/shm_transport.h"
#include "braid/transport/tcp/tcp_transport.h"

namespace braid {

namespace {

enum class TransportMode { kAuto, kTcp };

// "shm" is an old spelling of "auto" (shared memory where ranks share a host).
TransportMode transport_mode() {
  return env::get_choice(env::kTransport) == "tcp" ? TransportMode::kTcp : TransportMode::kAuto;
}

// Rank 0's store binds exactly the master address the other ranks dial: it names an interface
// of rank 0's host. Loopback too: binding 127.0.0.1 while the ranks dial 127.0.0.2 or ::1 leaves
// them retrying "connection refused" until the timeout.
std::string store_bind_address(const std::string& master_addr) {
  return master_addr.empty() ? std::string(env::kMasterAddr.default_value) : master_addr;
}

// Where this rank's transport listener binds: BRAID_BIND_ADDR if given; loopback when the
// whole job rendezvouses on loopback (one host); otherwise the local address of the route
// to the master, the interface the other hosts can reach (as Gloo picks its device).
std::string transport_bind_address(const RankInfo& info) {
  if (auto configured = env::get(env::kBindAddr)) return *configured;
  if (net::is_loopback_address(info.master_addr)) return "127.0.0.1";
  return net::route_source_address(info.master_addr, info.master_port);
}

std::unique_ptr<StoreServer> start_store_server(const RankInfo& info) {
  std::string bind = store_bind_address(info.master_addr);
  try {
    return std::make_unique<StoreServer>(bind, info.master_port, info.job_token);
  } catch (const SystemError& e) {
    // A name or an address this host does not own (behind NAT, say): listen everywhere, as
    // torchrun's store does, rather than fail. A loopback address is always this host's.
    if (net::is_loopback_address(bind)) throw;
    const std::string any = bind.find(':') != std::string::npos ? "::" : "0.0.0.0";
    log::warn("rank 0: cannot bind the store to {} ({}); listening on all interfaces ({})", bind, e.detail(), any);
    return std::make_unique<StoreServer>(any, info.master_port, info.job_token);
  }
}

std::string agree_on_job_id(const RankInfo& info, KeyValueStore& store, Deadline deadline) {
  if (!info.job_id.empty()) return info.job_id;
  if (info.rank == 0) store.set("job_id", random_hex(6), deadline);
  return store.get("job_id", deadline);
}

std::string host_key(int rank) { return fmt::format("host/{}", rank); }

// How long a rank that refuses its settings tries to reach the store to say so: long enough
// for rank 0 to start serving it, short enough that the refusal stays prompt.
constexpr Seconds kTellPeersFor{2.0};

// Publishes why this rank refuses to join in place of its host id (best effort).
void tell_peers(const RankInfo& info, const Error& refused) noexcept {
  try {
    const Deadline deadline = Deadline::after(kTellPeersFor);
    StoreClient store(info.master_addr, info.master_port, info.job_token, info.rank, deadline);
    publish_refusal(store, host_key(info.rank), refused, deadline);
  } catch (...) {  // unreachable: the peers' own timeouts will tell
  }
}

// Every BRAID_* setting is checked before this rank takes part in anything (env::check_all), so
// a rank that refuses one fails at once, and first tells its peers, which then fail at once
// too, naming it (exchange_host_ids), instead of waiting for it until BRAID_TIMEOUT. Rank 0
// cannot tell: the store would leave with it, and its peers' store timeout asks whether rank 0
// runs. The same bad value on every rank (an exported typo) makes every rank fail by itself.
void check_settings(const RankInfo& info) {
  try {
    env::check_all();
  } catch (const Error& e) {
    const InvalidArgument refused({.rank = info.rank, .op = "init"}, e.detail());
    if (info.world_size > 1 && info.rank != 0) tell_peers(info, refused);
    throw refused;
  }
}

std::vector<std::string> exchange_host_ids(const RankInfo& info, KeyValueStore& store, Deadline deadline) {
  store.set(host_key(info.rank), default_host_id(), deadline);
  std::vector<std::string> ids;
  for (int r = 0; r < info.world_size; ++r) {
    ids.push_back(store.get(host_key(r), deadline));
    throw_if_refused(ids.back(), {.rank = info.rank, .peer = r, .op = "init"}, "settings");
  }
  return ids;
}

// Whether the ranks on this host outnumber the cores this process may run on.
bool ranks_outnumber_cores(const Topology& topology, int rank) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  int cores = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  // A rank pinned to one CPU sees one core in its mask, shared or not: braid-run says when it
  // is the CPU's only rank. Taking such a rank for a crowded one made every wait yield its CPU
  // to whatever other program ran there (docs/performance.md, "Waiting beside other programs").
  if (auto own = env::get_int_if_set(env::kOwnCpu);
      own && cores == 1 && *own < CPU_SETSIZE && CPU_ISSET(static_cast<int>(*own), &cpus)) {
    return false;
  }
  return topology.local_size(rank) > cores;
}

// BRAID_FAULT, parsed and checked against the job before any connection is made, so that a
// malformed specification fails every rank at once rather than after a rendezvous.
std::optional<FaultSpec> fault_from_env(const RankInfo& info) {
  std::optional<std::string> text = env::get(env::kFault);
  if (!text) return std::nullopt;
  FaultSpec spec = parse_fault_spec(*text);
  if (spec.rank >= info.world_size) {
    throw InvalidArgument({.rank = info.rank, .op = "fault injection"},
                          fmt::format("BRAID_FAULT='{}': rank {} is not in this job of {} ranks", *text, spec.rank,
                                      info.world_size));
  }
  return spec;
}

std::shared_ptr<Fabric> connect_fabric(const RankInfo& info, const Topology& topology, KeyValueStore& store,
                                       const std::string& job_id, Deadline deadline) {
  std::optional<FaultSpec> fault = fault_from_env(info);
  std::vector<int> local;
  if (transport_mode() == TransportMode::kAuto) local = topology.ranks_on_host(topology.host_of(info.rank));
  std::vector<int> remote;
  for (int r = 0; r < info.world_size; ++r) {
    if (r != info.rank && std::find(local.begin(), local.end(), r) == local.end()) remote.push_back(r);
  }

  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<int> route(static_cast<std::size_t>(info.world_size), -1);
  if (local.size() > 1) {
    // Both are range-checked by their env.h declarations; a chunk is at most half a ring, so
    // that the sender can fill one half while the receiver drains the other.
    const auto ring_bytes = static_cast<std::size_t>(env::get_int(env::kShmRingBytes));
    shm::ShmOptions options{.rank = info.rank,
                            .local_ranks = local,
                            .job_id = job_id,
                            .ring_bytes = ring_bytes,
                            .chunk_bytes = std::min(static_cast<std::size_t>(env::get_int(env::kShmChunkBytes)),
                                                    ring_bytes / 2)};
    transports.push_back(shm::ShmTransport::connect(options, store, deadline));
    for (int r : local) route[static_cast<std::size_t>(r)] = static_cast<int>(transports.size() - 1);
  }
  if (!remote.empty()) {
    std::string bind = transport_bind_address(info);
    tcp::TcpOptions options{.rank = info.rank, .peers = remote, .bind_addr = bind, .advertise_addr = bind,
                            .token = info.job_token, .tls = env::get_choice(env::kTls) == "on",
                            .streams = static_cast<int>(env::get_int(env::kTcpStreams)),
                            .buffer_bytes = static_cast<std::size_t>(env::get_int(env::kTcpBufferBytes))};
    if (bind == "0.0.0.0") options.advertise_addr = net::route_source_address(info.master_addr, info.master_port);
    transports.push_back(tcp::TcpTransport::connect(options, store, deadline));
    for (int r : remote) route[static_cast<std::size_t>(r)] = static_cast<int>(transports.size() - 1);
  }
  FabricOptions fabric_options{.spin_seconds = static_cast<double>(env::get_int(env::kSpinUs)) * 1e-6,
                               .yield_while_spinning = ranks_outnumber_cores(topology, info.rank),
                               .fault = fault};
  return std::make_shared<Fabric>(info.rank, info.world_size, std::move(transports), std::move(route), fabric_options);
}

void make_single_rank(World& world) {
  world.topology = Topology({default_host_id()});
  world.fabric =
      std::make_shared<Fabric>(0, 1, std::vector<std::unique_ptr<Transport>>{}, std::vector<int>{0}, FabricOptions{});
}

// The steps after the store exists, shared by create() and join().
void connect_world(World& world, Deadline deadline) {
  world.job_id = agree_on_job_id(world.info, *world.store, deadline);
  world.topology = Topology(exchange_host_ids(world.info, *world.store, deadline));
  world.fabric = connect_fabric(world.info, world.topology, *world.store, world.job_id, deadline);
}

// The peers' connections prove a token; the caller's store is what the ranks already trust, so
// rank 0 draws one there unless the launcher gave BRAID_JOB_TOKEN to every rank.
std::string agree_on_job_token(int rank, KeyValueStore& store, Deadline deadline) {
  if (auto token = env::get(env::kJobToken)) return *token;
  if (rank == 0) store.set("job_token", net::generate_job_token(), deadline);
  return store.get("job_token", deadline);
}

// The master address only steers which interface the TCP listener binds (transport_bind_address):
// loopback unless the store knows rank 0's host (KeyValueStore::host) or the launcher names one.
RankInfo joined_rank_info(int rank, int size, const std::string& store_host) {
  RankInfo info{.rank = rank, .world_size = size, .local_rank = -1, .local_world_size = -1, .source = "store"};
  if (!store_host.empty()) info.master_addr = store_host;
  else if (auto addr = env::get(env::kMasterAddr)) info.master_addr = *addr;
  else if (auto torch_addr = env::get(env::kTorchMasterAddr)) info.master_addr = *torch_addr;
  return info;
}

}  // namespace

std::shared_ptr<World> World::create() {
  auto world = std::make_shared<World>();
  world->info = discover_rank_info();
  const RankInfo& info = world->info;
  check_settings(info);
  if (info.world_size == 1) {
    make_single_rank(*world);
    return world;
  }
  Deadline deadline = Deadline::from_env();
  if (info.rank == 0) world->store_server = start_store_server(info);
  world->store = std::make_shared<StoreClient>(info.master_addr, info.master_port, info.job_token, info.rank, deadline);
  connect_world(*world, deadline);
  return world;
}

std::shared_ptr<World> World::join(int rank, int size, std::shared_ptr<KeyValueStore> store) {
  auto world = std::make_shared<World>();
  world->info = joined_rank_info(rank, size, store->host());
  try {
    env::check_all();
  } catch (const Error& e) {
    throw InvalidArgument({.rank = rank, .op = "init"}, e.detail());
  }
  if (size == 1) {
    make_single_rank(*world);
    return world;
  }
  Deadline deadline = Deadline::from_env();
  world->store = std::move(store);
  world->info.job_token = agree_on_job_token(rank, *world->store, deadline);
  connect_world(*world, deadline);
  return world;
}

}  // namespace braid
