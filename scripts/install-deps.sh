#!/usr/bin/env bash
# Installs, from the distribution, what rooflab's build needs and the machine lacks. Each need is
# checked the way the build meets it: the `cmake` and `ninja` commands on PATH (from apt, pip or
# conda alike), the compiler, and the libraries' headers. A machine that has everything is never
# sent to apt-get (it may have no network). Uses sudo when not root. The CUDA toolkit itself is a
# prerequisite (see README).
set -euo pipefail

minimum_cmake=3.25  # CMakeLists.txt's cmake_minimum_required

# Header directories a find_package of the build searches: the system's, /usr/local, and the
# prefixes a conda environment or CMAKE_PREFIX_PATH adds.
include_dirs=(/usr/include /usr/local/include)
[ -n "${CONDA_PREFIX:-}" ] && include_dirs+=("$CONDA_PREFIX/include")
IFS=: read -r -a prefixes <<<"${CMAKE_PREFIX_PATH:-}"
for prefix in "${prefixes[@]}"; do [ -n "$prefix" ] && include_dirs+=("$prefix/include"); done

has_header() {
  local dir
  for dir in "${include_dirs[@]}"; do [ -e "$dir/$1" ] && return 0; done
  return 1
}

# The version of the cmake on PATH ("3.25.1"), or nothing when there is none.
cmake_version() {
  command -v cmake >/dev/null 2>&1 || return 0
  cmake --version 2>/dev/null | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p'
}

at_least() {  # at_least VERSION MINIMUM
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# Fills `missing` (apt packages) and `missing_why` (what the build lacks, in words).
find_missing() {
  missing=() missing_why=()
  local version
  version=$(cmake_version)
  if [ -z "$version" ]; then
    missing+=(cmake) missing_why+=("cmake >= $minimum_cmake (none on PATH)")
  elif ! at_least "$version" "$minimum_cmake"; then
    missing+=(cmake) missing_why+=("cmake >= $minimum_cmake (PATH has $version)")
  fi
  command -v ninja >/dev/null 2>&1 || { missing+=(ninja-build) missing_why+=("ninja"); }
  command -v g++ >/dev/null 2>&1 || { missing+=(g++) missing_why+=("g++"); }
  local requirement package header
  for requirement in libcli11-dev:CLI/CLI.hpp libfmt-dev:fmt/format.h \
                     nlohmann-json3-dev:nlohmann/json.hpp libgtest-dev:gtest/gtest.h \
                     liblapacke-dev:lapacke.h; do
    package=${requirement%%:*} header=${requirement#*:}
    has_header "$header" || { missing+=("$package") missing_why+=("$header ($package)"); }
  done
  # The report's charts (scripts/plot.py) and the walk-through's check of the factors.
  python3 -c "import matplotlib" >/dev/null 2>&1 ||
    { missing+=(python3-matplotlib) missing_why+=("python3's matplotlib (python3-matplotlib)"); }
  python3 -c "import numpy" >/dev/null 2>&1 ||
    { missing+=(python3-numpy) missing_why+=("python3's numpy (python3-numpy)"); }
}

fail() {
  echo "install-deps: $*" >&2
  exit 1
}

joined() {  # joined A B C -> "A, B, C"
  printf '%s' "$1"
  shift
  [ $# -eq 0 ] || printf ', %s' "$@"
}

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  fail "the CUDA toolkit (nvcc) is missing; install it from NVIDIA first"
fi

find_missing
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything is present"
  exit 0
fi

needed=$(joined "${missing_why[@]}")
command -v apt-get >/dev/null 2>&1 || fail "missing $needed, and there is no apt-get to install them: install them and run again"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || fail "missing $needed; installing them with apt-get needs root or sudo"
  sudo="sudo"
fi

echo "install-deps: installing $(joined "${missing[@]}")"
log=$(mktemp "${TMPDIR:-/tmp}/rooflab-install-deps.XXXXXX")
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  fail "missing $needed; apt-get could not install them (no network? its output: $log): install them and run again"
fi
rm -f "$log"

# apt's cmake may still be older than the build needs (Ubuntu 22.04 has 3.22).
find_missing
if [ ${#missing[@]} -gt 0 ]; then
  hint=""
  [[ " ${missing[*]} " == *" cmake "* ]] && hint=" (pip install cmake gives a newer cmake)"
  fail "still missing after apt-get: $(joined "${missing_why[@]}")$hint"
fi
echo "install-deps: everything is present"
