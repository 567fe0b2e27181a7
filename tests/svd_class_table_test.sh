#!/usr/bin/env bash
# scripts/svd_class_table.py judges each class's row against the SVD's targets: sweeps against
# dgesvj + 2 and against the random matrix's, time against 2x gesvdj and the random matrix's,
# the random matrix against 5x gesvdj and cuSOLVER's fastest, a batch's sweeps and time against its
# random batch.
set -euo pipefail
table=$1
work=$2
mkdir -p "$work"
results=$work/results.json
python3 - "$results" <<'EOF'
import json
import sys


def row(name, ms, note="", status="ok", error=1.5):
    return {"name": name, "median_ms": ms if status == "ok" else 0.0, "note": note,
            "status": status, "error": error}


def svd(matrix_class, ours, note, gesvdj, gesvdp=1.0, gesvd=2.0, status="ok"):
    return {"op": "svd", "problem": f"25 x 25, double, {matrix_class} matrix",
            "rows": [row("rooflab-svd", ours, note, status),
                     row("cusolver-gesvdj", gesvdj),
                     row("cusolver-gesvdp", gesvdp) if gesvdp else
                     row("cusolver-gesvdp", 0, "matrix 0: residual 40", "FAILED", 40.0),
                     row("cusolver-gesvd", gesvd)]}


def batched(matrix_class, ours, note, status="ok"):
    return {"op": "svd-batched", "problem": f"16 x 64 x 64, float, {matrix_class} matrices",
            "rows": [row("rooflab-svd-batched", ours, note, status)]}


runs = [
    svd("random", 0.12, "8 sweeps; LAPACK dgesvj 8", 0.65),           # 5.4x: met
    svd("rank-1", 0.10, "9 sweeps; LAPACK dgesvj 9", 0.30, None),     # more sweeps than random
    svd("mode3", 0.20, "16 sweeps; LAPACK dgesvj 11", 0.86),          # dgesvj + 5, slower
    svd("zero", 0.04, "1 sweeps; LAPACK dgesvj 30, not converged", 0.06),  # 1.5x gesvdj
    svd("graded", 0.1, "", 0.5, status="FAILED"),
    batched("random", 1.6, "8-9 sweeps"),
    batched("mixed", 2.0, "8-21 sweeps"),                            # 1.25x random
    batched("rank-quarter", 1.5, "7-9 sweeps"),
    batched("rank-minus-1", 1.5, "8-10 sweeps"),                     # more sweeps than random
    batched("zero-rows", 1.5, ""),                                   # no sweeps noted
]
json.dump({"environment": {"device": {"name": "Test GPU"}, "commit": "abc123"}, "runs": runs},
          open(sys.argv[1], "w"))
EOF
output=$(python3 "$table" "$results")
expect() {
  grep -qF -- "$1" <<<"$output" || { printf 'missing line: %s\ngot:\n%s\n' "$1" "$output"; exit 1; }
}
expect '#### svd by input class (Test GPU, commit abc123)'
expect '| random | 8 / 8 | 120.0 us | 650.0 us | 1.00 ms | 2.00 ms | 5.42x | 1.00 | 1.5 | met |'
expect '| rank-1 | 9 / 9 | 100.0 us | 300.0 us | FAILED | 2.00 ms | 3.00x | 0.83 | 1.5 | **missed**: more sweeps than random |'
expect '| mode3 | 16 / 11 | 200.0 us | 860.0 us | 1.00 ms | 2.00 ms | 4.30x | 1.67 | 1.5 | **missed**: sweeps > dgesvj + 2, slower than random |'
expect '| zero | 1 / no conv. | 40.0 us | 60.0 us | 1.00 ms | 2.00 ms | 1.50x | 0.33 | 1.5 | **missed**: < 2x gesvdj |'
expect '| graded | | FAILED | 500.0 us | 1.00 ms | 2.00 ms | | | | **missed**: FAILED |'
expect '| 16 x 64 x 64 | float | random | 8-9 | 100.0 us | 1.00 | 1.5 | met |'
expect '| 16 x 64 x 64 | float | mixed | 8-21 | 125.0 us | 1.25 | 1.5 | **missed**: over 1.2x random |'
expect '| 16 x 64 x 64 | float | rank-quarter | 7-9 | 93.8 us | 0.94 | 1.5 | met |'
expect '| 16 x 64 x 64 | float | rank-minus-1 | 8-10 | 93.8 us | 0.94 | 1.5 | **missed**: more sweeps than random |'
expect '| 16 x 64 x 64 | float | zero-rows |  | 93.8 us | 0.94 | 1.5 | met |'
expect '6 of 10 rows miss a target.'
echo '{"runs": []}' >"$work/empty.json"
if python3 "$table" "$work/empty.json" 2>/dev/null; then
  echo "a results file without class runs must fail"
  exit 1
fi
echo "ok"
