#!/usr/bin/env bash
# One call on a GPU machine: configure and build with ninja, run the whole test suite, run
# compute-sanitizer (memcheck, initcheck, racecheck, synccheck) over the GPU tests, run the
# benchmarks named after OUTDIR, and write logs and results into OUTDIR. The summary is printed
# last.
#
#   scripts/gpu-check.sh OUTDIR ["OP [bench options]" ...]
#   scripts/gpu-check.sh results "add --n 2^28" "reduce --n 2^24"
#
# OUTDIR receives: summary.txt, build.log, test.log, sanitizer.log, bench.log, results.json
# (every benchmark's runs in one results file) and info.json; with ROOFLAB_NCU set, ncu.log and
# ncu.md (scripts/ncu_table.py's table per profiled benchmark) too.
#
# ROOFLAB_GIT_COMMIT=<sha> names the commit in the results where the tree is a copy git cannot
# read (the build otherwise records "unknown").
#
# ROOFLAB_NCU="OP [options];OP [options]" profiles those benchmarks under Nsight Compute (one rep
# each, clocks left as they are): DRAM throughput, global-load sectors per request, shared-memory
# bank conflicts and local-memory traffic per kernel.
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR [\"OP [options]\" ...]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit 2
# ROOFLAB_CUDA_ARCHITECTURES picks the build's architectures (default: the GPU at hand, "native");
# "80-virtual" builds PTX only, which the driver compiles for the GPU with the old __CUDA_ARCH__.
# Each choice has a build directory of its own.
architectures=${ROOFLAB_CUDA_ARCHITECTURES:-native}
build=build/gpu-check-${architectures//[^A-Za-z0-9]/-}
jobs=$(nproc)
# ROOFLAB_STAGES picks what runs (default: all): build test sanitize bench. A later call on the
# same machine can skip the build stages: the build directory stays.
stages=" ${ROOFLAB_STAGES:-build test sanitize bench} "
summary=()
failed=0

# step NAME LOG COMMAND...: runs COMMAND, appends its output to LOG, records the outcome.
step() {
  local name=$1 log=$2
  shift 2
  local start=$SECONDS
  echo "=== $name: $*" >>"$log"
  if "$@" >>"$log" 2>&1; then
    summary+=("$(printf '%-28s ok      %4d s' "$name" $((SECONDS - start)))")
  else
    summary+=("$(printf '%-28s FAILED  %4d s  (see %s)' "$name" $((SECONDS - start)) "$(basename "$log")")")
    failed=1
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv \
  >"$out/summary.txt" 2>&1

# The build directory outlives the sources it was built from. A source put back with an older
# modification time (a copy that keeps times, a restored file) would look older than its object
# and not be rebuilt: every source whose content differs from the last build's here is touched
# first.
touch_changed_sources() {
  local hashes="$build/source-hashes" now
  mkdir -p "$build"
  now=$(find CMakeLists.txt cmake src include apps bench tests -type f -print0 | sort -z | xargs -0 sha1sum)
  if [[ -f "$hashes" ]]; then
    comm -13 <(sort "$hashes") <(sort <<<"$now") | cut -c43- | while IFS= read -r file; do touch "$file"; done
  else
    cut -c43- <<<"$now" | while IFS= read -r file; do touch "$file"; done
  fi
  printf '%s\n' "$now" >"$hashes"
}

if [[ " $stages " == *" build "* ]]; then
  touch_changed_sources
  step configure "$out/build.log" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CUDA_ARCHITECTURES=$architectures"
  step build "$out/build.log" cmake --build "$build" -j "$jobs"
  ((failed == 0)) || rm -f "$build/source-hashes"  # whatever failed is looked at afresh next time
fi
if [[ " $stages " == *" test "* ]]; then
  rm -f "$build/test-results.xml"
  step "test suite" "$out/test.log" ctest --test-dir "$build" --output-on-failure -j "$jobs" \
    --output-junit "$PWD/$build/test-results.xml"
  grep -E 'tests passed|tests failed|\(Failed\)|\(Timeout\)' "$out/test.log" | tail -n 12 >>"$out/summary.txt"
  scripts/test-skips.sh "$build/test-results.xml" >>"$out/summary.txt"
fi

# The GPU tests under each sanitizer tool, the four tools side by side (they slow kernels down
# 10-100x, and the GPU has room for all four). Some tests provoke API errors on purpose (a bad
# launch, an impossible allocation), so API errors are not reported; memory errors, reads of
# device memory nothing has written (initcheck), races and synchronization errors are.
gpu_tests="$build/tests/rooflab_gpu_tests"
# Left out: tests that measure (named *Measured*), tests whose kernels race or diverge at a barrier
# on purpose (named *ByDesign*; the ctest tests sanitizer.* show the tools catching them), tests
# whose names start with Large and suites whose names end in Huge (too slow under the tools: each
# runs kernels that smaller tests of its file run there, and the test stage runs them), and what
# ROOFLAB_SANITIZER_EXCLUDE adds (gtest patterns, colon-separated).
# ROOFLAB_SANITIZER_ONLY (gtest patterns) narrows the run to the tests of code that changed.
filter="${ROOFLAB_SANITIZER_ONLY:-*}-*Measured*:*ByDesign*:*.Large*:*Huge.*${ROOFLAB_SANITIZER_EXCLUDE:+:$ROOFLAB_SANITIZER_EXCLUDE}"
sanitizer_seconds=${ROOFLAB_SANITIZER_SECONDS:-360}
# Each tool's run is split into gtest shards run side by side, each under the time limit:
# ROOFLAB_MEMCHECK_SHARDS, ROOFLAB_INITCHECK_SHARDS, ROOFLAB_RACECHECK_SHARDS and
# ROOFLAB_SYNCCHECK_SHARDS (default 2, 4, 4 and 2: racecheck, which tracks every shared-memory
# access, is the slowest tool by far, initcheck, which tracks every global-memory byte, the next).
# Each log lists the tests as they start, so a run stopped by the limit shows where it was.
declare -A tool_shards=([memcheck]=${ROOFLAB_MEMCHECK_SHARDS:-2}
  [initcheck]=${ROOFLAB_INITCHECK_SHARDS:-4} [racecheck]=${ROOFLAB_RACECHECK_SHARDS:-4}
  [synccheck]=${ROOFLAB_SYNCCHECK_SHARDS:-2})
# ROOFLAB_RACECHECK_EXCLUDE (gtest patterns) leaves tests out of racecheck alone: the larger runs
# of a kernel that a smaller test covers there, still run under memcheck and synccheck.
racecheck_filter="$filter${ROOFLAB_RACECHECK_EXCLUDE:+:$ROOFLAB_RACECHECK_EXCLUDE}"
# ROOFLAB_SANITIZER_TOOLS picks the tools (default: all four). The four side by side take longer
# than 428 s on an H100, every shard of every tool, most of them stopped in the paper's rungs
# (SvdPaperLadder; docs/results/h100-sanitizers-1a0bd89.txt): a caller held to a time limit can
# run one or two tools at a time, or narrow the tests with ROOFLAB_SANITIZER_ONLY, until every
# tool has run every test.
sanitizer_tools=${ROOFLAB_SANITIZER_TOOLS:-memcheck initcheck racecheck synccheck}
for tool in $sanitizer_tools; do
  case $tool in
    memcheck | initcheck | racecheck | synccheck) ;;
    *)
      echo "gpu-check.sh: ROOFLAB_SANITIZER_TOOLS names '$tool'; the tools are memcheck," \
        "initcheck, racecheck and synccheck" >&2
      exit 2
      ;;
  esac
done
if [[ " $stages " == *" sanitize "* ]]; then
  pids=()
  sanitizer_runs=()
  for tool in $sanitizer_tools; do
    shards=${tool_shards[$tool]} tool_filter=$filter
    [ "$tool" = racecheck ] && tool_filter=$racecheck_filter
    for ((shard = 0; shard < shards; shard++)); do
      run="$tool-$shard"
      sanitizer_runs+=("$run")
      (
        start=$SECONDS
        GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard timeout "$sanitizer_seconds" \
          compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 1 \
          "$gpu_tests" --gtest_filter="$tool_filter" >"$build/sanitizer-$run.log" 2>&1
        status=$?
        case $status in
          0) verdict="ok" ;;
          124) verdict="TIMED OUT after $sanitizer_seconds s" ;;
          *) verdict="FAILED" ;;
        esac
        printf '%-28s %-7s %4d s\n' "compute-sanitizer $tool ($((shard + 1))/$shards)" "$verdict" \
          $((SECONDS - start)) >"$build/sanitizer-$run.verdict"
      ) &
      pids+=($!)
    done
  done
  wait "${pids[@]}"
  for run in "${sanitizer_runs[@]}"; do
    { echo "=== compute-sanitizer $run"; cat "$build/sanitizer-$run.log"; } >>"$out/sanitizer.log"
    summary+=("$(cat "$build/sanitizer-$run.verdict")")
    grep -q ' ok ' "$build/sanitizer-$run.verdict" || failed=1
  done
fi

if [[ " $stages " == *" bench "* ]]; then
  step "rooflab info" "$out/bench.log" "$build/rooflab" info
  "$build/rooflab" info --format json >"$out/info.json" 2>>"$out/bench.log"
  runs=()
  index=0
  for spec in "$@"; do
    index=$((index + 1))
    # shellcheck disable=SC2086  # the spec is an op and its options, split on purpose
    step "bench $spec" "$out/bench.log" "$build/rooflab" bench $spec --out "$build/bench-$index.json"
    [ -f "$build/bench-$index.json" ] && runs+=("$build/bench-$index.json")
    # Merged after every benchmark, so a run stopped by a time limit keeps what it measured.
    python3 scripts/merge_results.py "$out/results.json" "${runs[@]}" >/dev/null 2>&1
  done
  if [ -n "${ROOFLAB_NCU:-}" ]; then
    metrics=dram__throughput.avg.pct_of_peak_sustained_elapsed
    metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
    metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
    metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
    metrics+=,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum
    metrics+=,gpu__time_duration.sum
    IFS=';' read -r -a profiled <<<"$ROOFLAB_NCU"
    index=0
    for spec in "${profiled[@]}"; do
      index=$((index + 1))
      # shellcheck disable=SC2086
      step "ncu $spec" "$out/ncu.log" ncu --clock-control none --csv --log-file "$build/ncu-$index.csv" \
        --metrics "$metrics" "$build/rooflab" bench $spec --reps 1 --warmup 0
      { echo "#### ncu: $spec"; echo; python3 scripts/ncu_table.py "$build/ncu-$index.csv"; echo; } \
        >>"$out/ncu.md" 2>&1
    done
  fi
  if [ ${#runs[@]} -gt 0 ]; then
    python3 scripts/merge_results.py "$out/results.json" "${runs[@]}" >>"$out/bench.log" 2>&1 ||
      summary+=("merging results FAILED")
  fi
fi

{
  echo
  printf '%s\n' "${summary[@]}"
} >>"$out/summary.txt"
# The benchmark tables, then the summary, end the output.
grep -v '^===' "$out/bench.log" 2>/dev/null | tail -n 60
cat "$out/summary.txt"
exit $failed
