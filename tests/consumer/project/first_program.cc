// The "first program" of README.md, built against the installed braid and run with the
// installed braid-run by the consumer test, so the README's example is known to work.
#include <cstdio>
#include <vector>

#include "braid/comm/communicator.h"

int main() {
  braid::Communicator comm = braid::Communicator::init();  // joins the job braid-run started
  std::vector<float> data(1024, float(comm.rank()));
  if (comm.rank() == 0) {
    comm.send(data.data(), data.size(), braid::DType::kF32, /*peer=*/1);
  } else if (comm.rank() == 1) {
    comm.recv(data.data(), data.size(), braid::DType::kF32, /*peer=*/0);  // now all 0.0f
  }
  braid::Work w = comm.isend(data.data(), 1, braid::DType::kF32, comm.rank());  // non-blocking
  float self = -1;
  comm.recv(&self, 1, braid::DType::kF32, comm.rank());
  w.wait();
  comm.barrier();
  std::printf("rank %d of %d: data[0] = %g, self = %g\n", comm.rank(), comm.size(), data[0], self);
}
