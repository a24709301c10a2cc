#include "braid/mpi/from_mpi.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <exception>
#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/base/error.h"
#include "braid/base/log.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/socket.h"
#include "braid/bootstrap/store.h"

namespace braid::mpi {

namespace {

// What rank 0 broadcasts: where its store listens and the token to prove, or why it could not
// start one (so that no rank waits for a store that will never exist).
struct Bootstrap {
  std::string host;
  std::uint16_t port = 0;
  std::string token;
  std::string error;  // "" when the store runs
};

// One field per line; the error goes last, since it is the only field that may hold newlines.
// Tokens (BRAID_JOB_TOKEN or generate_job_token) and host names hold none.
std::string encode(const Bootstrap& b) { return fmt::format("{}\n{}\n{}\n{}", b.host, b.port, b.token, b.error); }

Bootstrap decode(const std::string& text) {
  Bootstrap b;
  const std::size_t first = text.find('\n');
  const std::size_t second = text.find('\n', first + 1);
  const std::size_t third = text.find('\n', second + 1);
  b.host = text.substr(0, first);
  b.port = static_cast<std::uint16_t>(std::stoul(text.substr(first + 1, second - first - 1)));
  b.token = text.substr(second + 1, third - second - 1);
  b.error = text.substr(third + 1);
  return b;
}

void check_usable(MPI_Comm comm) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized == 0) {
    throw InvalidArgument({.op = "from_mpi"},
                          "MPI is not initialised: call MPI_Init (or MPI_Init_thread) before braid::mpi::from_mpi");
  }
  if (finalized != 0) throw InvalidArgument({.op = "from_mpi"}, "MPI is already finalised (MPI_Finalize was called)");
  if (comm == MPI_COMM_NULL) {
    throw InvalidArgument({.op = "from_mpi"},
                          "the communicator is MPI_COMM_NULL: this process belongs to no group (e.g. MPI_Comm_split "
                          "with MPI_UNDEFINED); call from_mpi only with a communicator it is a member of");
  }
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter != 0) {
    throw InvalidArgument({.op = "from_mpi"},
                          "the communicator is an intercommunicator; braid needs an intracommunicator (MPI_Intercomm_merge)");
  }
}

// Whether every rank of `comm` runs on one host, as MPI sees it. Collective over `comm`.
bool on_one_host(MPI_Comm comm, int size) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  return node_size == size;
}

// The address the other hosts reach rank 0 at, when the user named none: the first IPv4
// address of an interface that is up and not loopback (the emulated hosts' veth, a node's NIC).
std::string first_interface_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw_system_error({.rank = 0, .op = "from_mpi"}, "getifaddrs", errno);
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> guard(list, &::freeifaddrs);
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
    if ((ifa->ifa_flags & IFF_UP) == 0 || (ifa->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) return text;
  }
  throw InvalidArgument({.rank = 0, .op = "from_mpi"},
                        fmt::format("the ranks span several hosts, but rank 0's host has no IPv4 interface that is up "
                                    "besides loopback: set {} to an address of rank 0's host that the others reach",
                                    env::kMasterAddr.name));
}

std::string store_host(bool one_host) {
  if (auto addr = env::get(env::kMasterAddr)) return *addr;
  if (auto torch_addr = env::get(env::kTorchMasterAddr)) return *torch_addr;
  return one_host ? std::string("127.0.0.1") : first_interface_address();
}

// A name or an address this host does not own (NAT): listen everywhere rather than fail, as
// World's own store does. The token is never empty here, so listening beyond loopback is allowed.
std::unique_ptr<StoreServer> start_store(const std::string& host, const std::string& token) {
  try {
    return std::make_unique<StoreServer>(host, 0, token);
  } catch (const SystemError& e) {
    if (net::is_loopback_address(host)) throw;
    log::warn("rank 0: cannot bind the store to {} ({}); listening on all interfaces", host, e.detail());
    return std::make_unique<StoreServer>("0.0.0.0", 0, token);
  }
}

// Broadcasts rank 0's record to every rank of `comm` (a length, then the bytes).
Bootstrap broadcast(MPI_Comm comm, int rank, const Bootstrap& mine) {
  std::string text = rank == 0 ? encode(mine) : std::string();
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(text.data(), length, MPI_CHAR, 0, comm);
  return decode(text);
}

// The store World::join rendezvouses through: a client of rank 0's server, and on rank 0 the
// server itself, kept alive as long as the world holds the store. The client is declared last,
// so it closes before the server stops.
class MpiRendezvousStore final : public KeyValueStore {
 public:
  MpiRendezvousStore(std::unique_ptr<StoreServer> server, const Bootstrap& b, int rank)
      : server_(std::move(server)), client_(b.host, b.port, b.token, rank) {}
  void set(const std::string& key, std::string_view value, Deadline deadline) override {
    client_.set(key, value, deadline);
  }
  std::string get(const std::string& key, Deadline deadline) override { return client_.get(key, deadline); }
  void wait(const std::vector<std::string>& keys, Deadline deadline) override { client_.wait(keys, deadline); }
  std::string host() const override { return client_.host(); }

 private:
  std::unique_ptr<StoreServer> server_;
  StoreClient client_;
};

}  // namespace

Communicator from_mpi(MPI_Comm comm) {
  check_usable(comm);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool one_host = on_one_host(comm, size);

  Bootstrap mine;
  std::unique_ptr<StoreServer> server;
  std::exception_ptr failure;
  if (rank == 0) {
    try {
      mine.host = store_host(one_host);
      mine.token = env::get(env::kJobToken).value_or(net::generate_job_token());
      server = start_store(mine.host, mine.token);
      mine.port = server->port();
    } catch (const Error& e) {
      failure = std::current_exception();
      mine.error = e.what();
    }
  }
  // Rank 0 broadcasts even when it failed, so that every rank fails with it instead of waiting.
  const Bootstrap b = broadcast(comm, rank, mine);
  if (failure) std::rethrow_exception(failure);
  if (!b.error.empty()) {
    throw InvalidArgument({.rank = rank, .peer = 0, .op = "from_mpi"},
                          fmt::format("rank 0 could not start the rendezvous store: {}", b.error));
  }
  auto store = std::make_shared<MpiRendezvousStore>(std::move(server), b, rank);
  return Communicator::init(rank, size, std::move(store));
}

}  // namespace braid::mpi
