#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (unit, multi-process, launcher, packaging).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
# Two at a time: multi-process tests start up to 5 ranks each on this 2-core machine.
ctest --test-dir build --output-on-failure -j 2 "$@"
