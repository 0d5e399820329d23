"""Wall time and peak memory of the default workflow run (README figure).

Runs ``snakemake --cores all`` on the repository's ``config.yaml`` in a fresh temporary folder,
``--runs`` times, sampling the memory of snakemake and all its descendants every 0.1 s: the
summed PSS (the real footprint) and, for reference, the summed RSS (which counts shared
libraries once per process). Writes ``benchmarks/results/default_run.json`` with every run and the medians.

Usage: ``python benchmarks/default_run.py [--runs 3] [--cores all]``
Goal (issue 2): under 10 minutes and 4 GB on the 2-core reference machine.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent


def tree_memory(proc: psutil.Process) -> tuple[int, int, list[tuple[str, float]]]:
    """``(pss, rss, breakdown)`` summed over ``proc`` and its live descendants.

    PSS (proportional set size) divides each shared page among the processes mapping it, so the
    sum is the real footprint; summed RSS counts shared libraries (torch, CUDA) once per job.
    ``breakdown`` lists ``(process, pss MB)`` to show what was running at the peak.
    """
    pss = rss = 0
    breakdown = []
    for p in [proc, *proc.children(recursive=True)]:
        try:
            info = p.memory_full_info()
            pss, rss = pss + info.pss, rss + info.rss
            name = " ".join(Path(a).name for a in p.cmdline()[:3])
            breakdown.append((name[:80], round(info.pss / 2**20, 1)))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return pss, rss, breakdown


def one_run(cores: str, keep: str | None = None, workdir: str | None = None) -> dict:
    """One timed run in a fresh folder: a temporary one, or ``workdir`` (kept afterwards, so
    that benchmarks which need a finished run, such as ``cmms_seed_robustness.py``, can use it).

    Raises:
        FileExistsError: ``workdir`` already holds results (the run would not be fresh).
        RuntimeError: Snakemake failed.
    """
    if workdir is not None:
        if Path(workdir, "results").exists():
            raise FileExistsError(f"{workdir}/results exists: the run would not start fresh")
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(workdir) if workdir is not None
          else tempfile.TemporaryDirectory(prefix="roundtrip-bench-")) as work:
        shutil.copy(REPO / "config.yaml", Path(work) / "config.yaml")
        cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
               "--configfile", "config.yaml", "--cores", cores, "--quiet", "all"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ps, peak_pss, peak_rss, at_peak = psutil.Process(proc.pid), 0, 0, []
        while proc.poll() is None:
            pss, rss, breakdown = tree_memory(ps)
            if pss > peak_pss:
                peak_pss, at_peak = pss, breakdown
            peak_rss = max(peak_rss, rss)
            time.sleep(0.1)
        wall = time.perf_counter() - t0
        err = proc.stderr.read().decode(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"snakemake failed:\n{err[-3000:]}")
        n_jobs = sum(1 for _ in Path(work, "results/benchmarks").rglob("*.tsv"))
        if keep:  # copy the tables of this run for inspection
            shutil.copytree(Path(work, "results/tables"), keep, dirs_exist_ok=True)
        return {"wall_s": round(wall, 2), "peak_pss_mb": round(peak_pss / 2**20, 1),
                "peak_rss_sum_mb": round(peak_rss / 2**20, 1), "benchmarked_jobs": n_jobs,
                "processes_at_peak_pss_mb": at_peak}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cores", default="all")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/default_run.json"))
    ap.add_argument("--keep-tables", default=None, help="copy the last run's tables here")
    ap.add_argument("--workdir", default=None,
                    help="run in this new folder and keep it (with --runs 1)")
    args = ap.parse_args()
    if args.workdir and args.runs != 1:
        ap.error("--workdir keeps one run's results: use it with --runs 1")
    runs = []
    for k in range(args.runs):
        runs.append(one_run(args.cores, args.keep_tables, args.workdir))
        print(f"run {k + 1}/{args.runs}: {runs[-1]}", flush=True)
    result = {
        "benchmark": "default config.yaml, snakemake --cores " + args.cores,
        "machine": {"cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
                    "python": platform.python_version(), "platform": platform.platform()},
        "runs": runs,
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "median_peak_pss_mb": statistics.median(r["peak_pss_mb"] for r in runs),
        "median_peak_rss_sum_mb": statistics.median(r["peak_rss_sum_mb"] for r in runs),
        "goal": {"wall_s": 600, "peak_memory_mb": 4096},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
