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
expect_one_line_error "'lognormal' is not a distribution" bench histogram --dist lognormal
expect_one_line_error "'uniform:weird' is not a distribution" bench histogram --dist uniform:weird
expect_one_line_error "'--bins': must be at least 1" bench histogram --bins 0
expect_one_line_error "'--bins': must be in \[1, 2^24\]" bench histogram --bins 2^25
expect_one_line_error "'int8' is not a type of this op" bench transpose --dtype int8
expect_one_line_error "'nosuch' is not a matrix class (random, zero, identity" bench svd --matrix nosuch
expect_one_line_error "'nosuch' is not a matrix class" bench svd-batched --matrix nosuch --batch 10
expect_one_line_error "'rank-1' applies to svd, svd-batched only" bench add --matrix rank-1
# Bad arguments are reported before the search for a GPU, so they read the same without one.
expect_one_line_error "'99' is not a rung of svd" bench svd --only 99
expect_one_line_error "'--rows': does not apply to reduce (reduce takes --n)" bench reduce --rows 5
expect_one_line_error "'--batch': does not apply to svd (svd takes --m, --n)" bench svd --batch 3
expect_one_line_error "'--m': must be at least 1" bench svd --m 0
expect_one_line_error "^rooflab list: 'nosuchop' is not an op (the ops: .*reduce" list nosuchop
expect_one_line_error "'nosuchop' is not a command (the commands: info, list, table, bench, report, svd" nosuchop
expect_one_line_error "'the paper' is not a document with timed figures (they are: the memory-basics lab, " report --course --document "the paper"
expect_one_line_error "document requires --course" report --document "the Jacobi SVD paper"

# .npy inputs of the svd command, written byte by byte: magic, version 1.0, header length, dict.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
write_npy() {  # path descr shape data_bytes
  local header="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  local length=$(( (10 + ${#header} + 1 + 63) / 64 * 64 - 10 ))
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((length & 255)))\\x$(printf %02x $((length >> 8)))"
    printf '%s' "$header"
    printf '%*s\n' $((length - ${#header} - 1)) ''
    head -c "$4" /dev/zero
  } >"$1"
}
write_npy "$scratch/int.npy" '<i4' '(2, 2)' 16
write_npy "$scratch/vector.npy" '<f8' '(4,)' 32
write_npy "$scratch/rank4.npy" '<f4' '(1, 2, 2, 2)' 32
expect_one_line_error "float32 or float64" svd --in "$scratch/int.npy"
expect_one_line_error "has rank 1" svd --in "$scratch/vector.npy"
expect_one_line_error "has rank 4" svd --in "$scratch/rank4.npy" --out "$scratch/out"
expect_one_line_error "cannot open" svd --in "$scratch/missing.npy"
expect_one_line_error "--in" svd
expect_one_line_error "cannot read: it is a directory" svd --in "$scratch"

# table --op with no run of that op in the file (here, a file with one run of add).
printf '%s' '{"environment": {"device": {"name": "none"}, "commit": "c", "date": "d"},
  "runs": [{"op": "add", "problem": "n = 1", "model": {"ceiling": "copy bandwidth"}, "rows": []}]}' \
  >"$scratch/results.json"
expect_one_line_error "has no runs of 'scan' (its ops: add)" table "$scratch/results.json" --op scan
# Several files side by side: an op in none of them names each file's ops; a bad file is named.
expect_one_line_error "no file has runs of 'scan' ('$scratch/results.json': its ops: add; '$scratch/results.json'" \
  table "$scratch/results.json" "$scratch/results.json" --op scan
printf '%s' '{"environment": ' >"$scratch/broken.json"
expect_one_line_error "'$scratch/broken.json' is not a rooflab results file" table "$scratch/results.json" "$scratch/broken.json"

version=$("$rooflab" --version) && grep -q "^rooflab [0-9][0-9.]* (commit [^)]*), CUDA runtime [0-9]" <<<"$version" ||
  { echo "FAIL: rooflab --version: $version"; failures=$((failures + 1)); }
"$rooflab" list add >/dev/null || { echo "FAIL: rooflab list add"; failures=$((failures + 1)); }
"$rooflab" list svd | grep -q "rank-1-integer" || { echo "FAIL: rooflab list svd names no matrix classes"; failures=$((failures + 1)); }
"$rooflab" bench --help | grep -q -- "--matrix" || { echo "FAIL: rooflab bench --help has no --matrix"; failures=$((failures + 1)); }
exit $((failures > 0))
