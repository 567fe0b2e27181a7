#!/usr/bin/env bash
# The reduce ladder under Nsight Compute, for the profiler table of docs/reduce.md: DRAM
# throughput, global-load sectors per request and shared-memory bank conflicts of every kernel the
# rungs launch (seed 002 read the same story from nvprof's load efficiency). One CSV row per
# kernel launch and metric; kernels are named as in src/reduce/ladder.cu.
#
#   scripts/reduce-ncu.sh BUILD_DIR OUT.csv [N]      (N defaults to 2^24)
set -euo pipefail
build=${1:?usage: scripts/reduce-ncu.sh BUILD_DIR OUT.csv [N]}
out=${2:?usage: scripts/reduce-ncu.sh BUILD_DIR OUT.csv [N]}
n=${3:-2^24}
metrics=gpu__time_duration.sum
metrics+=,dram__bytes_read.sum
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
# Three timed runs, no warm-up: each rung's kernels are profiled four times (with the validation
# run); kernel replay restores the memory a kernel writes, so the one-pass tickets stay right.
ncu --csv --log-file "$out" --metrics "$metrics" --kernel-name 'regex:[Rr]educe' \
  "$build/rooflab" bench reduce --n "$n" --reps 3 --warmup 0
echo "wrote $out"
