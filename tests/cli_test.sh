#!/usr/bin/env bash
# Bad command-line input: rooflab must fail with a non-zero status and exactly one line on stderr
# that names the problem. None of these needs a GPU.
set -u
rooflab=$1
failures=0

expect_one_line_error() {
  local pattern=$1; shift
  local stderr status lines
  stderr=$("$rooflab" "$@" 2>&1 >/dev/null)
  status=$?
  lines=$(printf '%s' "$stderr" | grep -c '')
  if [ "$status" -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$pattern" <<<"$stderr"; then
    echo "FAIL: rooflab $* -> status $status, $lines line(s): $stderr"
    failures=$((failures + 1))
  else
    echo "ok: rooflab $* -> $stderr"
  fi
}

expect_one_line_error "'banana' is not a size" bench add --n banana
expect_one_line_error "must not be negative" bench add --n -5
expect_one_line_error "'nosuchop' is not an op" bench nosuchop
expect_one_line_error "'xml' is not a format" bench add --format xml
expect_one_line_error "'nosuchop' is not an op" list nosuchop
expect_one_line_error "does not fit in 64 bits" bench add --n 2^64
expect_one_line_error "seed" bench add --seed minus-one
expect_one_line_error "'zipf' is not a distribution" bench histogram --dist zipf
expect_one_line_error "'--bins': must be at least 1" bench histogram --bins 0
expect_one_line_error "'--bins': must be in \[1, 2^24\]" bench histogram --bins 2^25
expect_one_line_error "'int8' is not a type of this op" bench transpose --dtype int8

"$rooflab" list add >/dev/null || { echo "FAIL: rooflab list add"; failures=$((failures + 1)); }
exit $((failures > 0))
