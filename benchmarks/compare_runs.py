"""How long `roundtrip compare` takes on two finished results folders (goal: 30 s on 2 cores
for two default runs).

    python benchmarks/compare_runs.py RESULTS_A RESULTS_B [--runs 3] [--out FILE]
        [-- extra arguments of roundtrip compare, e.g. --baseline small_vq --candidate small_rvq]

Each run is the command a user types, in a fresh process (Python, pandas, SciPy and statsmodels
start-up included), writing into a new temporary folder: wall time, CPU time of the process,
and the number of rows and items compared. The record goes to
``benchmarks/results/compare_runs.json`` with the medians (docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from records import REPO, commit, write_record


def one_run(results_a: str, results_b: str, extra: list[str]) -> dict:
    """One ``roundtrip compare`` in its own process: wall and CPU seconds, rows, items."""
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="compare-bench-") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "roundtrip.cli", "compare", results_a,
                               results_b, "--out", out, *extra], capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"roundtrip compare failed ({proc.returncode}):\n{proc.stderr}")
        rows = pd.read_csv(Path(out) / "compare.csv")
        items = pd.read_csv(Path(out) / "compare_items.csv")
        return {"wall_s": round(wall, 2),
                "cpu_s": round(after.ru_utime + after.ru_stime
                               - before.ru_utime - before.ru_stime, 2),
                "rows": len(rows), "rows_compared": int((rows["verdict"] != "not compared").sum()),
                "items": len(items)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("results_a")
    ap.add_argument("results_b")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/compare_runs.json"))
    argv = list(sys.argv[1:] if argv is None else argv)
    # everything after "--" goes to roundtrip compare as it is (argparse would read its options)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.extra = argv[cut + 1:]
    runs = []
    for k in range(args.runs):
        runs.append(one_run(args.results_a, args.results_b, args.extra))
        print(f"run {k + 1}/{args.runs}: {runs[-1]}", flush=True)
    result = {
        "benchmark": "roundtrip compare RESULTS_A RESULTS_B --out TMP "
                     + " ".join(args.extra) + " (a fresh process each run)",
        "commit": commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(),
                    "load_average_1min_at_end": round(os.getloadavg()[0], 2)},
        "runs": runs,
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "goal": {"wall_s": 30},
    }
    write_record(args.out, result)
    print({k: v for k, v in result.items() if k != "runs"})


if __name__ == "__main__":
    main()
