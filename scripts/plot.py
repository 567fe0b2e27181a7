#!/usr/bin/env python3
"""Charts of a rooflab results file (rooflab report / rooflab bench --out results.json).

  plot.py ladder RESULTS.json --out DIR     DIR/ladder-<i>.png for run i: each rung's rate as a bar,
                                            the measured ceiling as a line, FAILED/skipped labelled
  plot.py roofline RESULTS.json --out DIR   DIR/roofline.png: every measured variant at its
                                            operational intensity under the measured ceilings, an
                                            op a colour; DIR/roofline-<op>.png: one op, its fastest
                                            rung and the fastest vendor rung named

Rates come from the results file as measured; nothing is recomputed but flop/byte.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display on GPU machines or CI
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

COMPUTE_CEILINGS = {"fp32 peak", "fp64 peak"}
# Model ceiling name -> key in environment.ceilings (GB/s, or GFLOP/s for COMPUTE_CEILINGS)
CEILING_KEYS = {
    "copy bandwidth": "copy_bandwidth_gbps",
    "read bandwidth": "read_bandwidth_gbps",
    "host-transfer bandwidth": "host_to_device_gbps",
    "fp32 peak": "fp32_peak_gflops",
    "fp64 peak": "fp64_peak_gflops",
}
COLORS = {"gpu": "#3b75af", "cpu": "#8c8c8c", "vendor": "#ef8636"}


def load(path):
    with open(path) as file:
        return json.load(file)


def device_name(results):
    return results.get("environment", {}).get("device", {}).get("name", "unknown device")


def ceiling_value(results, name):
    """The measured ceiling's value (GB/s or GFLOP/s), or None when the file lacks it."""
    key = CEILING_KEYS.get(name)
    value = results.get("environment", {}).get("ceilings", {}).get(key) if key else None
    return value if value else None


def row_kind(row):
    if row.get("vendor"):
        return "vendor"
    return "cpu" if row.get("cpu") else "gpu"


def status_label(row):
    """'' for a measured row, else what the chart should say instead of a bar."""
    status = row.get("status", "ok")
    if status == "ok":
        return ""
    if status == "FAILED" and row.get("expected_failure"):
        return "FAILED (by design)"
    return status


def draw_ladder(results, run, path):
    ceiling = run["model"]["ceiling"]
    compute = ceiling in COMPUTE_CEILINGS
    unit = "GFLOP/s" if compute else "GB/s"
    rows = run["rows"]
    labels = [f"{row['rung']} {row['name']}" for row in rows]
    values = [(row["gflops"] if compute else row["gbps"]) if row["status"] == "ok" else 0 for row in rows]
    measured = [value for value in values if value > 0]
    limit = ceiling_value(results, ceiling)

    figure, axes = plt.subplots(figsize=(max(6.0, 0.55 * len(rows) + 2.5), 4.8))
    positions = range(len(rows))
    axes.bar(positions, values, color=[COLORS[row_kind(row)] for row in rows])
    spread = max(measured + [limit or 0]) / min(measured) if measured else 1
    if spread > 50:  # atomics, transfers: rungs differ by orders of magnitude
        axes.set_yscale("log")
    bottom = min(measured) if measured else 1
    for position, (row, value) in enumerate(zip(rows, values)):
        label = status_label(row)
        if label:
            axes.text(position, bottom, label, rotation=90, ha="center", va="bottom", fontsize=8,
                      color="#c0392b" if label.startswith("FAILED") else "#555555")
        else:
            axes.text(position, value, f"{value:.3g}", ha="center", va="bottom", fontsize=7)
    if limit:
        axes.axhline(limit, color="#c0392b", linestyle="--", linewidth=1)
        axes.text(len(rows) - 0.5, limit, f"measured {ceiling}: {limit:.4g} {unit}", ha="right",
                  va="bottom", fontsize=8, color="#c0392b")
    axes.set_xticks(list(positions))
    axes.set_xticklabels(labels, rotation=40, ha="right", fontsize=8)
    axes.set_ylabel(unit)
    axes.set_title(f"{run['op']}: {run['problem']}\n{device_name(results)}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def ladder(results, directory):
    for index, run in enumerate(results.get("runs", [])):
        draw_ladder(results, run, os.path.join(directory, f"ladder-{index}.png"))
    return 0


def roofline_points(results):
    """(op, row, flop/byte) of every measured row with flops, and the count of rows without."""
    points, without_flops = [], 0
    for run in results.get("runs", []):
        for row in run["rows"]:
            if row["status"] != "ok":
                continue
            if row["flops"] <= 0 or row["bytes"] <= 0 or row["gflops"] <= 0:
                without_flops += 1  # transfers move bytes and do no arithmetic
                continue
            points.append((run["op"], row, row["flops"] / row["bytes"]))
    return points, without_flops


def draw_roofline(results, points, without_flops, path, title, named):
    """The ceilings and `points`; rows in `named` (by id) get their op and name beside them."""
    ceilings = results.get("environment", {}).get("ceilings", {})
    fp32 = ceilings.get("fp32_peak_gflops") or 0
    fp64 = ceilings.get("fp64_peak_gflops") or 0
    copy = ceilings.get("copy_bandwidth_gbps") or 0
    read = ceilings.get("read_bandwidth_gbps") or 0
    host = ceilings.get("host_to_device_gbps") or 0

    intensities = [intensity for _, _, intensity in points]
    ridge = fp32 / copy if fp32 and copy else 10
    low = min(intensities + [ridge]) / 8
    high = max(intensities + [ridge]) * 8
    xs = [low * (high / low) ** (k / 200) for k in range(201)]

    figure, axes = plt.subplots(figsize=(10, 7))
    axes.set_xscale("log")
    axes.set_yscale("log")
    if copy and fp32:
        axes.plot(xs, [min(fp32, copy * x) for x in xs], color="black", linewidth=2,
                  label=f"fp32 roof: {fp32:.4g} GFLOP/s, copy {copy:.4g} GB/s")
    if read and fp32:
        axes.plot(xs, [min(fp32, read * x) for x in xs], color="black", linestyle="--", linewidth=1,
                  label=f"read bandwidth {read:.4g} GB/s")
    if copy and fp64:
        axes.plot(xs, [min(fp64, copy * x) for x in xs], color="#7f4f9f", linewidth=1.5,
                  label=f"fp64 roof: {fp64:.4g} GFLOP/s")
    if host:
        axes.plot(xs, [min(fp32, host * x) if fp32 else host * x for x in xs], color="#2a9d8f",
                  linestyle=":", linewidth=1.5, label=f"host link (pinned H2D) {host:.4g} GB/s")

    ops = sorted({op for op, _, _ in points})
    palette = plt.get_cmap("tab10")
    for index, op in enumerate(ops):
        color = palette(index % 10)
        for name, row, intensity in points:
            if name != op:
                continue
            hollow = row.get("cpu")
            axes.scatter([intensity], [row["gflops"]], s=28, marker="s" if hollow else "o",
                         facecolors="none" if hollow else [color], edgecolors=[color], zorder=3)
            if id(row) in named:  # the vendor's name below its point: the two are often close
                axes.annotate(f"{op}: {row['name']}", (intensity, row["gflops"]), textcoords="offset points",
                              xytext=(6, -10 if row.get("vendor") else 3), fontsize=7, color=color)
        axes.scatter([], [], color=color, label=op)  # one legend entry per op

    axes.set_xlim(low, high)
    axes.set_xlabel("operational intensity (flop / byte of device memory traffic, from each op's model)")
    axes.set_ylabel("attainable GFLOP/s")
    note = f"; {without_flops} row(s) without flops (transfers) not shown" if without_flops else ""
    axes.set_title(f"{title}, {device_name(results)}\n(squares: CPU rungs{note})", fontsize=10)
    axes.grid(True, which="both", linewidth=0.3, alpha=0.5)
    axes.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=130)
    plt.close(figure)


def roofline(results, directory):
    """roofline.png: every op, told apart by colour; roofline-<op>.png: one op, its fastest rung of
    its own and the fastest vendor rung named. The memory-bound rungs of all ops sit at a few
    intensities: names for all of them piled on one another."""
    points, without_flops = roofline_points(results)
    draw_roofline(results, points, without_flops, os.path.join(directory, "roofline.png"),
                  "Roofline of every measured variant", set())
    for op in sorted({op for op, _, _ in points}):
        mine = [point for point in points if point[0] == op]
        named = set()
        for vendor in (False, True):
            rows = [row for _, row, _ in mine if not row.get("cpu") and bool(row.get("vendor")) == vendor]
            if rows:
                named.add(id(max(rows, key=lambda row: row["gflops"])))
        draw_roofline(results, mine, 0, os.path.join(directory, f"roofline-{op}.png"), f"Roofline of {op}", named)
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chart", choices=["ladder", "roofline"])
    parser.add_argument("results", help="a rooflab results file (JSON)")
    parser.add_argument("--out", required=True, help="directory for the PNG files")
    arguments = parser.parse_args(argv)
    os.makedirs(arguments.out, exist_ok=True)
    results = load(arguments.results)
    draw = ladder if arguments.chart == "ladder" else roofline
    return draw(results, arguments.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
