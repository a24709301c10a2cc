# Sourced by the misbehaving-network tests and benchmarks (tests/mp/netem_test.cc,
# bench/straggler.sh): what netem would do to a veth link, built from what this kernel has.
# Its kernel is built without sch_netem (CONFIG_NET_SCH_NETEM is not set, nor fq or gact), so:
#   - loss: a classic-BPF filter in direct-action mode on the clsact qdisc, on both the egress
#     and the ingress hook of one end of the link, so both directions lose; it draws the
#     kernel's per-packet random number (the `ld rand` ancillary load) and returns TC_ACT_SHOT
#     (2) for a fraction of packets, TC_ACT_OK (0) for the rest. 100% drops every packet: a
#     partition that keeps the link "up", as a dead switch port or a black-holed route would;
#   - a slow link: tc's token bucket (tbf) on the egress of both ends.
# Every function takes the namespace NS ("-" for the current one) and the device DEV.
#
#   link_loss NS DEV PERCENT     # 0 < PERCENT <= 100, decimals allowed (0.1)
#   link_rate NS DEV RATE        # tc's rate syntax: 100mbit, 1gbit
#   link_clear NS DEV            # back to a clean link (also safe on a clean one)

_link_tc() {  # NS tc-args...
  local ns=$1; shift
  if [ "$ns" = - ]; then tc "$@"; else ip netns exec "$ns" tc "$@"; fi
}

# The classic BPF program, in tc's "count,op jt jf k,..." syntax. Instructions:
#   ld rand           32 0 0 0xfffff038  (SKF_AD_OFF + SKF_AD_RANDOM: a fresh u32 per packet)
#   jge #threshold    53 1 0 T           (A >= T: keep, jump over the drop)
#   ret #2            6 0 0 2            (TC_ACT_SHOT: drop)
#   ret #0            6 0 0 0            (TC_ACT_OK: pass)
# so a packet is dropped with probability T / 2^32.
link_loss_bytecode() {  # PERCENT
  awk -v p="$1" 'BEGIN {
    if (p + 0 <= 0 || p + 0 > 100) { print "link_loss: PERCENT must be in (0, 100], got " p > "/dev/stderr"; exit 1 }
    if (p + 0 == 100) { print "1,6 0 0 2"; exit 0 }
    printf "4,32 0 0 4294963256,53 1 0 %.0f,6 0 0 2,6 0 0 0\n", p / 100 * 4294967296 }'
}

link_loss() {  # NS DEV PERCENT
  local code hook
  code=$(link_loss_bytecode "$3") || return 1
  _link_tc "$1" qdisc del dev "$2" clsact 2>/dev/null || true
  _link_tc "$1" qdisc add dev "$2" clsact || return 1
  for hook in egress ingress; do
    _link_tc "$1" filter add dev "$2" "$hook" bpf da bytecode "$code" || return 1
  done
}

link_rate() {  # NS DEV RATE
  _link_tc "$1" qdisc replace dev "$2" root tbf rate "$3" burst 256kb latency 50ms
}

link_clear() {  # NS DEV
  _link_tc "$1" qdisc del dev "$2" clsact 2>/dev/null || true
  _link_tc "$1" qdisc del dev "$2" root 2>/dev/null || true
}
