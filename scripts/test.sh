#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (unit, multi-process, launcher, packaging).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
# Two at a time: multi-process tests start up to 5 ranks each on this 2-core machine.
ctest --test-dir build --output-on-failure -j 2 "$@"
# The sanitizer lanes: multi-process suites under ASan+UBSan, threaded unit suites under TSan
# (./build-asan, ./build-tsan; docs/reliability.md). Both are clang trees compiled with the
# thread-safety analysis as errors, and the ASan one builds every library, so they are also the
# analysis pass (scripts/thread_safety.sh alone: the libraries only). Skipped when the caller
# picks tests.
if [ $# -eq 0 ]; then bash scripts/sanitizers.sh; fi
