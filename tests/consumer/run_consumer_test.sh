#!/usr/bin/env bash
# consumer_find_package: does an installed braid work for a user's CMake project?
#
#   run_consumer_test.sh CMAKE BUILD_DIR SOURCE_DIR PROJECT_DIR WORK_DIR CONFIG TORCH_DIR [CMAKE_ARGS...]
#
# 1. `cmake --install BUILD_DIR --prefix WORK_DIR/prefix` (a fresh prefix every run);
# 2. checks the installed layout: the public headers are there, internal ones are not, every
#    installed header includes only installed headers (check_installed_headers.sh), and no
#    installed CMake file names the build or source tree (the package must be relocatable);
# 3. configures PROJECT_DIR (tests/consumer/project) against that prefix only, builds it, runs
#    its programs (the first two under the installed braid-run -n 2) and checks what they print;
# 4. where braid was built with LibTorch (TORCH_DIR: the Torch_DIR it used, or "none"), does
#    the same with tests/consumer/torch_project: find_package(braid COMPONENTS torch).
# CMAKE_ARGS (generator, compiler, sanitizer flags) go to the consumers' configure steps.
# Everything is written under WORK_DIR, which must lie inside BUILD_DIR; it is removed when
# the test passes and kept for inspection when it fails.
set -euo pipefail

if [[ $# -lt 7 ]]; then
  echo "usage: $0 CMAKE BUILD_DIR SOURCE_DIR PROJECT_DIR WORK_DIR CONFIG TORCH_DIR [CMAKE_ARGS...]" >&2
  exit 2
fi
cmake=$1 build_dir=$2 source_dir=$3 project_dir=$4 work_dir=$5 config=$6 torch_dir=$7
shift 7
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

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
# A sample of the public surface (docs/architecture.md lists it; the layers' PUBLIC_HEADERS
# define it) and of what must stay internal.
for f in base/error.h base/dtype.h comm/communicator.h comm/work.h collectives/collectives.h \
         collectives/async_collectives.h compress/compression_policy.h compress/codec_spec.h \
         compress/compressed_allreduce.h engine/grad_sync.h engine/shard_layout.h trace/trace_recorder.h plan/step_model.h \
         base/mesh_layout.h parallel/process_mesh.h; do
  [[ -f $prefix/include/braid/$f ]] || fail "missing public header $prefix/include/braid/$f"
done
for f in comm/communicator_internal.h comm/world.h comm/scratch_buffer.h compress/payload_header.h \
         compress/codec_impl.h collectives/shm_workspace.h collectives/collective_args.h \
         engine/readiness_tracker.h; do
  [[ ! -e $prefix/include/braid/$f ]] || fail "internal header installed: $prefix/include/braid/$f"
done
for d in bootstrap transport tools; do
  [[ ! -e $prefix/include/braid/$d ]] || fail "internal layer's headers installed: $prefix/include/braid/$d"
done
bash "$here/check_installed_headers.sh" "$prefix" || fail "an installed header includes one that is not installed"
if grep -rlF -e "$build_dir" -e "$source_dir" "$package_dir"; then
  fail "installed CMake files above name the build or source tree: not relocatable"
fi

# configure SOURCE BUILD [ARGS...]: a consumer project against the fresh prefix only.
configure() {
  local source=$1 build=$2
  shift 2
  "$cmake" -S "$source" -B "$build" \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE="$config" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
    "$@" || fail "configuring $source failed"
}

# run_expecting NAME 'LINE1|LINE2|...' COMMAND...: runs COMMAND, which must exit 0 and print
# every one of the '|'-separated lines (exactly, in any order, among others).
run_expecting() {
  local name=$1 expected_lines=$2 rc=0 output expected
  shift 2
  output=$("$@" 2>&1) || rc=$?
  echo "$output"
  [[ $rc -eq 0 ]] || fail "$name exited with status $rc"
  IFS='|' read -r -a expected_lines <<<"$expected_lines"
  for expected in "${expected_lines[@]}"; do
    grep -qxF -- "$expected" <<<"$output" || fail "$name: output lacks the line: $expected"
  done
}

echo "== configure consumer project"
configure "$project_dir" "$consumer_build" "$@"

found_dir=$(sed -n 's/^braid_DIR:PATH=//p' "$consumer_build/CMakeCache.txt")
[[ $found_dir -ef $package_dir ]] ||
  fail "find_package(braid) used '$found_dir', not the fresh install '$package_dir'"

echo "== build consumer project"
"$cmake" --build "$consumer_build" --config "$config" || fail "building the consumer project failed"

echo "== run consumer"
run_expecting braid_consumer \
  "caught braid::InvalidArgument: braid::InvalidArgument [rank 0, op consumer]: thrown on purpose|dtype_name(DType::kBF16) = bf16|braid consumer OK" \
  "$consumer_build/braid_consumer"

echo "== run README's first program with the installed braid-run"
run_expecting first_program "rank 0 of 2: data[0] = 0, self = 0|rank 1 of 2: data[0] = 0, self = 0" \
  "$prefix/bin/braid-run" -n 2 --no-prefix -- "$consumer_build/first_program"

echo "== run the second program (collectives, compression, GradSync) with the installed braid-run"
second_lines=
for r in 0 1; do
  second_lines+="rank $r: allreduce sum = 3, iallreduce max = 1|rank $r: compressed_allreduce fp16 average = 1.5|"
  second_lines+="rank $r: GradSync weight = 1.5, bias = 1.5|"
done
run_expecting second_program "${second_lines%|}" \
  "$prefix/bin/braid-run" -n 2 --no-prefix -- "$consumer_build/second_program"

if [[ $torch_dir != none ]]; then
  echo "== configure, build and run the LibTorch consumer (find_package(braid COMPONENTS torch))"
  torch_build=$work_dir/torch_build
  configure "$here/torch_project" "$torch_build" -DTorch_DIR="$torch_dir" "$@"
  "$cmake" --build "$torch_build" --config "$config" || fail "building the torch consumer project failed"
  run_expecting torch_consumer "braid torch consumer OK: 10 parameters, shard of 10 samples" \
    "$torch_build/torch_consumer"
else
  [[ ! -e $package_dir/braid_torchTargets.cmake ]] ||
    fail "braid_torchTargets.cmake installed, but the build reports no LibTorch"
fi

rm -rf "$work_dir"
echo "consumer_find_package: OK"
