// Joining per-rank trace files into one timeline (`braid-trace merge`): each rank becomes one
// process (pid = rank) of a single Chrome trace.
//
// Clock alignment. Each rank's events are timed by its own steady clock, which is not
// comparable across processes. At creation every recorder reads the steady clock and the
// system clock (CLOCK_REALTIME) together (its ClockAnchor); its file counts ts from that
// moment. The merge places rank r's moment at (system_r - min over ranks of system) and shifts
// all of r's events by that offset. On one host all ranks read the same system clock, so ranks
// line up to within the anchor's read error (well under a microsecond) plus any system-clock
// step (NTP slew) between the anchors, which is negligible for the seconds a job spans. Across
// hosts they line up only as well as the hosts' clocks are synchronised (NTP: ~ms; PTP: ~us):
// the merge then records the hostnames and the tool says so. No attempt is made to estimate
// skew from message timings; cross-host timelines should be read with that error in mind.
#pragma once

#include <string>
#include <vector>

namespace braid::trace {

struct MergedRank {
  int rank = 0;
  std::string file;
  std::string hostname;
  double offset_us = 0;  // added to every ts of this rank
};

struct MergeSummary {
  std::vector<MergedRank> ranks;  // in rank order
  std::size_t events = 0;         // events written, metadata included
  bool several_hosts = false;     // alignment then depends on the hosts' clock sync
};

// The per-rank trace files named by `inputs`: a file is taken as given; a directory stands for
// its braid-trace-rank<R>.json files, in rank order. Throws braid::InvalidArgument for an
// input that does not exist or a directory without trace files.
std::vector<std::string> expand_trace_inputs(const std::vector<std::string>& inputs);

// Merges the per-rank files named by `inputs` (expanded as above) into `output` (written
// atomically). Throws braid::InvalidArgument (missing input, an already merged input, a rank
// found in two files) or braid::Corrupt (not JSON, not a braid trace), naming the file.
MergeSummary merge_trace_files(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace braid::trace
