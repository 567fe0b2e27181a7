#!/usr/bin/env bash
# A new user's first steps with the installed tree, as README's "The library" shows them: cmake
# --install into a scratch prefix; the installed rooflab program answers --version and `rooflab
# list` (no GPU needed); tests/consumer, a plain C++ program calling rooflab with long long data
# among others, builds against the installed library both with CMake (find_package(rooflab)) and
# with a bare g++ command line, and runs (without a GPU it says so and succeeds). The installed
# prefix stays in WORK/prefix for the walk test (walk_test.sh), which runs `rooflab svd` there.
#   tests/install_test.sh BUILD_DIR CONSUMER_DIR WORK CXX CUDA_LIBRARY_DIR CUDA_INCLUDE_DIR...
set -eu
build_dir=$1 consumer_dir=$2 work=$3 compiler=$4 cuda_library_dir=$5
shift 5
rm -rf "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
program="$work/prefix/bin/rooflab"
[ -x "$program" ] || { echo "FAIL: cmake --install put no rooflab program into bin/"; exit 1; }
version=$("$program" --version) || { echo "FAIL: the installed rooflab --version failed: $version"; exit 1; }
grep -q "^rooflab .*commit.*CUDA runtime" <<<"$version" || { echo "FAIL: rooflab --version says: $version"; exit 1; }
echo "ok: the installed rooflab --version: $version"
listing=$("$program" list) || { echo "FAIL: the installed rooflab list failed: $listing"; exit 1; }
grep -q "reduce" <<<"$listing" || { echo "FAIL: the installed rooflab list names no reduce: $listing"; exit 1; }
echo "ok: the installed rooflab lists the ops"

cmake -S "$consumer_dir" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
echo "ok: the consumer builds with find_package(rooflab) and runs"
# Where the build had NCCL, the same package gives rooflab::distributed.
if find "$work/prefix" -name librooflab_distributed.a | grep -q .; then
  [ -x "$work/build/distributed_consumer" ] ||
    { echo "FAIL: librooflab_distributed.a is installed but find_package(rooflab) gave no rooflab::distributed"; exit 1; }
  "$work/build/distributed_consumer"
  echo "ok: rooflab::distributed links from the installed package"
fi

# The same program from a bare compiler command line: the installed headers, the installed static
# library and the CUDA libraries it needs (cudart, cuBLAS, cuSOLVER), nothing from this build tree.
includes=("-I$work/prefix/include")
for dir in "$@"; do includes+=("-I$dir"); done
library=$(find "$work/prefix" -name librooflab.a | head -n 1)
[ -n "$library" ] || { echo "FAIL: cmake --install put no librooflab.a under $work/prefix"; exit 1; }
if ! output=$("$compiler" -std=c++17 "${includes[@]}" "$consumer_dir/main.cpp" "$library" \
                -L"$cuda_library_dir" -Wl,-rpath,"$cuda_library_dir" -lcusolver -lcublas -lcudart \
                -o "$work/plain-consumer" 2>&1); then
  echo "FAIL: $compiler could not build tests/consumer/main.cpp against the installed rooflab:"
  echo "$output" | head -n 20
  exit 1
fi
"$work/plain-consumer"
echo "ok: the consumer builds with $(basename "$compiler") alone and runs"
