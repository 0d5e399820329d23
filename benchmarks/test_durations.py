"""How long the test suite takes, per run, per file and per test: `make test`'s command, run
``--runs`` times in a checkout (a fresh clone for the record), each with a JUnit report.

Writes ``benchmarks/results/test_durations.json``:

- ``runs``: per run, the wall-clock seconds of the whole pytest command (collection, worker
  start-up and the last file's tail included), and its passed / failed / skipped counts;
- ``files``: per test file, the median over the runs of the seconds its tests took (the sum of
  their setup, call and teardown times, as the JUnit report gives them), and its test count;
- ``tests``: per test id, the median seconds.

``tests/conftest.py`` reads ``files`` to start the longest files first. ``--markdown`` prints the
table of the slowest tests that docs/tests.md quotes.

Usage: python benchmarks/test_durations.py [--repo DIR] [--runs 2] [--workers 2]
                                           [--out FILE] [--markdown N]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from records import REPO, commit, write_record


def pytest_command(workers: int, junit: Path) -> list[str]:
    """The command of `make test` (Makefile: TEST_WORKERS) with a JUnit report."""
    return [sys.executable, "-m", "pytest", "-q", "-n", str(workers), "--dist", "loadfile",
            "--no-loadscope-reorder", f"--junitxml={junit}"]


def read_junit(path: Path) -> dict[str, dict]:
    """``test id -> {"seconds", "outcome"}`` from a JUnit report (outcome passed, failed,
    error or skipped)."""
    out = {}
    for case in ET.parse(path).iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        outcome = next((child.tag for child in case
                        if child.tag in ("failure", "error", "skipped")), "passed")
        out[f"{module}::{case.get('name')}"] = {"seconds": float(case.get("time", 0.0)),
                                                "outcome": outcome}
    return out


def summarize(runs: list[dict[str, dict]]) -> tuple[dict, dict]:
    """``(files, tests)``: medians over ``runs`` (each :func:`read_junit`) per file and test."""
    ids = sorted(set().union(*runs))
    tests = {i: round(statistics.median(r[i]["seconds"] for r in runs if i in r), 2)
             for i in ids}
    per_file: dict[str, list[float]] = {}
    for run in runs:
        sums: dict[str, float] = {}
        for test_id, row in run.items():
            f = test_id.split("::")[0]
            sums[f] = sums.get(f, 0.0) + row["seconds"]
        for f, s in sums.items():
            per_file.setdefault(f, []).append(s)
    files = {f: {"median_s": round(statistics.median(v), 1),
                 "tests": sum(1 for i in ids if i.split("::")[0] == f)}
             for f, v in sorted(per_file.items(), key=lambda kv: -statistics.median(kv[1]))}
    return files, tests


def markdown(record: dict, n: int) -> str:
    """The ``n`` slowest tests as a Markdown table (median seconds)."""
    rows = sorted(record["tests"].items(), key=lambda kv: -kv[1])[:n]
    lines = ["| test | seconds |", "|---|---:|"]
    lines += [f"| `{test_id}` | {seconds:.1f} |" for test_id, seconds in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to test (default: this)")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2, help="test processes (make TEST_WORKERS)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks/results/test_durations.json")
    ap.add_argument("--markdown", type=int, metavar="N",
                    help="print the N slowest tests of --out as Markdown and exit")
    args = ap.parse_args(argv)
    if args.markdown:
        import json
        print(markdown(json.loads(args.out.read_text()), args.markdown))
        return 0
    runs, reports = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.runs):
            junit = Path(tmp) / f"run{k}.xml"
            t0 = time.perf_counter()
            proc = subprocess.run(pytest_command(args.workers, junit), cwd=args.repo,
                                  env={**os.environ, "ROUNDTRIP_REQUIRE_PAPERS":
                                       os.environ.get("ROUNDTRIP_REQUIRE_PAPERS", "1")})
            wall = time.perf_counter() - t0
            report = read_junit(junit)
            reports.append(report)
            outcomes = [row["outcome"] for row in report.values()]
            runs.append({"wall_s": round(wall, 1), "exit_code": proc.returncode,
                         **{o: outcomes.count(o) for o in ("passed", "failed", "error",
                                                          "skipped")}})
            print(f"run {k + 1}: {wall:.0f} s, {runs[-1]}", flush=True)
    files, tests = summarize(reports)
    record = {"benchmark": "make test's pytest command in a checkout, with JUnit reports",
              "command": " ".join(pytest_command(args.workers, Path("junit.xml"))[1:]),
              "commit": commit(),
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()},
              "runs": runs,
              "median_wall_s": round(statistics.median(r["wall_s"] for r in runs), 1),
              "files": files, "tests": tests}
    write_record(args.out, record)
    print(f"wrote {args.out}: median {record['median_wall_s']} s over {len(runs)} runs")
    return 0 if all(r["exit_code"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
