#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (unit, multi-process, launcher, packaging), then
# the sanitizer lanes (multi-process suites under ASan+UBSan, threaded unit suites under TSan:
# ./build-asan, ./build-tsan; docs/reliability.md). Both lanes are clang trees compiled with the
# thread-safety analysis as errors, over every library that takes a lock, so they are also the
# analysis pass (scripts/thread_safety.sh alone: every library). Arguments go to ctest and skip
# the lanes (the caller picks tests).
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
stamp() { echo "test.sh: $1 at $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"; }

bash scripts/setup.sh
bash scripts/build.sh
stamp "setup and build done"

# The lanes' trees build while the tests run, at idle priority (SCHED_IDLE, nice 19): they take
# only CPU time the tests leave unused (ranks waiting on peers, timeouts, sleeps), so the tests
# see the machine as before, and the lanes' own step afterwards is mostly their tests. Same
# session (no setsid): a new session would be a scheduler group of its own, with a fair share
# of the CPU whatever its priority. Job control gives the build its own process group, so a
# failing ctest can stop it.
lanes_build=""
if [ $# -eq 0 ]; then
  mkdir -p build
  set -m
  chrt --idle 0 nice -n 19 bash scripts/sanitizers.sh all build >build/sanitizer-trees.log 2>&1 &
  lanes_build=$!
  set +m
  trap '[ -n "$lanes_build" ] && kill -- -"$lanes_build" 2>/dev/null || true' EXIT
fi

# Two at a time: multi-process tests start up to 5 ranks each on this 2-core machine.
ctest --test-dir build --output-on-failure -j 2 "$@"
stamp "ctest done"

if [ -n "$lanes_build" ]; then
  status=0
  wait "$lanes_build" || status=$?
  lanes_build=""
  cat build/sanitizer-trees.log
  [ "$status" -eq 0 ] || { echo "test.sh: building the sanitizer trees failed" >&2; exit 1; }
  stamp "sanitizer trees built"
  bash scripts/sanitizers.sh
  stamp "sanitizer lanes done"
fi
