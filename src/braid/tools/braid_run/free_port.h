// Picking the rendezvous port for a job.
#pragma once

#include <string>

namespace braid::launcher {

// A TCP port that was free on `address` a moment ago: binds port 0, reads the port the kernel
// chose and closes the socket. Another process may take the port before rank 0 binds it (the
// same race torchrun's default has); in exchange nobody has to choose ports by hand.
// Throws InvalidArgument when `address` does not resolve and SystemError when nothing on it
// can be bound (e.g. it is not an address of this host: pass --master-port then).
int pick_free_port(const std::string& address);

}  // namespace braid::launcher
