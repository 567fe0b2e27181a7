#!/usr/bin/env bash
# compute-sanitizer's racecheck catches the atomics lab's deliberate race (rung plain-add: every
# thread += into a shared counter). Skipped (exit 77) without compute-sanitizer or a usable GPU.
set -u
sanitizer=$1
gpu_tests=$2
[ -x "$sanitizer" ] || sanitizer=$(command -v compute-sanitizer) || { echo "no compute-sanitizer: skipped"; exit 77; }
test_name=AtomicsRacyByDesign.PlainAddLosesMostUpdatesAndFailsTheCheck
listing=$("$gpu_tests" --gtest_filter="$test_name" 2>&1)
if grep -q "SKIPPED" <<<"$listing"; then echo "no CUDA device: skipped"; exit 77; fi
output=$("$sanitizer" --tool racecheck --print-limit 5 "$gpu_tests" --gtest_filter="$test_name" 2>&1)
echo "$output" | tail -n 20
if grep -qE "RACECHECK SUMMARY: [1-9][0-9]* hazard|Race reported" <<<"$output"; then
  echo "ok: racecheck reports the plain-add race"
  exit 0
fi
echo "FAIL: racecheck did not report the plain-add race"
exit 1
