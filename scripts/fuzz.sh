#!/usr/bin/env bash
# Fuzzes braid's decoders of untrusted bytes (tests/fuzz/, docs/fuzzing.md).
#
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR] [WHAT...]
#
# SECONDS    libFuzzer time per run (default 60): each codec is one run of codec_decode_fuzz,
#            each other target one run; 0 builds the tree and writes the seeds, fuzzing nothing
#            (CTest's decoder_fuzz_build: the build takes both cores, the runs only one)
# BUILD_DIR  the clang fuzz tree (default build-fuzz); configured and built on the first run,
#            incremental afterwards (through ccache when it is installed)
# WHAT...    which runs (default: all): a target name (store_frame_fuzz, handshake_fuzz, ...),
#            a codec name (none fp16 int8 ...: codec_decode_fuzz on that codec's seeds), or
#            `codecs` (every codec)
#
# Each run starts from its seeds (valid inputs written by codec_fuzz_seeds and
# decoder_fuzz_seeds), the corpus kept in BUILD_DIR/corpus/<run> from earlier runs and the
# inputs in tests/fuzz/regressions/<target>/ (every one replayed first), with the dictionary
# tests/fuzz/dicts/<target>.dict where there is one. Exits non-zero on the first finding and
# prints the reproducer's path.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build=${2:-$root/build-fuzz}
shift $(($# < 2 ? $# : 2))
wanted=("$@")

# The targets besides the codecs', in the order they run.
decoder_targets=(store_frame_fuzz handshake_fuzz wire_header_fuzz tuning_file_fuzz trace_reader_fuzz idx_file_fuzz
  text_corpus_fuzz checkpoint_manifest_fuzz)

log() { echo "fuzz: $*"; }
die() {
  echo "fuzz: ERROR: $*" >&2
  exit 1
}

[[ $seconds =~ ^[0-9]+$ ]] || die "SECONDS must be a non-negative integer, not '$seconds'"
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
export BRAID_LOG_LEVEL=${BRAID_LOG_LEVEL:-error}  # refusals log at warn, millions of times

# --- Which runs ----------------------------------------------------------------------------
all_codecs=1
codecs=()
targets=()
if [[ ${#wanted[@]} -eq 0 ]]; then
  targets=(codec_decode_fuzz "${decoder_targets[@]}")
else
  all_codecs=0
  for what in "${wanted[@]}"; do
    if [[ $what == codecs || $what == codec_decode_fuzz ]]; then
      all_codecs=1
      targets+=(codec_decode_fuzz)
    elif [[ " ${decoder_targets[*]} " == *" $what "* ]]; then
      targets+=("$what")
    else
      codecs+=("$what")  # checked against the seeds below
      [[ " ${targets[*]} " == *" codec_decode_fuzz "* ]] || targets+=(codec_decode_fuzz)
    fi
  done
fi

# --- Build ------------------------------------------------------------------------------
started=$SECONDS
if [[ ! -f $build/build.ninja ]]; then
  log "configuring the clang fuzz tree in $build"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # -O1 -g without NDEBUG: the decoders' assertions stay armed while fuzzing.
  cmake -G Ninja -S "$root" -B "$build" "${launcher[@]}" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DBRAID_BUILD_FUZZERS=ON -DBRAID_BUILD_TESTS=OFF -DBRAID_BUILD_BENCH=OFF -DBRAID_WITH_TORCH=OFF >"$build/configure.log" ||
    { cat "$build/configure.log" >&2; die "configuring the fuzz tree failed"; }
fi
seed_writers=()
[[ " ${targets[*]} " == *" codec_decode_fuzz "* ]] && seed_writers+=(codec_fuzz_seeds)
[[ ${#targets[@]} -gt 1 || ${targets[0]} != codec_decode_fuzz ]] && seed_writers+=(decoder_fuzz_seeds)
log "building ${targets[*]} ${seed_writers[*]}"
cmake --build "$build" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" --target "${targets[@]}" "${seed_writers[@]}" ||
  die "building the fuzz tree failed"
log "build took $((SECONDS - started)) s"

seeds=$build/seeds
rm -rf "$seeds"
mkdir -p "$seeds"
if [[ " ${seed_writers[*]} " == *" codec_fuzz_seeds "* ]]; then
  "$build/tests/fuzz/codec_fuzz_seeds" "$seeds/codecs" "${codecs[@]}" || die "writing the codec seeds failed"
  [[ $all_codecs -eq 1 ]] && mapfile -t codecs < <(ls "$seeds/codecs")
fi
if [[ " ${seed_writers[*]} " == *" decoder_fuzz_seeds "* ]]; then
  "$build/tests/fuzz/decoder_fuzz_seeds" "$seeds" || die "writing the decoder seeds failed"
fi

if [[ $seconds -eq 0 ]]; then
  log "built the tree and wrote the seeds; fuzzing nothing (SECONDS 0)"
  exit 0
fi

# --- Fuzz, one run at a time ----------------------------------------------------------------
findings=$build/findings
mkdir -p "$findings"
runs_done=0
# fuzz_run RUN TARGET SEED_DIR
fuzz_run() {
  local run=$1 target=$2 seed_dir=$3
  [[ -d $seed_dir ]] || die "no seeds for '$run' in $seed_dir"
  local corpus=$build/corpus/$run
  mkdir -p "$corpus"
  # The kept corpus comes first: libFuzzer writes the inputs it finds into its first folder.
  local flags=() inputs=("$corpus" "$seed_dir")
  [[ -f $root/tests/fuzz/dicts/$target.dict ]] && flags+=(-dict="$root/tests/fuzz/dicts/$target.dict")
  [[ -d $root/tests/fuzz/regressions/$target ]] && inputs+=("$root/tests/fuzz/regressions/$target")
  log "$run: fuzzing for ${seconds} s ($(ls "$seed_dir" | wc -l) seeds, $(ls "$corpus" | wc -l) in the kept corpus)"
  local log_file=$build/fuzz-$run.log status=0
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$findings/$run-" "${flags[@]}" "${inputs[@]}" >"$log_file" 2>&1 ||
    status=$?
  local runs rate
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log_file" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log_file" | tail -1)
  if [[ $status -ne 0 ]]; then
    # The report from its first line (sanitizer, libFuzzer or the target's FINDING), then
    # libFuzzer's summary of the input.
    local first reproducer
    first=$(grep -n -m1 -E '==ERROR|FINDING|runtime error|ERROR: libFuzzer' "$log_file" | cut -d: -f1 || true)
    [[ -n $first ]] && sed -n "${first},$((first + 40))p" "$log_file" >&2
    echo "..." >&2
    grep -E '^(SUMMARY|MS:|artifact_prefix|Base64)' "$log_file" >&2 || tail -n 20 "$log_file" >&2
    reproducer=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log_file" | tail -1)
    echo >&2
    echo "fuzz: FINDING in '$run' (libFuzzer exit status $status); full log: $log_file" >&2
    if [[ -n $reproducer ]]; then
      echo "fuzz: reproducer: $reproducer" >&2
      echo "fuzz: replay it:  $build/tests/fuzz/$target $reproducer" >&2
      echo "fuzz: its bytes:  xxd $reproducer" >&2
      echo "fuzz: once fixed: cp $reproducer $root/tests/fuzz/regressions/$target/" >&2
    fi
    exit 1
  fi
  log "$run: ok, ${runs:-?} executions (${rate:-?}/s), corpus now $(ls "$corpus" | wc -l) inputs"
  runs_done=$((runs_done + 1))
}

for target in "${targets[@]}"; do
  if [[ $target == codec_decode_fuzz ]]; then
    for codec in "${codecs[@]}"; do
      [[ -d $seeds/codecs/$codec ]] || die "'$codec' is neither a fuzz target (${decoder_targets[*]}) nor a codec" \
        "(known: $(ls "$seeds/codecs" | tr '\n' ' '))"
      fuzz_run "$codec" codec_decode_fuzz "$seeds/codecs/$codec"
    done
  else
    fuzz_run "$target" "$target" "$seeds/$target"
  fi
done
log "no findings in $runs_done runs (${seconds} s each); total $((SECONDS - started)) s"
