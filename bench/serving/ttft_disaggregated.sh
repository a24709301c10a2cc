#!/usr/bin/env bash
# Time to first token's transfer part with braid-serve --prefill-ranks: the KV cache streamed
# layer by layer (overlapping the prefill's later layers) against streamed after the whole
# prefill (--kv-after-prefill), alternating, REPEATS runs each (default 3); prints each run's
# ttft_ms and the medians. Extra arguments go to braid-serve (default: gpt-small, 1 -> 1).
#   bench/serving/ttft_disaggregated.sh [--prefill-ranks 2 --tp 1]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BUILD_DIR:-build}/bin
repeats=${REPEATS:-3}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--prefill-ranks 1 --tp 1)
ranks=$(( $(echo "${args[@]}" | sed -n 's/.*--prefill-ranks \([0-9]*\).*/\1/p') + $(echo "${args[@]}" | sed -n 's/.*--tp \([0-9]*\).*/\1/p') ))
prompt=$(printf 'The quick brown fox jumps over the lazy dog. %.0s' 1 2)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u +'%F %H:%M') $(lscpu | grep 'Model name' | sed 's/  */ /g'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$repeats"); do
  for mode in overlap after; do
    extra=(); [ "$mode" = after ] && extra=(--kv-after-prefill)
    "$bin/braid-run" -n "$ranks" "$bin/braid-serve" --model gpt-small "${args[@]}" "${extra[@]}" --prompt "$prompt" \
      --max-new-tokens 2 --json "$tmp/$mode.$r.json" > /dev/null
    python3 -c "import json,sys; print('$mode', json.load(open('$tmp/$mode.$r.json'))['disaggregation']['ttft_ms'])"
  done
done | tee "$tmp/all"
awk '{ v[$1] = v[$1] " " $2 } END { for (m in v) { n = split(v[m], a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; printf "# %s: median ttft %s ms of %d runs\n", m, a[int((n + 1) / 2)], n } }' "$tmp/all"
