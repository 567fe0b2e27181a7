#!/usr/bin/env python3
"""Summarizes an Nsight Compute CSV log (ncu --csv) as a markdown table: one row per kernel, in the
order the kernels first ran (a kernel launched with different grids, such as the two stages of
a two-pass reduction, gets a row per grid), with the median over its launches of each metric present: time,
DRAM throughput (% of peak), global-load sectors per request, shared-memory bank conflicts (loads
and stores together) and local-memory sectors (loads and stores together: spills) per launch. Lines that are not CSV (the program's own output, when
ncu writes to stdout) are skipped.

Usage: ncu_table.py NCU.csv [--kernel REGEX]"""
import argparse
import csv
import re
import statistics
import sys

# Nsight Compute spells time units long ("nsecond") or short ("ns") depending on its version.
TIME_SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
              "second": 1e6, "s": 1e6}
COLUMNS = [
    ("time (us)", "gpu__time_duration.sum"),
    ("DRAM % of peak", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("sectors / request", None),  # l1tex global-load sectors / requests
    ("bank conflicts", None),  # l1tex shared-memory bank conflicts, loads + stores
    ("local sectors", None),  # l1tex local-memory sectors, loads + stores
]


def parse_number(text: str) -> float:
    return float(text.replace(",", ""))


def format_value(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def kernel_base(name: str) -> str:
    """The kernel's name without its parameter list, the parenthesized group that ends the name
    (ncu prints the full signature; "(anonymous namespace)" inside the name stays)."""
    name = name.strip()
    if not name.endswith(")"):
        return name
    depth = 0
    for index in range(len(name) - 1, -1, -1):
        if name[index] == ")":
            depth += 1
        elif name[index] == "(":
            depth -= 1
            if depth == 0:
                return name[:index].strip() if index > 0 else name
    return name


def read_launches(path: str):
    """{launch id: ((kernel, grid), {metric: value})}, in launch order."""
    with open(path, newline="") as handle:
        lines = [line for line in handle if line.startswith('"')]
    launches = {}
    for record in csv.DictReader(lines):
        if "Metric Name" not in record or record.get("ID") == "ID":
            continue
        try:
            value = parse_number(record["Metric Value"])
        except (TypeError, ValueError):
            continue
        unit = record.get("Metric Unit", "")
        if record["Metric Name"] == "gpu__time_duration.sum":
            if unit not in TIME_SCALE:
                raise SystemExit(f"{path}: unknown time unit {unit!r}")
            value *= TIME_SCALE[unit]
        key = (kernel_base(record["Kernel Name"]), record.get("Grid Size", ""))
        _, metrics = launches.setdefault(record["ID"], (key, {}))
        metrics[record["Metric Name"]] = value
    return launches


def derived(metrics: dict, column: str):
    if column == "sectors / request":
        sectors = metrics.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
        requests = metrics.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
        return sectors / requests if sectors is not None and requests else None
    if column == "bank conflicts":
        parts = [metrics.get(name) for name in (
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")]
        if parts[0] is not None:
            return parts[0]
        present = [part for part in parts[1:] if part is not None]
        return sum(present) if present else None
    if column == "local sectors":
        present = [metrics[name] for name in ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
                                              "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum")
                   if name in metrics]
        return sum(present) if present else None
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--kernel", default="", help="only kernels whose name matches this regex")
    args = parser.parse_args()
    launches = read_launches(args.log)
    by_kernel = {}
    for (kernel, grid), metrics in launches.values():
        if re.search(args.kernel, kernel):
            by_kernel.setdefault((kernel, grid), []).append(metrics)
    if not by_kernel:
        print(f"no kernel launches with metrics in {args.log}", file=sys.stderr)
        return 1
    shown = [(title, name) for title, name in COLUMNS
             if any((metrics.get(name) if name else derived(metrics, title)) is not None
                    for runs in by_kernel.values() for metrics in runs)]
    print("| kernel | grid | launches | " + " | ".join(title for title, _ in shown) + " |")
    print("|---|---|---:|" + "---:|" * len(shown))
    for (kernel, grid), runs in by_kernel.items():
        cells = []
        for title, name in shown:
            values = [metrics.get(name) if name else derived(metrics, title) for metrics in runs]
            values = [value for value in values if value is not None]
            cells.append(format_value(statistics.median(values)) if values else "-")
        print(f"| `{kernel}` | {grid} | {len(runs)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
