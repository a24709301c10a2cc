#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (unit, multi-process, launcher, packaging).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
# Every library again with clang, its thread-safety analysis as errors (./build-tsa, libraries only).
bash scripts/thread_safety.sh
# Two at a time: multi-process tests start up to 5 ranks each on this 2-core machine.
ctest --test-dir build --output-on-failure -j 2 "$@"
# The sanitizer lanes: multi-process suites under ASan+UBSan, threaded unit suites under TSan
# (./build-asan, ./build-tsan; docs/reliability.md). Skipped when the caller picks tests.
if [ $# -eq 0 ]; then bash scripts/sanitizers.sh; fi
