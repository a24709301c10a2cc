// `braid-bench allreduce --compress CODEC[,CODEC...]`: the compressed allreduce per codec and
// message size. Columns: size and count of the fp32 gradient, codec, time (slowest rank, median
// of --repeats batches), algbw on the *uncompressed* size (the effective bandwidth a training
// job sees), the bytes one rank sent (mean over ranks) and their fraction of what an fp32 ring
// allreduce sends, the codec's compression ratio, and the relative error ||r - exact|| / ||exact||
// (L2) of one call, from a fresh error-feedback state, against braid's exact fp32 allreduce of
// the same input. Inputs are gradient-like: uniform values whose magnitude changes every 4096
// elements over 2^-4 .. 2^3. powersgd sees the buffer as a rows x cols matrix, rows the largest
// divisor of the count not above its square root.
#pragma once

#include <string>
#include <vector>

#include "bench_options.h"
#include "braid/compress/codec_spec.h"
#include "braid/comm/communicator.h"

namespace braid::bench {

// The codecs of a --compress list ("int8,topk:0.01"). Throws InvalidArgument for a bad one.
std::vector<compress::CodecSpec> compressed_codecs(const std::string& list);

// Runs the sweep for every codec in options.compress; returns the exit status.
int run_compressed_bench(Communicator& comm, const SweepOptions& options);

}  // namespace braid::bench
