#!/usr/bin/env bash
# Runs GPU tests under one environment setting: exits 77 (skipped) where there is no CUDA device,
# its first line saying why, else with the tests' own status.
#   tests/gpu_subset_test.sh GPU_TESTS GTEST_FILTER
set -u
output=$("$1" --gtest_filter="$2" 2>&1)
status=$?
if ((status == 0)) && ! grep -q '^\[       OK \]' <<<"$output"; then
  reason=$(grep -o -m 1 'no CUDA device[^"]*' <<<"$output")
  if [ -n "$reason" ]; then
    echo "$reason"
    exit 77
  fi
fi
printf '%s\n' "$output" | tail -n 40
exit "$status"
