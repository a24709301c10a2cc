# Sourced by the slow-link benchmarks (bench/slow_link.sh, bench/zero/zeropp_slow_link.sh): two
# emulated hosts, network namespaces <prefix>0 and <prefix>1 joined by a veth pair whose ends
# carry addr0 and addr1 (/24), each end's egress shaped by tc's token bucket to `rate`, so
# both directions are (tbf: netem is often not built). SHAPED_BURST sets the bucket's burst
# (default 256kb). Needs root.
#
#   shaped_link_up PREFIX ADDR0 ADDR1 RATE
#   shaped_link_down PREFIX        # also safe when nothing is there (an interrupted run's leftovers)

shaped_link_down() {
  ip netns del "$1"0 2>/dev/null || true
  ip netns del "$1"1 2>/dev/null || true
}

shaped_link_up() {
  local prefix=$1 rate=$4 h
  local addrs=("$2" "$3")
  ip netns add "$prefix"0
  ip netns add "$prefix"1
  ip link add "$prefix"v0 type veth peer name "$prefix"v1
  ip link set "$prefix"v0 netns "$prefix"0
  ip link set "$prefix"v1 netns "$prefix"1
  for h in 0 1; do
    ip -n "$prefix$h" link set lo up
    ip -n "$prefix$h" addr add "${addrs[$h]}"/24 dev "$prefix"v$h
    ip -n "$prefix$h" link set "$prefix"v$h up
    ip netns exec "$prefix$h" tc qdisc add dev "$prefix"v$h root tbf rate "$rate" burst "${SHAPED_BURST:-256kb}" latency 50ms
  done
}
