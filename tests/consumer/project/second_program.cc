// A second user program, built against the installed braid only and run with the installed
// braid-run -n 2 by the consumer test: the public headers of collectives (blocking and
// non-blocking), compression (a codec chosen by name through the policy) and GradSync are
// enough to use them, and what each prints is exact on every rank.
#include <cstdio>
#include <span>
#include <vector>

#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/communicator.h"
#include "braid/compress/compressed_allreduce.h"
#include "braid/compress/compression_policy.h"
#include "braid/engine/grad_sync.h"

int main() {
  braid::Communicator comm = braid::Communicator::init();
  const int rank = comm.rank();
  const float mine = float(rank + 1);  // 1, 2, ...: sums and averages are exact in fp16

  // Collectives: a blocking allreduce and a non-blocking one overlapping a local computation.
  float sum = mine;
  braid::allreduce(comm, &sum, &sum, 1, braid::DType::kF32, braid::ReduceOp::kSum);
  float max = float(rank);
  braid::Work pending = braid::iallreduce(comm, &max, &max, 1, braid::DType::kF32, braid::ReduceOp::kMax);
  pending.wait();
  std::printf("rank %d: allreduce sum = %g, iallreduce max = %g\n", rank, sum, max);

  // Compression: the policy picks the codec named "fp16" for a tensor this large.
  braid::compress::CompressionPolicy policy({.codec = braid::compress::parse_codec_spec("fp16"), .min_elements = 1});
  std::vector<float> grad(4096, mine);
  braid::compress::CompressedAllreduceOptions options{.codec = policy.choose("grad", std::ssize(grad), {}, 0),
                                                      .name = "grad"};
  braid::compress::CompressionState state;
  braid::compress::CompressionStats stats = braid::compress::compressed_allreduce(comm, grad, state, options);
  std::printf("rank %d: compressed_allreduce %s average = %g\n", rank, braid::compress::to_string(stats.codec).c_str(),
              grad.back());

  // GradSync over two gradient buffers, marked ready in reverse (as backward would).
  std::vector<float> weight(1000, mine), bias(10, mine);
  braid::GradSync sync(comm, {.bucket_cap = "1", .policy = policy});
  const int w = sync.add_param("weight", weight.data(), std::ssize(weight), braid::DType::kF32);
  const int b = sync.add_param("bias", bias.data(), std::ssize(bias), braid::DType::kF32);
  sync.mark_ready(b);
  sync.mark_ready(w);
  sync.finish();
  std::printf("rank %d: GradSync weight = %g, bias = %g\n", rank, weight.front(), bias.back());
  return 0;
}
