#!/usr/bin/env bash
# The sanitizer lanes (issue 21; docs/reliability.md): the multi-process suites under
# AddressSanitizer + UndefinedBehaviorSanitizer, and the threaded unit suites of the engine, the
# collective queue, the transports and the communicator under ThreadSanitizer. Any sanitizer
# report fails the lane, also one from a rank process whose test expected it to fail anyway.
#
#   scripts/sanitizers.sh [asan|tsan|all] [build]      (default all)
#
# `build` only builds the lanes' trees (scripts/test.sh does that at idle priority while the
# main tree's tests run, then calls this script again for the tests, whose build is then done).
#
# Trees: ./build-asan and ./build-tsan (clang -O1 with line tables: a third of gcc -O2 -g's
# compile time under ASan, measured; LibTorch and benchmarks off), configured on the first run,
# incremental afterwards. Only the tests of each lane are built. CI runs both from
# scripts/test.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
lanes=${1:-all}
phase=${2:-test}
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

die() {
  echo "sanitizers: ERROR: $*" >&2
  exit 1
}

command -v clang++ >/dev/null || die "clang++ not found: install the Debian package 'clang' (scripts/setup.sh does)"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

# configure TREE SANITIZER
configure() {
  local tree=$1 sanitizer=$2
  [[ -f $tree/build.ninja ]] && return
  mkdir -p "$tree"
  cmake -G Ninja -S "$root" -B "$tree" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE= "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only" "-DBRAID_SANITIZE=$sanitizer" \
    -DBRAID_WITH_TORCH=OFF -DBRAID_BUILD_BENCH=OFF "${launcher[@]}" >"$tree/configure.log" ||
    { cat "$tree/configure.log" >&2; die "configuring $tree failed"; }
}

case $phase in
  build | test) ;;
  *) die "unknown phase '$phase' (build, or nothing for build and test)" ;;
esac

# run_lane NAME TREE SANITIZER TEST_REGEX EXCLUDE_REGEX TARGET...
# Every process writes its reports to TREE/reports/<sanitizer>.<pid>; the lane fails if any exists.
run_lane() {
  local name=$1 tree=$2 sanitizer=$3 regex=$4 exclude=$5
  shift 5
  local started=$SECONDS
  configure "$tree" "$sanitizer"
  cmake --build "$tree" -j "$jobs" --target "$@" || die "$name: the build failed"
  if [[ $phase == build ]]; then
    echo "sanitizers: $name built ($((SECONDS - started)) s)"
    return
  fi
  local reports=$tree/reports
  rm -rf "$reports" && mkdir -p "$reports"
  local status=0
  ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0:halt_on_error=1" \
  UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1" \
  TSAN_OPTIONS="log_path=$reports/tsan:halt_on_error=1:second_deadlock_stack=1" \
    ctest --test-dir "$tree" -R "$regex" ${exclude:+-E "$exclude"} -j "$jobs" --output-on-failure --timeout 600 || status=$?
  local found
  found=$(find "$reports" -type f | sort)
  if [[ -n $found ]]; then
    for report in $found; do
      echo "==== $report" >&2
      head -60 "$report" >&2
    done
    die "$name: $(echo "$found" | wc -l) sanitizer report(s) above"
  fi
  [[ $status -eq 0 ]] || die "$name: tests failed (no sanitizer report)"
  echo "sanitizers: $name clean ($((SECONDS - started)) s)"
}

case $lanes in
  asan | all)
    # Collectives (every algorithm), failures, GradSync, compressed collectives: mp_test's suites;
    # MoE dispatch/combine (moe_test, ~2 s under ASan). Left out: the collectives grid on 5 ranks
    # and on 4 over TCP (96 of the lane's 490 test-seconds on 2026-12-01): 3 ranks run every
    # algorithm's non-power-of-two paths, 4 over shm its multi-step power-of-two ones, and the
    # algorithms' code is the same over either transport (whose own code the 2- and 3-rank TCP
    # cases and the failure suites run). (The names end in a space and GoogleTest's parameter note.)
    # The build: what the tests run, which links every library whose code takes a braid::Mutex
    # (base .. trace), so the thread-safety analysis sees all of it. Left out of this tree: the
    # libraries nothing here links (braid-plan's command line, serving, the pipeline tool, mpi:
    # 117 of its 637 CPU-seconds on 2026-12-04), which lock nothing; scripts/thread_safety.sh
    # builds every library when run alone.
    run_lane "ASan+UBSan, multi-process suites" "$root/build-asan" address,undefined '^(mp_test|moe_test)\.' \
      'CollectivesTest\.EveryAlgorithmMatchesTheReferenceExactly/((auto|tcp)_5ranks|tcp_4ranks) ' \
      mp_test moe_test braid-test-rank braid-run
    ;;&
  tsan | all)
    run_lane "TSan, engine / queue / transport / communicator" "$root/build-tsan" thread \
      '^(engine_test|collectives_test|transport_test|comm_test)\.' '' engine_test collectives_test transport_test comm_test
    ;;
  asan) ;;
  *) die "unknown lane '$lanes' (asan, tsan or all)" ;;
esac
