#!/usr/bin/env bash
# Fuzzes every codec's decoder (tests/fuzz/codec_decode_fuzz.cc, docs/fuzzing.md).
#
#   scripts/fuzz.sh [SECONDS_PER_CODEC] [BUILD_DIR] [CODEC...]
#
# SECONDS_PER_CODEC  libFuzzer time per codec (default 60)
# BUILD_DIR          the clang fuzz tree (default build-fuzz); configured and built on the first
#                    run, incremental afterwards
# CODEC...           which codecs (default: all; names as in codec specs: none fp16 int8 ...)
#
# The one fuzz target runs once per codec, starting from that codec's seeds (valid payloads
# written by codec_fuzz_seeds) plus the corpus kept in BUILD_DIR/corpus/<codec> from earlier
# runs and the regression inputs in tests/fuzz/regressions, so every codec gets its share of
# the time. Exits non-zero on the first finding and prints the reproducer's path.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build=${2:-$root/build-fuzz}
shift $(($# < 2 ? $# : 2))
codecs=("$@")

log() { echo "fuzz: $*"; }
die() {
  echo "fuzz: ERROR: $*" >&2
  exit 1
}

[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || die "SECONDS_PER_CODEC must be a positive integer, not '$seconds'"
mkdir -p "$build"
build=$(cd "$build" && pwd)

# --- Toolchain: clang++ and libFuzzer's runtime (Debian: clang, libclang-rt-14-dev) --------
command -v clang++ >/dev/null || die "clang++ not found: install the Debian package 'clang' (scripts/setup.sh does)"
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe_dir/probe.cc"
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cc" -o "$probe_dir/probe" 2>"$probe_dir/err"; then
  cat "$probe_dir/err" >&2
  die "clang++ cannot link a libFuzzer target with ASan/UBSan: install the Debian package" \
    "'libclang-rt-$(clang++ -dumpversion | cut -d. -f1)-dev' (scripts/setup.sh does)"
fi

# Readable stack traces in sanitizer reports (Debian's llvm-14 keeps it out of PATH).
if [[ -z ${ASAN_SYMBOLIZER_PATH:-} ]]; then
  for candidate in "$(command -v llvm-symbolizer || true)" /usr/lib/llvm-*/bin/llvm-symbolizer; do
    if [[ -x $candidate ]]; then
      export ASAN_SYMBOLIZER_PATH=$candidate
      break
    fi
  done
fi
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# --- Build ------------------------------------------------------------------------------
started=$SECONDS
if [[ ! -f $build/build.ninja ]]; then
  log "configuring the clang fuzz tree in $build"
  # -O1 -g without NDEBUG: the codecs' assertions stay armed while fuzzing.
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DBRAID_BUILD_FUZZERS=ON -DBRAID_BUILD_TESTS=OFF -DBRAID_BUILD_BENCH=OFF -DBRAID_WITH_TORCH=OFF >"$build/configure.log" ||
    { cat "$build/configure.log" >&2; die "configuring the fuzz tree failed"; }
fi
log "building codec_decode_fuzz and codec_fuzz_seeds"
cmake --build "$build" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" --target codec_decode_fuzz codec_fuzz_seeds ||
  die "building the fuzz tree failed"
log "build took $((SECONDS - started)) s"

fuzzer=$build/tests/fuzz/codec_decode_fuzz
seeds=$build/seeds
rm -rf "$seeds"
"$build/tests/fuzz/codec_fuzz_seeds" "$seeds" "${codecs[@]}" || die "writing the seed corpus failed"
if [[ ${#codecs[@]} -eq 0 ]]; then
  mapfile -t codecs < <(ls "$seeds")
fi

# --- Fuzz, one codec at a time ------------------------------------------------------------
regressions=()
[[ -d $root/tests/fuzz/regressions ]] && regressions=("$root/tests/fuzz/regressions")
findings=$build/findings
mkdir -p "$findings"
for codec in "${codecs[@]}"; do
  [[ -d $seeds/$codec ]] || die "no seeds for codec '$codec' (known: $(ls "$seeds" | tr '\n' ' '))"
  corpus=$build/corpus/$codec
  mkdir -p "$corpus"
  log "$codec: fuzzing for ${seconds} s ($(ls "$seeds/$codec" | wc -l) seeds, $(ls "$corpus" | wc -l) in the kept corpus)"
  log_file=$build/fuzz-$codec.log
  status=0
  "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$root/tests/fuzz/codec_payload.dict" -artifact_prefix="$findings/$codec-" \
    "$corpus" "$seeds/$codec" "${regressions[@]}" >"$log_file" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log_file" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log_file" | tail -1)
  if [[ $status -ne 0 ]]; then
    # The report from its first line (sanitizer, libFuzzer or the target's FINDING), then
    # libFuzzer's summary of the input.
    first=$(grep -n -m1 -E '==ERROR|FINDING|runtime error|ERROR: libFuzzer' "$log_file" | cut -d: -f1 || true)
    [[ -n $first ]] && sed -n "${first},$((first + 40))p" "$log_file" >&2
    echo "..." >&2
    grep -E '^(SUMMARY|MS:|artifact_prefix|Base64)' "$log_file" >&2 || tail -n 20 "$log_file" >&2
    reproducer=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log_file" | tail -1)
    echo >&2
    echo "fuzz: FINDING in codec '$codec' (libFuzzer exit status $status); full log: $log_file" >&2
    if [[ -n $reproducer ]]; then
      echo "fuzz: reproducer: $reproducer" >&2
      echo "fuzz: replay it:  $fuzzer $reproducer" >&2
      echo "fuzz: its bytes:  xxd $reproducer" >&2
    fi
    exit 1
  fi
  log "$codec: ok, ${runs:-?} executions (${rate:-?}/s), corpus now $(ls "$corpus" | wc -l) inputs"
done
log "no findings in ${#codecs[@]} codecs (${seconds} s each); total $((SECONDS - started)) s"
