"""Wall time, jobs and peak memory of the default workflow run, as a new user meets it (README).

Each run copies the repository as a fresh clone would have it (the files git tracks, plus
untracked ones it does not ignore: no ``results/``, ``.snakemake/`` or ``__pycache__``) into a new
temporary folder and runs ``snakemake --cores all`` there on the embedded ``config.yaml``, with the
installed environment (the workflow part of ``make run``; installing is not timed). Memory of
snakemake and all its descendants is sampled every ``--interval`` seconds: the summed RSS, and,
near its peak, the summed PSS (the real footprint). After the run it records the jobs per rule and
their time (Snakemake's ``benchmark:`` records), the job count of the run's log, and the time of a
second ``snakemake`` with nothing changed ("Nothing to be done"). Writes
``benchmarks/results/default_run.json`` with every run and the medians.

Usage: ``python benchmarks/default_run.py [--runs 3] [--cores all] [--workdir DIR]
[--mode portable|fast]``; each run records the SHA-256 of every CSV table, trained checkpoint and
the PDF report, and the record says whether all runs wrote the same bytes. ``--mode`` runs the
config with ``--config reproducibility=MODE`` (default: the config's own mode).
Goal: workflow at most 420 s, peak memory at most 3 GB, on the 2-core
reference machine; the rerun with nothing to do in at most 5 s.
"""
from __future__ import annotations

import argparse
import hashlib
import collections
import csv
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from records import REPO, commit, write_record  # sibling module, on sys.path


def tree_rss(proc: psutil.Process) -> int:
    """RSS summed over ``proc`` and its live descendants: cheap (``/proc/*/statm``), read at
    every sample to decide whether the costly PSS is worth reading (:func:`tree_memory`)."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


#: A sample reads PSS only when the summed RSS is at least this share of the largest seen: PSS
#: (``smaps_rollup``, a walk of every page table) cost 31 s of CPU per run when read every 2 s,
#: about 15 s of the wall time on 2 cores; PSS is at most RSS, so its peak is among these.
PSS_NEAR_PEAK = 0.8


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


def fresh_checkout(dest: Path) -> Path:
    """The repository's files as a fresh clone of the working tree has them, copied to ``dest``."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def rule_times(work: Path) -> dict[str, dict]:
    """``rule -> {jobs, seconds, mean_s}`` from the run's ``results/benchmarks/**.tsv``."""
    times = collections.defaultdict(list)
    root = work / "results/benchmarks"
    for f in root.rglob("*.tsv"):
        rule = f.relative_to(root).parts[0].removesuffix(".tsv")
        rows = list(csv.DictReader(open(f), delimiter="\t"))
        times[rule].append(float(rows[-1]["s"]))
    return {r: {"jobs": len(v), "seconds": round(sum(v), 1), "mean_s": round(sum(v) / len(v), 2)}
            for r, v in sorted(times.items(), key=lambda kv: -sum(kv[1]))}


def job_count(output: str) -> int:
    """Jobs the run executed: the ``total`` line of the job stats Snakemake prints first."""
    m = re.search(r"^total\s+(\d+)", output, re.M)
    return int(m.group(1)) if m else -1


def snakemake(work: Path, cores: str, interval: float = 0.0, mode: str | None = None) -> dict:
    """Run ``snakemake --cores`` in ``work`` (``mode``: ``--config reproducibility=mode``); with
    ``interval`` > 0, sample the tree's memory.

    Raises:
        RuntimeError: Snakemake failed.
    """
    # what `make run` runs (README)
    cmd = [sys.executable, "-m", "snakemake", "--profile", "profiles/workstation", "--cores", cores]
    if mode:
        cmd += ["--config", f"reproducibility={mode}"]
    log = tempfile.TemporaryFile()  # a pipe would fill up and block snakemake
    t0 = time.perf_counter()
    # the copy runs its own code, not the installed checkout's: an editable install points at
    # the checkout the environment was made from, and a job can import roundtrip from there
    # before its scripts/_bootstrap.py puts the copy's src/ first (seen with a worktree)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(Path(work) / "src"), os.environ.get("PYTHONPATH")]))}
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT, env=env)
    ps, peak_pss, peak_rss, at_peak, main_cpu = psutil.Process(proc.pid), 0, 0, [], 0.0
    while interval and proc.poll() is None:
        try:
            rss = tree_rss(ps)
            peak_rss = max(peak_rss, rss)
            if rss >= PSS_NEAR_PEAK * peak_rss:
                pss, _, breakdown = tree_memory(ps)
                if pss > peak_pss:
                    peak_pss, at_peak = pss, breakdown
            main_cpu = sum(ps.cpu_times()[:2])
        except psutil.NoSuchProcess:
            break
        time.sleep(interval)
    proc.wait()
    wall = time.perf_counter() - t0
    # CPU of Snakemake and every process under it (jobs, Tesseract, XeLaTeX): the run's work,
    # steadier than its wall time on a shared machine
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = {"user": children.ru_utime - children0.ru_utime,
           "system": children.ru_stime - children0.ru_stime}
    log.seek(0)
    out = log.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake failed:\n{out[-3000:]}")
    return {"wall_s": round(wall, 2), "peak_pss_mb": round(peak_pss / 2**20, 1),
            "peak_rss_sum_mb": round(peak_rss / 2**20, 1), "processes_at_peak_pss_mb": at_peak,
            "snakemake_main_cpu_s": round(main_cpu, 1),
            "cpu_user_s": round(cpu["user"], 1), "cpu_system_s": round(cpu["system"], 1),
            "output": out}


def artifact_digests(work: Path) -> dict[str, str]:
    """SHA-256 of every CSV table, trained checkpoint and the PDF report of a finished run."""
    files = sorted((work / "results/tables").glob("*.csv"))
    files += sorted((work / "results/weights").rglob("model.pt"))
    files += [work / "results/report.pdf"] if (work / "results/report.pdf").is_file() else []
    return {str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def one_run(cores: str, interval: float, keep: str | None = None,
            workdir: str | None = None, mode: str | None = None) -> dict:
    """One timed run in a fresh copy of the repository: in a temporary folder, or in
    ``workdir`` (kept afterwards, so that benchmarks which need a finished run, such as
    ``cmms_seed_robustness.py``, can use it).

    Raises:
        FileExistsError: ``workdir`` already exists (the run would not be fresh).
        RuntimeError: Snakemake failed.
    """
    if workdir is not None and Path(workdir).exists():
        raise FileExistsError(f"{workdir} exists: the run would not start fresh")
    tmp = None if workdir else tempfile.TemporaryDirectory(prefix="roundtrip-bench-")
    work = Path(workdir or tmp.name)
    try:
        work.mkdir(parents=True, exist_ok=True)
        fresh_checkout(work)
        sampler0 = sum(psutil.Process().cpu_times()[:2])
        run = snakemake(work, cores, interval, mode)
        run["sampler_cpu_s"] = round(sum(psutil.Process().cpu_times()[:2]) - sampler0, 1)
        run["jobs"] = job_count(run.pop("output"))
        rerun = snakemake(work, cores, mode=mode)
        run |= {"rerun_s": rerun["wall_s"],
                "rerun_nothing_to_do": "Nothing to be done" in rerun["output"],
                "rules": rule_times(work),
                # tables, checkpoints, report: runs from scratch must write the same bytes
                "artifacts_sha256": artifact_digests(work)}
        if keep:  # copy the tables (and the PDF report) of this run for inspection
            shutil.copytree(work / "results/tables", keep, dirs_exist_ok=True)
            if (work / "results/report.pdf").is_file():
                shutil.copy(work / "results/report.pdf", Path(keep) / "report.pdf")
        return run
    finally:
        if tmp is not None:
            tmp.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cores", default="all")
    ap.add_argument("--interval", type=float, default=2.0,
                    help="seconds between memory samples (each costs CPU the run then lacks)")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/default_run.json"))
    ap.add_argument("--keep-tables", default=None,
                    help="copy the last run's tables and report.pdf here")
    ap.add_argument("--workdir", default=None,
                    help="run in this new folder and keep it (with --runs 1)")
    ap.add_argument("--mode", choices=("portable", "fast"), default=None,
                    help="reproducibility mode (default: the config's)")
    args = ap.parse_args()
    if args.workdir and args.runs != 1:
        ap.error("--workdir keeps one run's results: use it with --runs 1")
    runs = []
    for k in range(args.runs):
        runs.append(one_run(args.cores, args.interval, args.keep_tables, args.workdir,
                            args.mode))
        brief = {key: v for key, v in runs[-1].items() if key not in ("rules", "artifacts_sha256",
                                                                      "processes_at_peak_pss_mb")}
        print(f"run {k + 1}/{args.runs}: {brief}", flush=True)
    digests = [r.get("artifacts_sha256") for r in runs]
    identical = all(d == digests[0] for d in digests) if len(runs) > 1 else None
    result = {
        "artifacts_identical_across_runs": identical,
        "benchmark": "default config.yaml in a fresh copy of the repository, snakemake "
                     "--profile profiles/workstation --cores " + args.cores + (f" --config reproducibility={args.mode}" if args.mode else ""),
        "commit": commit(),
        "machine": {"cpus": os.cpu_count(),
                    "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
                    "python": platform.python_version(), "platform": platform.platform()},
        "runs": runs,
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "median_peak_pss_mb": statistics.median(r["peak_pss_mb"] for r in runs),
        "median_peak_rss_sum_mb": statistics.median(r["peak_rss_sum_mb"] for r in runs),
        "median_rerun_s": statistics.median(r["rerun_s"] for r in runs),
        "median_cpu_s": statistics.median(r["cpu_user_s"] + r["cpu_system_s"] for r in runs),
        "jobs": runs[-1]["jobs"],
        "goal": {"wall_s": 420, "peak_memory_mb": 3072, "rerun_s": 5},
    }
    write_record(args.out, result)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
