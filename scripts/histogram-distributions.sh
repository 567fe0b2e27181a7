#!/usr/bin/env bash
# The distribution table in one go: rooflab's production histogram beside CUB for every input
# distribution at both bin mappings, each checked against the CPU reference, then one merged
# results file and a markdown table with the issue's targets.
#
#   scripts/histogram-distributions.sh OUTDIR [ROOFLAB]
#
# ROOFLAB: the rooflab program (default: build/gpu-check-native/rooflab, what scripts/gpu-check.sh
# builds). OUTDIR receives bench-*.json (one per benchmark), bench.log, results.json (all runs,
# scripts/merge_results.py) and distributions.md (the table, also printed).
#
# The matrix, each distribution (uniform equal sorted zipf hot normal) at both mappings (scaled,
# identity):
#   256 bins    int32 and float 50M elements, uint8 1 GiB, double 50M;
#   4096 bins   int32 50M;
#   65536 bins  int32 50M.
# 72 benchmarks of two variants each. One benchmark takes about 1.5-2.5 s on an H100: the
# program's start and its ceilings (~1 s), each variant's check (the input downloaded and binned
# on the CPU: 1 GiB of bytes is the longest) and HISTOGRAM_REPS timed runs of 0.1-0.5 ms (CUB
# at 65536 bins on one hot bin: a few ms) after HISTOGRAM_WARMUP. About 2.5 minutes in all.
#
# Targets, "% read" being the share of the measured streaming-read bandwidth:
#   256 bins (int32, float, uint8)  >= 90% and never slower than CUB
#   4096 bins                       uniform >= 80%, every other distribution >= 60%
#   65536 bins                      uniform >= 50% (no target for the others)
#   double                          at least CUB's speed
set -uo pipefail
out=${1:?usage: scripts/histogram-distributions.sh OUTDIR [ROOFLAB]}
cd "$(dirname "$0")/.."
rooflab=${2:-build/gpu-check-native/rooflab}
reps=${HISTOGRAM_REPS:-15}
warmup=${HISTOGRAM_WARMUP:-2}
seed=${HISTOGRAM_SEED:-38}
[ -x "$rooflab" ] || { echo "no rooflab program at $rooflab (build it, or pass its path)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/bench-*.json

distributions=(uniform equal sorted zipf hot normal)
mappings=(scaled identity)
specs=()  # "dtype n bins"
for dtype in int32 float; do specs+=("$dtype 5e7 256"); done
specs+=("uint8 1G 256" "double 5e7 256" "int32 5e7 4096" "int32 5e7 65536")

start=$SECONDS
failed=0
index=0
files=()  # the results files written (a program that fails may leave an empty one)
for spec in "${specs[@]}"; do
  read -r dtype n bins <<<"$spec"
  for dist in "${distributions[@]}"; do
    for mapping in "${mappings[@]}"; do
      index=$((index + 1))
      file=$(printf '%s/bench-%02d.json' "$out" "$index")
      args=(bench histogram --n "$n" --dtype "$dtype" --bins "$bins" --dist "$dist:$mapping"
            --only production,cub --reps "$reps" --warmup "$warmup" --seed "$seed" --out "$file")
      echo "=== $rooflab ${args[*]}" >>"$out/bench.log"
      if ! "$rooflab" "${args[@]}" >>"$out/bench.log" 2>&1; then
        echo "FAILED: $dtype $bins bins $dist:$mapping (see bench.log)" >&2
        failed=1
      fi
      [ -s "$file" ] && files+=("$file")
    done
  done
done
echo "$index benchmarks in $((SECONDS - start)) s" >&2

[ ${#files[@]} -gt 0 ] || { echo "no results written (see $out/bench.log)" >&2; exit 1; }
python3 scripts/merge_results.py "$out/results.json" "${files[@]}" >&2 || exit 1

python3 - "$out/results.json" >"$out/distributions.md" <<'EOF' || failed=1
import json
import re
import sys

results = json.load(open(sys.argv[1]))
env = results.get("environment", {})
device = env.get("device", {}).get("name", "?") if isinstance(env.get("device"), dict) else "?"
print(f"#### histogram: production and CUB by distribution and bin mapping ({device}, "
      f"commit {env.get('commit', '?')})\n")
print("| dist | mapping | type | bins | rooflab | % of read ceiling | CUB | CUB / rooflab | target met |")
print("|---|---|---|---:|---:|---:|---:|---:|---|")


def time_text(ms):
    return f"{ms * 1e3:.1f} us" if ms < 1 else f"{ms:.2f} ms"


def row_text(row):
    if row is None:
        return "not run"
    if row["status"] == "skipped":
        return "skipped"
    note = row["note"] if len(row["note"]) < 60 else row["note"][:57] + "..."
    return f"{row['status'].upper()}: {note}"


missed = 0
for run in results["runs"]:
    match = re.match(r"n = (\d+), (\w+), (\d+) bins, (\w+)(?::(\w+))?", run["problem"])
    if not match:
        continue
    _, dtype, bins, dist, mapping = match.groups()
    bins = int(bins)
    mapping = mapping or "scaled"
    rows = {row["name"]: row for row in run["rows"]}
    ours, cub = rows.get("production"), rows.get("cub")
    if ours is None or ours["status"] != "ok":
        print(f"| {dist} | {mapping} | {dtype} | {bins} | {row_text(ours)} | | | | **no** |")
        missed += 1
        continue
    percent = ours["percent_of_ceiling"]
    cub_ok = cub is not None and cub["status"] == "ok"
    cub_text = time_text(cub["median_ms"]) if cub_ok else row_text(cub)
    ratio = cub["median_ms"] / ours["median_ms"] if cub_ok else None
    reasons = []
    if dtype == "double":
        if ratio is not None and ratio < 1:
            reasons.append("slower than CUB")
        elif ratio is None:
            reasons.append("no CUB to compare")
    elif bins <= 256:
        if percent < 90:
            reasons.append(f"{percent:.0f}% < 90%")
        if ratio is not None and ratio < 1:
            reasons.append("slower than CUB")
    elif bins <= 4096:
        need = 80 if dist == "uniform" else 60
        if percent < need:
            reasons.append(f"{percent:.0f}% < {need}%")
    elif dist == "uniform" and percent < 50:
        reasons.append(f"{percent:.0f}% < 50%")
    if bins > 4096 and dist != "uniform" and not reasons:
        verdict = "no target"
    elif reasons == ["no CUB to compare"]:
        verdict = "no CUB to compare"
    else:
        verdict = "yes" if not reasons else "**no**: " + ", ".join(reasons)
        missed += bool(reasons)
    ratio_text = f"{ratio:.2f}x" if ratio is not None else "-"
    print(f"| {dist} | {mapping} | {dtype} | {bins} | {time_text(ours['median_ms'])} | {percent:.1f}% | "
          f"{cub_text} | {ratio_text} | {verdict} |")
print(f"\n{missed} of {len(results['runs'])} rows miss a target or failed.")
EOF
cat "$out/distributions.md"
exit $failed
