#!/usr/bin/env python3
"""The SVD's class tables (docs/svd.md, "Structured inputs") from a results file of
`rooflab bench svd` and `svd-batched` runs over the input classes (scripts/svd-classes.sh), each
row judged against the targets it can be judged on:

svd, one n x n matrix (the library call beside cuSOLVER on the same matrix):
  - its factors pass LAPACK's tests (the bench's check, ratios within 35);
  - sweeps at most LAPACK dgesvj's + 2 where dgesvj converged (the bench notes dgesvj's sweeps for
    one double matrix of up to 512 rows);
  - a rank-deficient class no more sweeps than the random matrix of the size and type;
  - at least 2x gesvdj, and no slower than the random matrix of the size and type;
  - the random double matrix at least 5x gesvdj and faster than the fastest of gesvdj, gesvdp and
    gesvd (the targets of docs/svd.md, set in double).
svd-batched (the library call alone):
  - every matrix passes LAPACK's tests;
  - a rank-deficient class no more sweeps (the batch's most) than the random batch of the shape;
  - a batch holding some hard matrices (`mixed`) at most 1.2x the random batch of the shape, any
    other class no slower than it.

Usage: svd_class_table.py RESULTS.json"""
import json
import re
import sys

RANK_DEFICIENT = {"zero", "rank-1", "rank-2", "rank-quarter", "rank-minus-1", "rank-1-integer",
                  "duplicated-columns", "zero-columns", "zero-rows"}
VENDORS = ("cusolver-gesvdj", "cusolver-gesvdp", "cusolver-gesvd")


def time_text(ms):
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms * 1e3:.1f} us" if ms >= 0.01 else f"{ms * 1e3:.3f} us"


def ok(row):
    return row is not None and row["status"] == "ok" and row["median_ms"] > 0


def outcome_text(row):
    """A row that has no time: not run, skipped, or failed its check."""
    if row is None:
        return "not run"
    return "FAILED" if row["status"] == "FAILED" else row["status"]


def sweeps_of(note):
    """(fewest, most) sweeps and (dgesvj's sweeps, converged) from a row's note, None if absent."""
    found = re.search(r"(\d+)(?:-(\d+))? sweeps", note)
    sweeps = (int(found.group(1)), int(found.group(2) or found.group(1))) if found else None
    lapack = re.search(r"LAPACK dgesvj (\d+)(, not converged)?", note)
    dgesvj = (int(lapack.group(1)), lapack.group(2) is None) if lapack else None
    return sweeps, dgesvj


def parse_problem(text):
    """(op shape, dtype, class) of a run's problem: "256 x 256, double, rank-1 matrix" or
    "16 x 256 x 256, float, mixed matrices"."""
    found = re.match(r"([\d x]+), (\w+), ([\w-]+) matri(?:x|ces)$", text)
    return found.groups() if found else None


def svd_tables(runs, out):
    """One table per type and size; returns (rows, rows missing a target)."""
    groups = {}
    for run in runs:
        shape, dtype, matrix_class = run["key"]
        groups.setdefault((dtype, shape), []).append((matrix_class, run))
    total = missed = 0
    for (dtype, shape), members in groups.items():
        rows_by_class = {c: {row["name"]: row for row in run["rows"]} for c, run in members}
        random = rows_by_class.get("random", {}).get("rooflab-svd")
        random_sweeps = sweeps_of(random["note"])[0] if ok(random) else None
        print(f"\n{shape}, {dtype}:\n", file=out)
        print("| class | sweeps / dgesvj | rooflab | gesvdj | gesvdp | gesvd | vs gesvdj | "
              "vs random | worst ratio | targets |", file=out)
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|", file=out)
        for matrix_class, _ in members:
            rows = rows_by_class[matrix_class]
            ours = rows.get("rooflab-svd")
            vendors = [rows.get(name) for name in VENDORS]
            vendor_cells = [time_text(v["median_ms"]) if ok(v) else outcome_text(v)
                            for v in vendors]
            total += 1
            if not ok(ours):
                missed += 1
                print(f"| {matrix_class} | | {outcome_text(ours)} | " + " | ".join(vendor_cells) +
                      f" | | | | **missed**: {outcome_text(ours)} |", file=out)
                continue
            reasons = []
            sweeps, dgesvj = sweeps_of(ours["note"])
            most = sweeps[1] if sweeps else None
            sweep_cell = str(most) if most is not None else "-"
            if dgesvj is not None:
                sweep_cell += f" / {dgesvj[0]}" if dgesvj[1] else " / no conv."
                if dgesvj[1] and most is not None and most > dgesvj[0] + 2:
                    reasons.append("sweeps > dgesvj + 2")
            if (matrix_class in RANK_DEFICIENT and random_sweeps is not None and
                    most is not None and most > random_sweeps[1]):
                reasons.append("more sweeps than random")
            time = ours["median_ms"]
            gesvdj = vendors[0]
            vs_gesvdj = gesvdj["median_ms"] / time if ok(gesvdj) else None
            if vs_gesvdj is not None and vs_gesvdj < 2:
                reasons.append("< 2x gesvdj")
            vs_random = time / random["median_ms"] if ok(random) else None
            if vs_random is not None and vs_random > 1:
                reasons.append("slower than random")
            if matrix_class == "random" and dtype == "double":  # targets set in double
                if vs_gesvdj is not None and vs_gesvdj < 5:
                    reasons.append("< 5x gesvdj")
                fastest = min((v["median_ms"] for v in vendors if ok(v)), default=None)
                if fastest is not None and time >= fastest:
                    reasons.append("not faster than cuSOLVER's fastest")
            missed += bool(reasons)
            verdict = "**missed**: " + ", ".join(reasons) if reasons else "met"
            gesvdj_ratio = f"{vs_gesvdj:.2f}x" if vs_gesvdj is not None else "-"
            random_ratio = f"{vs_random:.2f}" if vs_random is not None else "-"
            print(f"| {matrix_class} | {sweep_cell} | {time_text(time)} | " +
                  " | ".join(vendor_cells) +
                  f" | {gesvdj_ratio} | {random_ratio} | {ours['error']:.2g} | {verdict} |",
                  file=out)
    return total, missed


def batched_table(runs, out):
    """One table for every batch; returns (rows, rows missing a target)."""
    randoms = {}
    for run in runs:
        shape, dtype, matrix_class = run["key"]
        rows = {row["name"]: row for row in run["rows"]}
        if matrix_class == "random":
            randoms[(shape, dtype)] = rows.get("rooflab-svd-batched")
    print("\n| batch x m x n | type | class | sweeps | rooflab a matrix | over random | "
          "worst ratio | targets |", file=out)
    print("|---|---|---|---|---:|---:|---:|---|", file=out)
    total = missed = 0
    for run in runs:
        shape, dtype, matrix_class = run["key"]
        ours = {row["name"]: row for row in run["rows"]}.get("rooflab-svd-batched")
        total += 1
        if not ok(ours):
            missed += 1
            print(f"| {shape} | {dtype} | {matrix_class} | | {outcome_text(ours)} | | | "
                  f"**missed**: {outcome_text(ours)} |", file=out)
            continue
        batch = int(shape.split(" x ")[0])
        random = randoms.get((shape, dtype))
        sweeps = sweeps_of(ours["note"])[0]
        random_sweeps = sweeps_of(random["note"])[0] if ok(random) else None
        sweep_cell = (f"{sweeps[0]}-{sweeps[1]}" if sweeps[0] != sweeps[1] else str(sweeps[0])
                      ) if sweeps else ""
        reasons = []
        if (matrix_class in RANK_DEFICIENT and sweeps is not None and random_sweeps is not None and
                sweeps[1] > random_sweeps[1]):
            reasons.append("more sweeps than random")
        over = ours["median_ms"] / random["median_ms"] if ok(random) else None
        bound = 1.2 if matrix_class == "mixed" else 1.0
        if over is not None and over > bound:
            reasons.append(f"over {bound:g}x random")
        missed += bool(reasons)
        verdict = "**missed**: " + ", ".join(reasons) if reasons else "met"
        over_cell = f"{over:.2f}" if over is not None else "-"
        print(f"| {shape} | {dtype} | {matrix_class} | {sweep_cell} | "
              f"{time_text(ours['median_ms'] / batch)} | "
              f"{over_cell} | {ours['error']:.2g} | {verdict} |", file=out)
    return total, missed


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = json.load(open(sys.argv[1]))
    env = results.get("environment", {})
    device = env.get("device", {})
    device_name = device.get("name", "?") if isinstance(device, dict) else "?"
    by_op = {"svd": [], "svd-batched": []}
    for run in results["runs"]:
        key = parse_problem(run["problem"])
        if run.get("op") in by_op and key is not None:
            by_op[run["op"]].append(dict(run, key=key))
    if not any(by_op.values()):
        print("no svd or svd-batched runs by class in " + sys.argv[1], file=sys.stderr)
        return 1
    out = sys.stdout
    total = missed = 0
    if by_op["svd"]:
        print(f"#### svd by input class ({device_name}, commit {env.get('commit', '?')})", file=out)
        counts = svd_tables(by_op["svd"], out)
        total, missed = total + counts[0], missed + counts[1]
    if by_op["svd-batched"]:
        print(f"\n#### svd-batched by input class ({device_name}, commit "
              f"{env.get('commit', '?')})", file=out)
        counts = batched_table(by_op["svd-batched"], out)
        total, missed = total + counts[0], missed + counts[1]
    print(f"\n{missed} of {total} rows miss a target.", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
