#!/usr/bin/env bash
# Says, once, why tests were skipped: one line per reason, read from ctest's JUnit report
# (ctest --output-junit FILE). GPU tests (GoogleTest skips, which tests/CMakeLists.txt marks by
# their "[  SKIPPED ]" line) are counted by the reason they printed; a script test that skipped
# (exit code 77) is named with the first line it printed.
#
#   scripts/test-skips.sh JUNIT_FILE
#   156 GPU tests skipped: no CUDA device (no NVIDIA driver)
#   plot.draws_ladders_and_roofline skipped: no matplotlib
set -euo pipefail
report=${1:?usage: scripts/test-skips.sh JUNIT_FILE}
[ -f "$report" ] || exit 0

awk '
  function unescape(text) {
    gsub(/&lt;/, "<", text); gsub(/&gt;/, ">", text); gsub(/&quot;/, "\"", text)
    gsub(/&apos;/, "'\''", text); gsub(/&amp;/, "\\&", text)
    return text
  }
  /<testcase / {
    name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name)
    kind = ""; reason = ""; in_output = 0; next_line_is_reason = 0
  }
  /<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/ { kind = "gpu" }
  /<skipped message="SKIP_RETURN_CODE/ { kind = "script" }
  /<system-out>/ { in_output = 1; first_line = 1; sub(/.*<system-out>/, "") }
  in_output {
    line = $0
    if (line ~ /<\/system-out>/) { sub(/<\/system-out>.*/, "", line); in_output = 0 }
    if (kind == "script" && first_line && line != "") { reason = line; sub(/: skipped$/, "", reason) }
    if (next_line_is_reason) { reason = line; next_line_is_reason = 0 }
    if (kind == "gpu" && line ~ /: Skipped$/) next_line_is_reason = 1
    first_line = 0
  }
  /<\/testcase>/ {
    if (reason == "") reason = "no reason given"
    reason = unescape(reason)
    if (kind == "gpu") {
      if (!(reason in gpu_skips)) order[++reasons] = reason
      gpu_skips[reason]++
    } else if (kind == "script") {
      scripts[++script_skips] = name " skipped: " reason
    }
    kind = ""
  }
  END {
    for (i = 1; i <= reasons; ++i) {
      count = gpu_skips[order[i]]
      print count " GPU test" (count == 1 ? "" : "s") " skipped: " order[i]
    }
    for (i = 1; i <= script_skips; ++i) print scripts[i]
  }
' "$report"
