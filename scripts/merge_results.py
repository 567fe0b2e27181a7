#!/usr/bin/env python3
"""Merges several rooflab results files (one per benchmark) into one: the first file's
environment, every file's runs, and each file's seed and same_inputs as lists in file order.
Usage: merge_results.py OUT.json IN.json [IN.json ...]"""
import json
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    documents = []
    for path in sys.argv[2:]:
        with open(path) as handle:
            documents.append(json.load(handle))
    merged = dict(documents[0])
    merged["runs"] = [run for document in documents for run in document["runs"]]
    merged["seeds"] = [document["seed"] for document in documents]
    # Per file, as the seeds: whether every rung of that benchmark had the same inputs.
    merged["same_inputs"] = [document.get("same_inputs", False) for document in documents]
    with open(sys.argv[1], "w") as handle:
        json.dump(merged, handle, indent=2)
    print(f"merged {len(documents)} results files into {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
