#!/usr/bin/env bash
# Installs the built project into a scratch prefix, as a user would with cmake --install: the
# rooflab program must be there and answer `rooflab list` (no GPU needed), and tests/consumer, a
# plain C++ project, must build against the library with find_package(rooflab) and run.
set -eu
build_dir=$1 consumer_dir=$2 work=$3
rm -rf "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
program="$work/prefix/bin/rooflab"
[ -x "$program" ] || { echo "FAIL: cmake --install put no rooflab program into bin/"; exit 1; }
listing=$("$program" list) || { echo "FAIL: the installed rooflab list failed: $listing"; exit 1; }
grep -q "reduce" <<<"$listing" || { echo "FAIL: the installed rooflab list names no reduce: $listing"; exit 1; }
echo "ok: the installed rooflab lists the ops"
cmake -S "$consumer_dir" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
