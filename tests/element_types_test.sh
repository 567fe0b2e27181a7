#!/usr/bin/env bash
# Compiles tests/element_types/calls.cpp with the host C++ compiler, as a plain C++ user of
# rooflab.hpp would: every spelling of a supported element type must compile, and each call with
# an unsupported type or operator must fail at its static_assert, with the message naming the
# entry point.
#   tests/element_types_test.sh CXX SOURCE INCLUDE_DIR...
set -u
compiler=$1 source=$2
shift 2
includes=()
for dir in "$@"; do includes+=("-I$dir"); done
failures=0

compile() { "$compiler" -std=c++17 -fsyntax-only "${includes[@]}" "$source" "$@" 2>&1; }

if output=$(compile); then
  echo "ok: every spelling of a supported type compiles"
else
  echo "FAIL: supported spellings do not compile:"
  echo "$output" | head -n 20
  failures=$((failures + 1))
fi

# case number | what the static_assert's message must say | the call
rejected=(
  "1|rooflab::reduce and rooflab::reduce_rows from plain C++ take|reduce of unsigned long long"
  "2|rooflab::reduce and rooflab::reduce_rows from plain C++ take|reduce_rows of unsigned long"
  "3|rooflab::reduce and rooflab::reduce_rows from plain C++ take|reduce with an operator of its own"
  "4|rooflab::inclusive_scan and rooflab::exclusive_scan take|inclusive_scan of unsigned long long"
  "5|rooflab::inclusive_scan and rooflab::exclusive_scan take|exclusive_scan of short"
  "6|rooflab::histogram_even takes|histogram_even of long long"
)
for case in "${rejected[@]}"; do
  IFS='|' read -r number message call <<<"$case"
  if output=$(compile -DREJECTED_CALL="$number"); then
    echo "FAIL: $call compiled"
    failures=$((failures + 1))
  elif ! grep -q "static assertion failed: $message" <<<"$output"; then
    echo "FAIL: $call failed to compile, but not at the static_assert saying \"$message\":"
    echo "$output" | grep -m 5 "error"
    failures=$((failures + 1))
  else
    echo "ok: $call stops at the static_assert"
  fi
done
exit $((failures > 0))
