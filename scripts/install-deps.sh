#!/usr/bin/env bash
# Installs what rooflab's build and tests need and the machine lacks: from the distribution, and
# Python modules with pip where the python3 on PATH is not Debian's. Each need is checked the way
# the build meets it: the `cmake` and `ninja` commands on PATH (from apt, pip or conda alike), the
# compiler, the libraries' headers, and python3's headers and modules (CMake's FindPython takes
# that python3 first). A machine that has everything is never sent to apt-get or pip (it may have
# no network). Uses sudo when not root. The CUDA toolkit itself is a prerequisite (see README).
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
  find_missing_python
}

# python3's modules, each with its Debian package: the report's charts (scripts/plot.py), the
# walk-through's check of the factors and the Python package's (numpy), the package's tests
# (pytest), and the package's native module, which the lab builds for them (nanobind: not in
# Debian 12, so pip's copy even for Debian's python3; it depends on nothing that could clash).
python_modules=(matplotlib:python3-matplotlib numpy:python3-numpy pytest:python3-pytest nanobind:)

# Debian's own python3 (PEP 668's EXTERNALLY-MANAGED) takes modules from apt; any other (pyenv,
# conda, a virtual environment) from pip.
python_is_debians() {
  python3 - <<'PY' >/dev/null 2>&1
import os, sys, sysconfig
managed = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(0 if sys.prefix == sys.base_prefix and os.path.exists(managed) else 1)
PY
}

# python3's headers, where CMake's FindPython finds them.
python_has_headers() {
  python3 - <<'PY' >/dev/null 2>&1
import os, sysconfig
raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_path("include"), "Python.h")))
PY
}

# Adds to `missing` and `missing_why`, and fills `missing_pip` (modules for pip). Without python3,
# apt's python3-dev brings Debian's, which then needs every module.
find_missing_python() {
  missing_pip=()
  local has_python=false debians=true requirement module package
  if command -v python3 >/dev/null 2>&1; then
    has_python=true
    python_is_debians || debians=false
  fi
  if ! $has_python; then
    missing+=(python3-dev) missing_why+=("python3 (python3-dev)")
  elif ! python_has_headers; then
    missing+=(python3-dev) missing_why+=("python3's headers, Python.h (python3-dev)")
  fi
  for requirement in "${python_modules[@]}"; do
    module=${requirement%%:*} package=${requirement#*:}
    $has_python && python3 -c "import $module" >/dev/null 2>&1 && continue
    if $debians && [ -n "$package" ]; then
      missing+=("$package") missing_why+=("python3's $module ($package)")
    else
      missing_pip+=("$module") missing_why+=("python3's $module (pip)")
    fi
  done
  # Debian's python3 comes without pip.
  [ ${#missing_pip[@]} -eq 0 ] || { $has_python && python3 -m pip --version >/dev/null 2>&1; } ||
    { missing+=(python3-pip) missing_why+=("python3's pip (python3-pip)"); }
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

# Sets `sudo` for a command that needs root, or fails saying so.
need_root() {  # need_root WHAT
  sudo=""
  [ "$(id -u)" -eq 0 ] && return 0
  command -v sudo >/dev/null 2>&1 || fail "missing $needed; $1 needs root or sudo"
  sudo="sudo"
}

find_missing
if [ ${#missing[@]} -eq 0 ] && [ ${#missing_pip[@]} -eq 0 ]; then
  echo "install-deps: everything is present"
  exit 0
fi
needed=$(joined "${missing_why[@]}")
log=$(mktemp "${TMPDIR:-/tmp}/rooflab-install-deps.XXXXXX")

if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || fail "missing $needed, and there is no apt-get to install them: install them and run again"
  need_root "installing them with apt-get"
  echo "install-deps: installing $(joined "${missing[@]}")"
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
  needed=$(joined "${missing_why[@]}")
fi

if [ ${#missing_pip[@]} -gt 0 ]; then
  # The interpreter itself, not a pyenv shim or a name that sudo's PATH would find elsewhere.
  python=$(python3 -c 'import sys; print(sys.executable)')
  site=$("$python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  sudo=""
  [ -w "$site" ] || need_root "installing them with pip into $site"
  pip_options=(--quiet --disable-pip-version-check)
  python_is_debians && pip_options+=(--break-system-packages)
  echo "install-deps: installing $(joined "${missing_pip[@]}") with $python -m pip"
  if ! $sudo "$python" -m pip install "${pip_options[@]}" "${missing_pip[@]}" >"$log" 2>&1; then
    fail "missing $needed; pip could not install them (no network? its output: $log):" \
         "install them and run again"
  fi
  rm -f "$log"
  find_missing
  if [ ${#missing[@]} -gt 0 ] || [ ${#missing_pip[@]} -gt 0 ]; then
    fail "still missing after pip: $(joined "${missing_why[@]}")"
  fi
fi
echo "install-deps: everything is present"
