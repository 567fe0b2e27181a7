"""rooflab against PyTorch in the same run, on the shapes docs/python.md names: its figures.

    python3 python/bench.py --out results.json [--quick]

Each row is validated before it is timed (a row whose result is wrong says FAILED and is not
timed). GPU times are CUDA events around the call on torch's current stream, after warm-up runs,
with L2 flushed before each repetition (a read of twice its size), as the lab measures; the
median of the repetitions is reported with the least and the most. torch's CPU SVD is timed by
the wall clock. The Python overhead is host time per call, queued without waiting, of the package
against its native module called directly with the same addresses.
"""

import argparse
import datetime
import functools
import json
import operator
import os
import statistics
import subprocess
import sys
import time

import torch

import rooflab
from rooflab import _rooflab

KIBI, MEBI = 1 << 10, 1 << 20


class Timer:
    def __init__(self, quick: bool):
        self.quick = quick
        properties = torch.cuda.get_device_properties(torch.cuda.current_device())
        # Older torch does not report L2's size; 128 MiB is more than any GPU's at hand has.
        l2_bytes = getattr(properties, "L2_cache_size", 128 * MEBI)
        self.flush_buffer = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def _repetitions(self, once_s: float, budget_s: float, most: int) -> int:
        if self.quick:
            budget_s, most = budget_s / 4, max(3, most // 4)
        return max(3, min(most, int(budget_s / max(once_s, 1e-9))))

    def gpu(self, call, budget_s=1.0, most=50) -> dict:
        """Microseconds of GPU time of `call` (its median, least and most over repetitions)."""
        call()  # warm-up: first-call allocations, library handles, JIT
        torch.cuda.synchronize()
        once = self._gpu_once(call)
        times = [self._gpu_once(call) for _ in range(self._repetitions(once / 1e6, budget_s, most))]
        return summary(times)

    def _gpu_once(self, call) -> float:
        # Flushed by reading, as the lab's harness does (docs/lab.md, "Timing"): a flush that writes
        # leaves L2 full of dirty lines, whose write-back the timed call would pay.
        self.flush_buffer.sum()
        self.start.record()
        call()
        self.stop.record()
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop) * 1e3

    def cpu(self, call, budget_s=2.0, most=20) -> dict:
        call()
        begin = time.perf_counter()
        call()
        once = time.perf_counter() - begin
        times = []
        for _ in range(self._repetitions(once, budget_s, most)):
            begin = time.perf_counter()
            call()
            times.append((time.perf_counter() - begin) * 1e6)
        return summary(times)


def summary(times_us) -> dict:
    return {"median_us": statistics.median(times_us), "min_us": min(times_us), "max_us": max(times_us),
            "reps": len(times_us)}


# Validation: each returns (ok, what was checked).

def check_svd(a, result):
    U, S, Vh = (factor.double() for factor in result)
    wide = a.double()
    eps = torch.finfo(a.dtype).eps
    m, n = a.shape[-2:]
    residual = torch.linalg.matrix_norm(wide - U @ torch.diag_embed(S) @ Vh) / torch.linalg.matrix_norm(wide)
    worst = float(residual.max() / (max(m, n) * eps))
    return worst <= 64 and bool(result.info.converged.all()), f"max ||A - U S Vh|| / (||A|| max(m, n) eps) = {worst:.2f}"


def check_close(got, want, abs_scale, additions, dtype):
    bound = additions * torch.finfo(dtype).eps / 2 * abs_scale
    excess = float(((got.double() - want).abs() - bound).max())
    return excess <= 0, f"within {additions} unit roundoffs of sum |x| (float64 reference)"


# Issue 37: the two headline shapes, then those PyTorch users report as slow; (shape, dtype, the
# speed-up over torch.linalg.svd on the GPU asked for).
SVD_CASES = [((1000, 64, 64), torch.float32, 100.0), ((100, 256, 256), torch.float64, 30.0),
             ((100000, 3, 3), torch.float32, 10.0), ((8716, 3, 2), torch.float32, 10.0),
             ((1000, 60, 3), torch.float32, 10.0), ((100, 10, 10), torch.float32, 10.0),
             ((300, 900, 100), torch.float32, 10.0)]


def svd_row(timer, quick, shape, dtype, target):
    a = torch.randn(shape, dtype=dtype, device="cuda")
    row = {"op": "svd", "shape": list(shape), "dtype": str(dtype)[6:], "comparator": "torch.linalg.svd",
           "target": f">= {target:g}x torch GPU, > 1x torch CPU"}
    ok, row["check"] = check_svd(a, rooflab.svd(a))
    if not ok:
        return {**row, "status": "FAILED"}
    row["rooflab"] = timer.gpu(lambda: rooflab.svd(a), budget_s=2.0)
    # torch takes up to seconds a call at the headline shapes: fewer repetitions.
    row["torch"] = timer.gpu(lambda: torch.linalg.svd(a, full_matrices=False), budget_s=1.0 if quick else 4.0,
                             most=10)
    host = a.cpu()
    row["torch_cpu"] = timer.cpu(lambda: torch.linalg.svd(host, full_matrices=False), most=10)
    row["speedup"] = row["torch"]["median_us"] / row["rooflab"]["median_us"]
    row["speedup_vs_cpu"] = row["torch_cpu"]["median_us"] / row["rooflab"]["median_us"]
    row["per_matrix_us"] = row["rooflab"]["median_us"] / shape[0]
    row["meets_target"] = row["speedup"] >= target and row["speedup_vs_cpu"] > 1.0
    return row


def bandwidth_row(timer, op, shape, dtype, comparator, target, bytes_moved, ours, theirs, check):
    row = {"op": op, "shape": list(shape), "dtype": str(dtype)[6:], "comparator": comparator,
           "target": f">= {target:g}x"}
    ok, row["check"] = check()
    if not ok:
        return {**row, "status": "FAILED"}
    row["rooflab"] = timer.gpu(ours)
    row["torch"] = timer.gpu(theirs)
    for side in ("rooflab", "torch"):
        row[side]["GB_per_s"] = bytes_moved / (row[side]["median_us"] * 1e3)
    row["speedup"] = row["torch"]["median_us"] / row["rooflab"]["median_us"]
    row["meets_target"] = row["speedup"] >= target
    return row


def histogram_float_row(timer):
    x = torch.rand(1 << 28, device="cuda")

    def check():
        index = (x.double() * 256).floor().clamp(max=255).long()  # the rule for lo = 0, hi = 1
        return (bool(torch.equal(rooflab.histogram_even(x, 256, 0.0, 1.0), torch.bincount(index, minlength=256))),
                "every bin equal to the rule evaluated in float64")

    return bandwidth_row(timer, "histogram_even", x.shape, x.dtype, "torch.histc(bins=256)", 3.0, x.numel() * 4,
                         lambda: rooflab.histogram_even(x, 256, 0.0, 1.0), lambda: torch.histc(x, 256, 0.0, 1.0),
                         check)


def histogram_uint8_row(timer):
    x = torch.randint(0, 256, (1 << 30,), dtype=torch.uint8, device="cuda")

    def check():
        return (bool(torch.equal(rooflab.histogram_even(x, 256, 0.0, 256.0), torch.bincount(x, minlength=256))),
                "equal to torch.bincount")

    return bandwidth_row(timer, "histogram_even", x.shape, x.dtype, "torch.bincount(minlength=256)", 3.0,
                         x.numel(), lambda: rooflab.histogram_even(x, 256, 0.0, 256.0),
                         lambda: torch.bincount(x, minlength=256), check)


def transpose_row(timer):
    x = torch.randn(4096, 4096, device="cuda")
    return bandwidth_row(timer, "transpose", x.shape, x.dtype, ".t().contiguous()", 2.0, 2 * x.numel() * 4,
                         lambda: rooflab.transpose(x), lambda: x.t().contiguous(),
                         lambda: (bool(torch.equal(rooflab.transpose(x), x.t())), "exact"))


def scan_row(timer):
    x = torch.rand(1 << 28, device="cuda")

    def check():
        got = rooflab.inclusive_scan(x)
        want = torch.cumsum(x.double(), 0)  # x >= 0: sum |x| is the prefix itself
        return check_close(got, want, want, 65, x.dtype)

    return bandwidth_row(timer, "inclusive_scan", x.shape, x.dtype, "torch.cumsum", 1.1, 2 * x.numel() * 4,
                         lambda: rooflab.inclusive_scan(x), lambda: torch.cumsum(x, 0), check)


def reduce_rows_row(timer, rows, cols):
    x = torch.randn(rows, cols, device="cuda")

    def check():
        return check_close(rooflab.reduce_rows(x), x.double().sum(1), x.double().abs().sum(1), 300, x.dtype)

    return bandwidth_row(timer, "reduce_rows", x.shape, x.dtype, "torch.sum(dim=1)", 1.0, x.numel() * 4,
                         lambda: rooflab.reduce_rows(x), lambda: torch.sum(x, dim=1), check)


# The lab's five report shapes for reduce-rows (src/reduce/reduce_op.cpp).
REDUCE_ROWS_SHAPES = [(1 * MEBI, 32), (256 * KIBI, 1 * KIBI), (64 * KIBI, 4 * KIBI), (1 * KIBI, 256 * KIBI),
                      (8, 32 * MEBI)]


def host_us_per_call(timed: dict, calls=200, rounds=20) -> dict:
    """Host microseconds each of `timed`'s calls takes to queue, with nothing waited for in between:
    a list of `rounds` figures per call, each the mean of `calls` calls. The calls take turns round
    by round, after a first round that is not kept, so that the host's drift from one moment to
    the next touches them alike."""
    per_call = {name: [] for name in timed}
    for round_ in range(rounds + 1):
        for name, call in timed.items():
            torch.cuda.synchronize()
            begin = time.perf_counter()
            for _ in range(calls):
                call()
            if round_ > 0:
                per_call[name].append((time.perf_counter() - begin) * 1e6 / calls)
    torch.cuda.synchronize()
    return per_call


OVERHEAD_CALLS = ("inclusive_scan(x, out=out)", "reduce(x), its result allocated by torch",
                  "reduce_rows(m), 64 x 16", "histogram_even(x, 256, 0.0, 1.0)", "transpose(m), 64 x 16")


def overhead_row(package_call: str):
    x = torch.rand(1024, device="cuda")
    m = x.view(64, 16)
    out = torch.empty_like(x)
    total = torch.empty((), device="cuda")
    counts = torch.empty(256, dtype=torch.int64, device="cuda")
    # The native module called as directly as Python can: addresses, device and stream known, the
    # result allocated beforehand.
    device, stream = x.device.index, torch.cuda.current_stream().cuda_stream
    x_address, out_address, total_address = x.data_ptr(), out.data_ptr(), total.data_ptr()
    # Each package call is also timed with the current stream given as stream=, which takes the
    # general path (Call, in rooflab/_arrays.py) instead of the native module's torch_<function>.
    package, native = {
        "inclusive_scan(x, out=out)": (
            lambda **given: rooflab.inclusive_scan(x, out=out, **given),
            lambda: _rooflab.inclusive_scan("float32", x_address, out_address, 1024, device, stream)),
        "reduce(x), its result allocated by torch": (
            lambda **given: rooflab.reduce(x, **given),
            lambda: _rooflab.reduce("float32", "sum", x_address, 1024, total_address, device, stream)),
        "reduce_rows(m), 64 x 16": (
            lambda **given: rooflab.reduce_rows(m, **given),
            lambda: _rooflab.reduce_rows("float32", "sum", x_address, 64, 16, out_address, device, stream)),
        "histogram_even(x, 256, 0.0, 1.0)": (
            lambda **given: rooflab.histogram_even(x, 256, 0.0, 1.0, **given),
            lambda: _rooflab.histogram_even("float32", x_address, 1024, 256, 0.0, 1.0, counts.data_ptr(), device,
                                            stream)),
        "transpose(m), 64 x 16": (
            lambda **given: rooflab.transpose(m, **given),
            lambda: _rooflab.transpose(4, x_address, 64, 16, out_address, device, stream)),
    }[package_call]
    times = host_us_per_call({"package": package, "native": native, "general": lambda: package(stream=stream)})
    # The overhead: the median of the rounds' differences, each round's calls timed side by side.
    overhead_us, general_overhead_us = (statistics.median(map(operator.sub, times[name], times["native"]))
                                        for name in ("package", "general"))
    return {"op": "python overhead", "call": package_call, "shape": [1024], "dtype": "float32",
            "package_us": statistics.median(times["package"]), "native_module_us": statistics.median(times["native"]),
            "overhead_us": overhead_us, "general_path_overhead_us": general_overhead_us,
            "target": "<= 5 us", "meets_target": overhead_us <= 5.0}


def environment() -> dict:
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    runtime, driver = _rooflab.cuda_versions()
    # As the C++ build does (cmake/build_info.cmake): ROOFLAB_GIT_COMMIT names the commit where the
    # tree is a copy git cannot see, or sits inside another repository whose HEAD git would report.
    commit = os.environ.get("ROOFLAB_GIT_COMMIT")
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                    check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            commit = None
    return {"device": properties.name, "compute_capability": f"{properties.major}.{properties.minor}",
            "sms": properties.multi_processor_count, "rooflab": rooflab.__version__, "torch": torch.__version__,
            "torch_cuda": torch.version.cuda, "rooflab_cuda_runtime": runtime, "cuda_driver": driver,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "commit": commit}


def describe(row) -> str:
    shape = " x ".join(map(str, row["shape"]))
    if row.get("status") == "FAILED":
        return f"{row['op']:<16} {shape:<22} {row['dtype']:<8} FAILED: {row['check']}"
    if row["op"] == "python overhead":
        return (f"{row['op']:<16} {row['call']:<40} +{row['overhead_us']:.2f} us "
                f"(general path +{row['general_path_overhead_us']:.2f} us)")
    return (f"{row['op']:<16} {shape:<22} {row['dtype']:<8} rooflab {format_us(row['rooflab']['median_us'])}, "
            f"{row['comparator']} {format_us(row['torch']['median_us'])}: {row['speedup']:.1f}x")


def format_us(us: float) -> str:
    return f"{us / 1e3:.2f} ms" if us >= 1e3 else f"{us:.1f} us"


def markdown(rows, env) -> str:
    lines = [f"Measured on {env['device']} (rooflab {env['rooflab']}, torch {env['torch']}), {env['date']}.", "",
             "| op | shape | dtype | rooflab | PyTorch | speed-up | target | met |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if row.get("status") == "FAILED" or row["op"] == "python overhead":
            continue
        shape = " x ".join(map(str, row["shape"]))
        ours, theirs = row["rooflab"], row["torch"]
        speed = f"{row['speedup']:.1f}x"
        if "speedup_vs_cpu" in row:
            speed += f" ({row['speedup_vs_cpu']:.1f}x torch CPU)"
        if "GB_per_s" in ours:
            ours_text = f"{format_us(ours['median_us'])}, {ours['GB_per_s']:.0f} GB/s"
            theirs_text = f"{row['comparator']}: {format_us(theirs['median_us'])}, {theirs['GB_per_s']:.0f} GB/s"
        else:
            ours_text = f"{format_us(ours['median_us'])} ({format_us(row['per_matrix_us'])} a matrix)"
            theirs_text = f"{row['comparator']}: {format_us(theirs['median_us'])}"
        lines.append(f"| {row['op']} | {shape} | {row['dtype']} | {ours_text} | {theirs_text} | {speed} | "
                     f"{row['target']} | {'yes' if row['meets_target'] else 'no'} |")
    for row in rows:
        if row.get("status") == "FAILED":
            lines.append(f"\n{row['op']} {' x '.join(map(str, row['shape']))} FAILED: {row['check']}")
        elif row["op"] == "python overhead":
            lines.append(f"\nPython overhead of `{row['call']}`: {row['overhead_us']:.2f} us over the native module "
                         f"({row['package_us']:.2f} us against {row['native_module_us']:.2f} us a call; "
                         f"the general path, stream= given: {row['general_path_overhead_us']:.2f} us).")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the results file (JSON)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--only", nargs="*", default=None,
                        choices=["svd", "histogram", "transpose", "scan", "reduce_rows", "overhead"])
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench.py: torch sees no CUDA GPU", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    timer = Timer(args.quick)
    env = environment()
    print(f"rooflab {env['rooflab']} against torch {env['torch']} on {env['device']}", file=sys.stderr)
    plan = [("svd", functools.partial(svd_row, timer, args.quick, *case)) for case in SVD_CASES]
    plan += [("histogram", functools.partial(histogram_float_row, timer)),
             ("histogram", functools.partial(histogram_uint8_row, timer)),
             ("transpose", functools.partial(transpose_row, timer)),
             ("scan", functools.partial(scan_row, timer))]
    plan += [("reduce_rows", functools.partial(reduce_rows_row, timer, *shape)) for shape in REDUCE_ROWS_SHAPES]
    plan += [("overhead", functools.partial(overhead_row, call)) for call in OVERHEAD_CALLS]
    rows = []
    for group, measure in plan:
        if args.only is not None and group not in args.only:
            continue
        try:
            row = measure()
        except rooflab.Error as error:  # recorded, so that the other rows still run and the file is written
            row = {"op": group, "shape": [], "dtype": "", "status": "FAILED", "check": str(error)}
        rows.append(row)
        print(describe(row), file=sys.stderr, flush=True)
    with open(args.out, "w") as results:
        json.dump({"environment": env, "rows": rows}, results, indent=2)
    print(markdown(rows, env))
    failed = [row for row in rows if row.get("status") == "FAILED"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
