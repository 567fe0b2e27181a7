#!/usr/bin/env bash
# Installs, from the distribution, what rooflab needs and the machine lacks; skips what is there.
# Uses sudo when not root. The CUDA toolkit itself is a prerequisite (see README).
set -euo pipefail

# package : a file whose presence means the package (or an equivalent install) is there
requirements=(
  "cmake:/usr/bin/cmake"
  "ninja-build:ninja"
  "g++:g++"
  "libcli11-dev:/usr/include/CLI/CLI.hpp"
  "libfmt-dev:/usr/include/fmt/format.h"
  "nlohmann-json3-dev:/usr/include/nlohmann/json.hpp"
  "libgtest-dev:/usr/include/gtest/gtest.h"
  "liblapacke-dev:/usr/include/lapacke.h"
)

present() {
  case $1 in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing=()
for requirement in "${requirements[@]}"; do
  package=${requirement%%:*}
  marker=${requirement#*:}
  present "$marker" || missing+=("$package")
done

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: the CUDA toolkit (nvcc) is missing; install it from NVIDIA first" >&2
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything is present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
