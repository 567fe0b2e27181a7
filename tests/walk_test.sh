#!/usr/bin/env bash
# The end of a new user's walk-through: the installed rooflab (install_test.sh leaves it in
# PREFIX) takes the SVD of matrices written by NumPy, and NumPy checks the factors it writes:
# A = U diag(S) V^T to rounding, U and V with orthonormal columns, S descending and equal to
# NumPy's own singular values, each within LAPACK's test threshold. One float64 matrix in C order,
# taller than wide; one float32 stack of wide matrices in Fortran order. Skipped (exit 77) without
# python3 and NumPy, or without a GPU (the program's own one-line reason is printed).
#   tests/walk_test.sh PREFIX WORK
set -u
prefix=$1 work=$2
program="$prefix/bin/rooflab"
[ -x "$program" ] || { echo "FAIL: no installed rooflab at $program (install_test.sh installs it)"; exit 1; }
python3 -c "import numpy" 2>/dev/null || { echo "no python3 with numpy: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"

python3 - "$work" <<'PY' || { echo "FAIL: could not write the input matrices with NumPy"; exit 1; }
import sys
import numpy as np
work = sys.argv[1]
rng = np.random.default_rng(36)
np.save(f"{work}/tall.npy", rng.standard_normal((60, 35)))
np.save(f"{work}/stack.npy", np.asfortranarray(rng.standard_normal((4, 20, 32)).astype(np.float32)))
PY

failures=0
for name in tall stack; do
  output=$("$program" svd --in "$work/$name.npy" --out "$work/$name" 2>&1)
  status=$?
  if [ "$status" -ne 0 ] && grep -q "needs an NVIDIA GPU" <<<"$output"; then
    # One line, as the GPU tests' skips read: "no CUDA device (no NVIDIA driver): skipped".
    echo "$(sed -e 's/^rooflab: //' -e 's/; this command needs an NVIDIA GPU$//' <<<"$output"): skipped"
    exit 77
  fi
  echo "$output"
  if [ "$status" -ne 0 ]; then
    echo "FAIL: rooflab svd --in $name.npy exited with $status"
    failures=$((failures + 1))
    continue
  fi
  python3 - "$work/$name" <<'PY' || failures=$((failures + 1))
import sys
import numpy as np
prefix = sys.argv[1]
A = np.load(prefix + ".npy")
S, U, V = (np.load(f"{prefix}_{factor}.npy") for factor in "SUV")
# A stack is checked matrix by matrix; a single matrix is a stack of one.
stack = A.ndim == 3
A, S, U, V = (x if stack else x[np.newaxis] for x in (A, S, U, V))
b, m, n = A.shape
k = min(m, n)
eps = np.finfo(A.dtype).eps
# LAPACK's test ratios (xBDT01, xORT01; cpu/svd_reference.hpp's too), in units of the dimension
# times the type's epsilon, held to its threshold of 30; S against NumPy's in the residual's units.
threshold = 30
norm1 = lambda x: np.linalg.norm(x, 1)
problems = []
for name, array, shape in (("S", S, (b, k)), ("U", U, (b, m, k)), ("V", V, (b, n, k))):
    if array.shape != shape or array.dtype != A.dtype:
        problems.append(f"{name} is {array.dtype} {array.shape}, not {A.dtype} {shape}")
if not problems:
    for i in range(b):
        a, s, u, v = (x[i].astype(np.float64) for x in (A, S, U, V))
        ratios = {
            "residual ||A - U S V^T||_1 / (||A||_1 max(m, n) eps)":
                norm1(a - (u * s) @ v.T) / (norm1(a) * max(m, n) * eps),
            "||I - U^T U||_1 / (m eps)": norm1(np.eye(k) - u.T @ u) / (m * eps),
            "||I - V^T V||_1 / (n eps)": norm1(np.eye(k) - v.T @ v) / (n * eps),
            "max |S - numpy's S| / (||A||_2 max(m, n) eps)":
                np.max(np.abs(s - np.linalg.svd(a, compute_uv=False))) / (np.linalg.norm(a, 2) * max(m, n) * eps),
        }
        print(f"  matrix {i}: " + ", ".join(f"{what} = {value:.2f}" for what, value in ratios.items()))
        if not (np.all(np.diff(s) <= 0) and s[-1] >= 0):
            problems.append(f"matrix {i}: S is not descending and non-negative: {s}")
        problems += [f"matrix {i}: {what} = {value:.2f} exceeds {threshold}"
                     for what, value in ratios.items() if not value <= threshold]
for problem in problems:
    print(f"FAIL: {prefix}: {problem}")
if not problems:
    print(f"ok: {prefix}_S, _U, _V.npy reproduce {prefix}.npy ({f'{b} x ' if stack else ''}{m} x {n} {A.dtype})")
sys.exit(1 if problems else 0)
PY
done
exit $((failures > 0))
