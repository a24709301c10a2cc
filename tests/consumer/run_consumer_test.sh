#!/usr/bin/env bash
# consumer_find_package: does an installed braid work for a user's CMake project?
#
#   run_consumer_test.sh CMAKE BUILD_DIR SOURCE_DIR PROJECT_DIR WORK_DIR CONFIG [CMAKE_ARGS...]
#
# 1. `cmake --install BUILD_DIR --prefix WORK_DIR/prefix` (a fresh prefix every run);
# 2. checks the installed layout, and that no installed CMake file names the build or source
#    tree (the package must be relocatable);
# 3. configures PROJECT_DIR (tests/consumer/project) against that prefix only, builds it, runs
#    it and checks what it prints.
# CMAKE_ARGS (generator, compiler, sanitizer flags) go to the consumer's configure step.
# Everything is written under WORK_DIR, which must lie inside BUILD_DIR; it is removed when
# the test passes and kept for inspection when it fails.
set -euo pipefail

if [[ $# -lt 6 ]]; then
  echo "usage: $0 CMAKE BUILD_DIR SOURCE_DIR PROJECT_DIR WORK_DIR CONFIG [CMAKE_ARGS...]" >&2
  exit 2
fi
cmake=$1 build_dir=$2 source_dir=$3 project_dir=$4 work_dir=$5 config=$6
shift 6

fail() {
  echo "consumer_find_package: FAIL: $*" >&2
  echo "consumer_find_package: logs and files kept in $work_dir" >&2
  exit 1
}

case "$work_dir/" in
  "$build_dir"/*) ;;
  *) echo "consumer_find_package: WORK_DIR ($work_dir) must be inside BUILD_DIR ($build_dir)" >&2
     exit 2 ;;
esac

# DESTDIR would silently move the install to $DESTDIR/$prefix, outside the build tree.
unset DESTDIR
prefix=$work_dir/prefix
consumer_build=$work_dir/build
rm -rf "$work_dir"
mkdir -p "$work_dir"

echo "== install $build_dir -> $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" --config "$config" >"$work_dir/install.log" 2>&1 ||
  { cat "$work_dir/install.log" >&2; fail "cmake --install failed"; }

config_file=$(find "$prefix" -path '*/cmake/braid/braidConfig.cmake' -print -quit)
[[ -n $config_file ]] || fail "no braidConfig.cmake under $prefix"
package_dir=$(dirname "$config_file")
for f in braidConfigVersion.cmake braidTargets.cmake; do
  [[ -f $package_dir/$f ]] || fail "missing $package_dir/$f"
done
for f in include/braid/base/error.h include/braid/base/dtype.h; do
  [[ -f $prefix/$f ]] || fail "missing $prefix/$f"
done
if [[ -d $prefix/include/braid/tools ]]; then
  fail "tools/ headers were installed ($prefix/include/braid/tools)"
fi
if grep -rlF -e "$build_dir" -e "$source_dir" "$package_dir"; then
  fail "installed CMake files above name the build or source tree: not relocatable"
fi

echo "== configure consumer project"
"$cmake" -S "$project_dir" -B "$consumer_build" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE="$config" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
  "$@" || fail "configuring the consumer project failed"

found_dir=$(sed -n 's/^braid_DIR:PATH=//p' "$consumer_build/CMakeCache.txt")
[[ $found_dir -ef $package_dir ]] ||
  fail "find_package(braid) used '$found_dir', not the fresh install '$package_dir'"

echo "== build consumer project"
"$cmake" --build "$consumer_build" --config "$config" || fail "building the consumer project failed"

echo "== run consumer"
rc=0
output=$("$consumer_build/braid_consumer") || rc=$?
echo "$output"
[[ $rc -eq 0 ]] || fail "braid_consumer exited with status $rc"
for expected in \
    "caught braid::InvalidArgument: braid::InvalidArgument [rank 0, op consumer]: thrown on purpose" \
    "dtype_name(DType::kBF16) = bf16" \
    "braid consumer OK"; do
  grep -qxF -- "$expected" <<<"$output" || fail "output lacks the line: $expected"
done

echo "== run README's first program with the installed braid-run"
rc=0
output=$("$prefix/bin/braid-run" -n 2 --no-prefix -- "$consumer_build/first_program" 2>&1) || rc=$?
echo "$output"
[[ $rc -eq 0 ]] || fail "braid-run -n 2 first_program exited with status $rc"
for expected in "rank 0 of 2: data[0] = 0, self = 0" "rank 1 of 2: data[0] = 0, self = 0"; do
  grep -qxF -- "$expected" <<<"$output" || fail "output lacks the line: $expected"
done

rm -rf "$work_dir"
echo "consumer_find_package: OK"
