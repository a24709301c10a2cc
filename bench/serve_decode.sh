#!/usr/bin/env bash
# Per-token decode latency of braid-serve (issue 24 item 2): gpt-small greedy decoding from the
# paged KV cache with TP 1 and TP 2 (2 ranks), REPEATS alternating runs of each, and per run the
# per-token median and p90, split into communication (time inside the TP allreduces, as the
# CollectiveObserver sees it: it includes waiting for the slower rank) and compute (the rest),
# the communication share of the decode time, the prefill time and the allreduces' algorithms.
# The machine's load changes from run to run: compare figures of the same session only.
#
# Usage: bench/serve_decode.sh
# Environment: BUILD_DIR (build), REPEATS (3), TPS ("1 2"), MODEL (gpt-small), NEW_TOKENS (64),
#   BLOCK_TOKENS (16), PROMPT (a 32-character line), THREADS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
bin=${BUILD_DIR:-build}/bin
repeats=${REPEATS:-3}
prompt=${PROMPT:-"The quick brown fox jumps over t"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "# $(lscpu | grep 'Model name' | sed 's/  */ /g'); $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
echo "# ${MODEL:-gpt-small}, ${#prompt}-token prompt, ${NEW_TOKENS:-64} new tokens, ${BLOCK_TOKENS:-16}-token blocks, ${THREADS:-1} thread(s) per rank"
printf "%3s %4s %10s %10s %10s %10s %10s %10s %11s  %s\n" tp run tok_med_ms tok_p90_ms comm_med comm_p90 comp_med \
  comm_share prefill_ms collectives
for r in $(seq "$repeats"); do
  for tp in ${TPS:-1 2}; do
    "$bin/braid-run" -n "$tp" "$bin/braid-serve" --model "${MODEL:-gpt-small}" --tp "$tp" --prompt "$prompt" \
      --max-new-tokens "${NEW_TOKENS:-64}" --block-tokens "${BLOCK_TOKENS:-16}" --threads "${THREADS:-1}" \
      --json "$dir/$tp.$r.json" > "$dir/$tp.$r.out" 2>&1 || { cat "$dir/$tp.$r.out" >&2; exit 1; }
    python3 - "$dir/$tp.$r.json" "$tp" "$r" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); d = j["decode"]
calls = ", ".join(f"{k} x{v}" for k, v in j["collectives"].items()) or "-"
print(f'{sys.argv[2]:>3} {sys.argv[3]:>4} {d["total"]["median_ms"]:10.3f} {d["total"]["p90_ms"]:10.3f} '
      f'{d["comm"]["median_ms"]:10.3f} {d["comm"]["p90_ms"]:10.3f} {d["compute"]["median_ms"]:10.3f} '
      f'{100 * d["comm_share"]:9.1f}% {j["prefill"]["ms"]:11.3f}  {calls}')
PY
  done
done
