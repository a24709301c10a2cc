#include "braid/plan/link_presets.h"

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::plan {

std::vector<LinkParams> link_presets() {
  return {
      {"nvlink-h100", 1e-6, 450e9, 0, "seeds/004 4.2: H100 NVSwitch 900 GB/s bidirectional, ~1 us"},
      {"nvlink-a100", 1e-6, 300e9, 0, "seeds/002: A100 NVLink 600 GB/s bidirectional; latency as seeds/004"},
      {"pcie4", 2e-6, 25e9, 0, "typical: PCIe 4.0 x16, 32 GB/s raw, ~25 GB/s achieved (not in the seeds)"},
      {"pcie5", 2e-6, 50e9, 0, "typical: PCIe 5.0 x16, 64 GB/s raw, ~50 GB/s achieved (not in the seeds)"},
      {"ib-hdr", 1.5e-6, 25e9, 0, "seeds/004 4.2: InfiniBand HDR 200 Gb/s = 25 GB/s per port, ~1-2 us"},
      {"ib-ndr", 1.5e-6, 50e9, 0, "seeds/004 4.2: InfiniBand NDR 400 Gb/s = 50 GB/s per port, ~1-2 us"},
      {"roce", 3.5e-6, 25e9, 0, "seeds/004 4.2: RoCEv2 ~25-50 GB/s per port (200 GbE taken), ~2-5 us"},
      {"eth-100g", 10e-6, 12.5e9, 0, "seeds/002: Ethernet 100 Gbps; ~10 us kernel TCP latency (typical)"},
      {"eth-25g", 15e-6, 3.125e9, 0, "typical: 25 GbE, ~15 us kernel TCP latency (not in the seeds)"},
      {"eth-10g", 20e-6, 1.25e9, 0, "typical: 10 GbE, ~20 us kernel TCP latency (not in the seeds)"},
  };
}

LinkParams link_preset(std::string_view name, std::string_view field) {
  std::string_view key = name;
  if (key == "nvlink" || key == "nvswitch") key = "nvlink-h100";
  for (LinkParams& link : link_presets()) {
    if (link.name == key) return link;
  }
  throw InvalidArgument({.op = "braid-plan"},
                        fmt::format("{}: unknown link '{}' (nvlink, nvlink-h100, nvlink-a100, pcie4, pcie5, ib-hdr, "
                                    "ib-ndr, roce, eth-100g, eth-25g, eth-10g)",
                                    field, name));
}

}  // namespace braid::plan
