#!/usr/bin/env bash
# Runs GPU tests under one environment setting: exits 77 (skipped) where there is no CUDA device,
# else with the tests' own status.
#   tests/gpu_subset_test.sh GPU_TESTS GTEST_FILTER
set -u
output=$("$1" --gtest_filter="$2" 2>&1)
status=$?
printf '%s\n' "$output" | tail -n 40
if ((status == 0)) && grep -q "no CUDA device" <<<"$output" && ! grep -q '^\[       OK \]' <<<"$output"; then
  exit 77
fi
exit "$status"
