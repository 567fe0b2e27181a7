#!/usr/bin/env bash
# The SVD's class tables in one go: every input class (rooflab list svd) through the library call
# beside cuSOLVER's gesvdj, gesvdp and gesvd on the same matrix, and through svd_batched beside
# the random batch of the shape, each output checked against LAPACK; then one merged results file
# and the tables with the targets judged (scripts/svd_class_table.py).
#
#   scripts/svd-classes.sh OUTDIR [ROOFLAB]
#
# ROOFLAB: the rooflab program (default: build/gpu-check-native/rooflab, what scripts/gpu-check.sh
# builds). OUTDIR receives svd-*.json and batched-*.json (one per process), bench.log,
# results.json (all runs, scripts/merge_results.py) and classes.md (the tables, also printed).
#
# One process a size and type runs every class (one set of ceilings, the random matrix among
# them), seed SVD_CLASS_SEED with the same matrix for every rung:
#   SVD_CLASS_SIZES    n of the n x n matrices (default "25 100 256 512 1024")
#   SVD_CLASS_TYPES    (default "double"; "double float" for both)
#   SVD_BATCHES        svd-batched problems "TYPE BATCH N" separated by ';' (default "float 16 256;
#                      double 100 256;float 1000 64;float 10000 16"; empty for none), each with
#   SVD_BATCH_CLASSES  (default "random,mixed,rank-quarter,rank-minus-1,duplicated-columns,
#                      zero-rows,mode3-eps,graded")
#   SVD_CLASS_REPS, SVD_CLASS_WARMUP (default 7 and 2).
# The time goes mostly to the checks on the host (LAPACK on each rung's output, and dgesvj's
# sweeps for a double matrix of up to 512 columns) and to cuSOLVER on the hard classes at 1024
# (gesvdj: about 0.1-0.3 s a call): a few minutes for the defaults.
set -uo pipefail
out=${1:?usage: scripts/svd-classes.sh OUTDIR [ROOFLAB]}
cd "$(dirname "$0")/.."
rooflab=${2:-build/gpu-check-native/rooflab}
sizes=${SVD_CLASS_SIZES:-25 100 256 512 1024}
types=${SVD_CLASS_TYPES:-double}
batches=${SVD_BATCHES-float 16 256;double 100 256;float 1000 64;float 10000 16}
batch_classes=${SVD_BATCH_CLASSES:-random,mixed,rank-quarter,rank-minus-1,duplicated-columns,zero-rows,mode3-eps,graded}
reps=${SVD_CLASS_REPS:-7}
warmup=${SVD_CLASS_WARMUP:-2}
seed=${SVD_CLASS_SEED:-1}
[ -x "$rooflab" ] || { echo "no rooflab program at $rooflab (build it, or pass its path)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/svd-*.json "$out"/batched-*.json

# Every class of `rooflab list svd` but mixed (which is one class's matrix when the batch is one).
classes=$("$rooflab" list svd | awk '/^input classes/ {listing = 1; next}
                                     listing && $1 != "mixed" {print $1}' | paste -sd, -)
[ -n "$classes" ] || { echo "rooflab list svd named no input class" >&2; exit 2; }

start=$SECONDS
failed=0
files=()  # the results files written (a program that fails may leave an empty one)
# run FILE ARGS...: one benchmark process, logged. It exits non-zero when any rung fails its check,
# cuSOLVER's included (gesvdp fails LAPACK's tests on most rank-deficient classes): the tables say
# which; a process that wrote no results failed outright.
run() {
  local file=$1
  shift
  echo "=== $rooflab $* --out $file" >>"$out/bench.log"
  "$rooflab" "$@" --out "$file" >>"$out/bench.log" 2>&1
  echo "=== exit status $?" >>"$out/bench.log"
  if [ -s "$file" ]; then
    files+=("$file")
  else
    echo "FAILED: $* (see bench.log)" >&2
    failed=1
  fi
}
common=(--seed "$seed" --same-inputs --reps "$reps" --warmup "$warmup")
for dtype in $types; do
  for n in $sizes; do
    run "$out/svd-$dtype-$n.json" bench svd --n "$n" --dtype "$dtype" --matrix "$classes" \
      --only rooflab-svd,cusolver-gesvdj,cusolver-gesvdp,cusolver-gesvd "${common[@]}"
  done
done
IFS=';' read -ra batch_specs <<<"$batches"
for spec in "${batch_specs[@]}"; do
  read -r dtype batch n <<<"$spec"
  [ -n "${n:-}" ] || continue
  run "$out/batched-$dtype-$batch-$n.json" bench svd-batched --batch "$batch" --n "$n" \
    --dtype "$dtype" --matrix "$batch_classes" --only rooflab-svd-batched "${common[@]}"
done
echo "${#files[@]} processes in $((SECONDS - start)) s" >&2

[ ${#files[@]} -gt 0 ] || { echo "no results written (see $out/bench.log)" >&2; exit 1; }
python3 scripts/merge_results.py "$out/results.json" "${files[@]}" >&2 || exit 1
python3 scripts/svd_class_table.py "$out/results.json" >"$out/classes.md" || failed=1
cat "$out/classes.md"
exit $failed
