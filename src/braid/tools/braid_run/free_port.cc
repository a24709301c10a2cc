#include "braid/tools/braid_run/free_port.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/unique_fd.h"

namespace braid::launcher {

namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

AddrInfoList resolve(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = ::getaddrinfo(address.c_str(), "0", &hints, &list);
  if (rc != 0) {
    throw InvalidArgument({.op = "pick port"},
                          fmt::format("cannot resolve master address '{}': {}", address, ::gai_strerror(rc)));
  }
  return AddrInfoList(list);
}

int bound_port(int fd) {
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    throw_system_error({.op = "pick port"}, "getsockname", errno);
  }
  if (bound.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

int pick_free_port(const std::string& address) {
  AddrInfoList list = resolve(address);
  int last_errno = EADDRNOTAVAIL;
  for (addrinfo* info = list.get(); info != nullptr; info = info->ai_next) {
    UniqueFd fd(::socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, info->ai_protocol));
    if (!fd.valid() || ::bind(fd.get(), info->ai_addr, info->ai_addrlen) != 0) {
      last_errno = errno;
      continue;
    }
    return bound_port(fd.get());
  }
  throw_system_error({.op = "pick port"},
                     fmt::format("cannot bind a port on master address '{}' (not an address of this host? "
                                 "pass --master-port)",
                                 address),
                     last_errno);
}

}  // namespace braid::launcher
