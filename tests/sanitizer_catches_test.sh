#!/usr/bin/env bash
# compute-sanitizer catches what a GPU test does wrong on purpose: racecheck the atomics lab's race
# (rung plain-add: every thread += into a shared counter), synccheck the lab's divergent barrier
# (threads of one block reaching __syncthreads at two places). The GPU suite's sanitizer runs leave
# those tests out (scripts/gpu-check.sh); this shows the tools would see them. Skipped (exit 77)
# without compute-sanitizer or a usable GPU.
#   tests/sanitizer_catches_test.sh SANITIZER GPU_TESTS TOOL GTEST_NAME REPORT_PATTERN WHAT
set -u
sanitizer=$1 gpu_tests=$2 tool=$3 test_name=$4 report_pattern=$5 what=$6
[ -x "$sanitizer" ] || sanitizer=$(command -v compute-sanitizer) || { echo "no compute-sanitizer: skipped"; exit 77; }
listing=$("$gpu_tests" --gtest_filter="$test_name" 2>&1)
if grep -q "SKIPPED" <<<"$listing"; then echo "no CUDA device: skipped"; exit 77; fi
output=$("$sanitizer" --tool "$tool" --print-limit 5 "$gpu_tests" --gtest_filter="$test_name" 2>&1)
echo "$output" | tail -n 20
if grep -qE "$report_pattern" <<<"$output"; then
  echo "ok: $tool reports $what"
  exit 0
fi
echo "FAIL: $tool did not report $what"
exit 1
