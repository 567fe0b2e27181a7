#!/usr/bin/env bash
# scripts/plot.py draws a ladder chart per run and the roofline from a results file that holds
# every kind of row (measured, CPU, vendor, FAILED, FAILED by design, skipped, no flops).
# Skipped (exit 77) where python3 has no matplotlib (scripts/install-deps.sh installs it).
set -u
plot=$1
work=$2
python3 -c "import matplotlib" 2>/dev/null || { echo "no matplotlib: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
cat >"$work/results.json" <<'JSON'
{"rooflab": "0.1.0", "seed": 1,
 "environment": {"device": {"name": "Test GPU"}, "commit": "test", "date": "2026-01-01T00:00:00Z",
   "ceilings": {"copy_bandwidth_gbps": 3000, "read_bandwidth_gbps": 3200, "fp32_peak_gflops": 60000,
                "fp64_peak_gflops": 30000, "host_to_device_gbps": 50, "theoretical_bandwidth_gbps": 3350}},
 "runs": [
  {"op": "atomics", "problem": "n = 16", "model": {"bytes": 64, "flops": 16, "ceiling": "read bandwidth"},
   "rows": [
    {"rung": 0, "name": "cpu-parallel", "status": "ok", "cpu": true, "vendor": false, "expected_failure": "",
     "gbps": 1.5, "gflops": 0.4, "bytes": 64, "flops": 16},
    {"rung": 1, "name": "plain-add", "status": "FAILED", "cpu": false, "vendor": false,
     "expected_failure": "a data race", "gbps": 0, "gflops": 0, "bytes": 64, "flops": 16},
    {"rung": 2, "name": "global-atomic", "status": "ok", "cpu": false, "vendor": false, "expected_failure": "",
     "gbps": 2.0, "gflops": 0.5, "bytes": 64, "flops": 16},
    {"rung": 3, "name": "broken", "status": "FAILED", "cpu": false, "vendor": false, "expected_failure": "",
     "gbps": 0, "gflops": 0, "bytes": 64, "flops": 16},
    {"rung": 4, "name": "block-privatized", "status": "ok", "cpu": false, "vendor": false, "expected_failure": "",
     "gbps": 900, "gflops": 225, "bytes": 64, "flops": 16},
    {"rung": 5, "name": "cub", "status": "ok", "cpu": false, "vendor": true, "expected_failure": "",
     "gbps": 2500, "gflops": 625, "bytes": 64, "flops": 16},
    {"rung": 6, "name": "slow", "status": "skipped", "cpu": false, "vendor": false, "expected_failure": "",
     "gbps": 0, "gflops": 0, "bytes": 64, "flops": 16}]},
  {"op": "divergence", "problem": "n = 4", "model": {"bytes": 32, "flops": 16384, "ceiling": "fp32 peak"},
   "rows": [
    {"rung": 1, "name": "lane-branch", "status": "ok", "cpu": false, "vendor": false, "expected_failure": "",
     "gbps": 20, "gflops": 10000, "bytes": 32, "flops": 16384},
    {"rung": 2, "name": "warp-branch", "status": "ok", "cpu": false, "vendor": false, "expected_failure": "",
     "gbps": 40, "gflops": 20000, "bytes": 32, "flops": 16384}]},
  {"op": "transfer", "problem": "1 MiB each way", "model": {"bytes": 1048576, "flops": 0, "ceiling": "host-transfer bandwidth"},
   "rows": [
    {"rung": 2, "name": "pinned-h2d", "status": "ok", "cpu": false, "vendor": false, "expected_failure": "",
     "gbps": 45, "gflops": 0, "bytes": 1048576, "flops": 0}]}]}
JSON
failures=0
python3 "$plot" ladder "$work/results.json" --out "$work/charts" || failures=$((failures + 1))
python3 "$plot" roofline "$work/results.json" --out "$work/charts" || failures=$((failures + 1))
for chart in ladder-0.png ladder-1.png ladder-2.png roofline.png roofline-atomics.png roofline-divergence.png; do
  if [ -s "$work/charts/$chart" ]; then echo "ok: $chart"; else echo "FAIL: $chart missing"; failures=$((failures + 1)); fi
done
[ ! -e "$work/charts/ladder-3.png" ] || { echo "FAIL: a chart for a run that does not exist"; failures=$((failures + 1)); }
exit $((failures > 0))
