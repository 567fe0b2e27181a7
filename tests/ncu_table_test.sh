#!/usr/bin/env bash
# scripts/ncu_table.py turns an Nsight Compute CSV log (mixed with the program's own output, as
# ncu --csv writes it to stdout) into the profiler tables of the docs: one row per kernel, the
# median of its launches per grid (times in any unit, counts with thousands separators), ratios
# derived.
set -euo pipefail
table=$1
log=$2
expect() {
  grep -qF -- "$1" <<<"$output" || { printf 'missing line: %s\ngot:\n%s\n' "$1" "$output"; exit 1; }
}
output=$(python3 "$table" "$log")
expect '| kernel | grid | launches | time (us) | DRAM % of peak | sectors / request | bank conflicts | local sectors |'
expect '| `rooflab::(anonymous namespace)::stream_read` | (1056, 1, 1) | 1 | - | 93.3 | - | - | - |'
expect '| `void reduce_sequential<256>` | (65536, 1, 1) | 2 | 125 | - | 4 | - | - |'
expect '| `void reduce_sequential<256>` | (256, 1, 1) | 1 | 2.82 | - | - | - | - |'
expect '| `transpose_shared` | (128, 128, 1) | 1 | - | - | - | 3,100 | - |'
expect '| `spilling_kernel` | (64, 1, 1) | 1 | - | - | - | - | 1,536 |'
output=$(python3 "$table" "$log" --kernel transpose)
expect '| kernel | grid | launches | bank conflicts |'
if python3 "$table" "$log" --kernel no_such_kernel 2>/dev/null; then
  echo "a filter that matches nothing must fail"
  exit 1
fi
echo "ok"
