#!/usr/bin/env bash
# Installs the built library into a scratch prefix and builds tests/consumer against it with
# find_package(rooflab), as a user's project would; then runs the consumer.
set -eu
build_dir=$1 consumer_dir=$2 work=$3
rm -rf "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$consumer_dir" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
