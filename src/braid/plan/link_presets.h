// Link classes for the alpha-beta(-gamma) cost model: alpha is the per-message latency in
// seconds, bandwidth the one-direction bytes per second a rank can push (1/beta), gamma the
// seconds per byte of reduction arithmetic (0 for accelerators, whose reduction is far faster
// than their links).
//
// Values come from seeds/004 4.2 where it gives them (NVLink H100 NVSwitch 900 GB/s both
// directions ~1 us; InfiniBand HDR/NDR 25-50 GB/s per port ~1-2 us; RoCEv2 25-50 GB/s per
// port ~2-5 us) and seeds/002 (A100 NVLink 600 GB/s, Ethernet 100 Gbps); the rest (PCIe, 25
// and 10 GbE latencies) are typical published figures, marked as such in `source`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace braid::plan {

struct LinkParams {
  std::string name = "custom";
  double alpha = 5e-6;        // seconds per message
  double bandwidth = 10e9;    // bytes per second, one direction
  double gamma = 0;           // seconds per byte reduced
  std::string source;         // where the numbers come from

  double beta() const { return 1.0 / bandwidth; }
};

// nvlink (= nvlink-h100, nvswitch), nvlink-a100, pcie4, pcie5, ib-hdr, ib-ndr, roce,
// eth-100g, eth-25g, eth-10g. Throws InvalidArgument listing them for anything else.
LinkParams link_preset(std::string_view name, std::string_view field = "link");
std::vector<LinkParams> link_presets();

}  // namespace braid::plan
