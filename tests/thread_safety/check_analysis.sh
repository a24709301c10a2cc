#!/usr/bin/env bash
# The CTest `thread_safety_analysis`: clang's -Werror=thread-safety accepts guarded_counter.cc
# and refuses each of its violations with the diagnostic expected, so a build that stops
# checking (an annotation macro that expands to nothing under clang, a lock type the analysis
# cannot see) fails here.
#
#   check_analysis.sh CLANGXX SOURCE_DIR
set -euo pipefail

clangxx=$1
src=$2
source_file=$src/tests/thread_safety/guarded_counter.cc
compile() { "$clangxx" -std=c++20 -fsyntax-only -Wthread-safety -Werror=thread-safety -I "$src/src" "$@" "$source_file" 2>&1; }

if ! out=$(compile); then
  echo "$out"
  echo "FAIL: the correctly locked code does not compile"
  exit 1
fi
expect_refused() {
  local violation=$1 expected=$2 out
  if out=$(compile -DBRAID_TSA_VIOLATION="$violation"); then
    echo "FAIL: violation $violation compiled; expected: $expected"
    exit 1
  fi
  if ! grep -q -- "$expected" <<<"$out"; then
    echo "$out"
    echo "FAIL: violation $violation was refused, but not with: $expected"
    exit 1
  fi
  echo "ok: violation $violation refused: $(grep -m1 -o "error: .*" <<<"$out")"
}
expect_refused 1 "reading variable 'total_' requires holding mutex 'mu_'"
expect_refused 2 "calling function 'add_locked' requires holding mutex 'mu_'"
expect_refused 3 "reading variable 'total_' requires holding mutex 'mu_'"
expect_refused 4 "acquiring mutex 'mu_' that is already held"
