"""Rendering throughput of the XeLaTeX pipeline (goal: at least 5 items/s, short questions).

Renders ``--items`` short multiple-choice questions (the built-in sample, cycled, 16 pt Arial,
800 px) with :func:`roundtrip.render.render_items`, ``--repeats`` times, and reports items/s
(median). For contrast, renders ``--single`` of them one XeLaTeX run per item (``batch_size=1``,
one process), the naive way. Also times one dense 1024 x 1024 abstract canvas.
Writes ``benchmarks/results/render_throughput.json``.

Usage: ``python benchmarks/render_throughput.py [--items 200] [--repeats 5] [--single 10]``
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

from roundtrip.datasets.rendered.abstracts import AbstractsSpec, build_abstracts
from roundtrip.datasets.rendered.questions import load_questions, prompt_text
from roundtrip.render import RenderItem, RenderSettings, render_items

REPO = Path(__file__).resolve().parent.parent


def questions(n: int) -> list[RenderItem]:
    qs = [q for q in load_questions("builtin") if isinstance(q, dict)]
    return [RenderItem(f"q{i}", prompt_text(qs[i % len(qs)]), style="arial", size_pt=16)
            for i in range(n)]


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--single", type=int, default=10)
    args = ap.parse_args()
    items = questions(args.items)
    batch = RenderSettings()
    batched = [timed(lambda: render_items(items, batch)) for _ in range(args.repeats)]
    single = RenderSettings(batch_size=1, jobs=1)
    one_each = [timed(lambda: render_items(items[:args.single], single))
                for _ in range(max(1, args.repeats // 2))]
    canvas = [timed(lambda: build_abstracts(AbstractsSpec(count=1), RenderSettings()))
              for _ in range(3)]
    xelatex = subprocess.run(["xelatex", "--version"], capture_output=True, text=True).stdout
    result = {
        "items": args.items, "repeats": args.repeats,
        "batched_s": batched, "batched_items_per_s_median": args.items / statistics.median(batched),
        "one_run_per_item_items_per_s_median": args.single / statistics.median(one_each),
        "abstract_canvas_s_median": statistics.median(canvas),
        "settings": {"jobs": batch.jobs, "batch_size": batch.batch_size,
                     "supersample": batch.supersample},
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                   f"{xelatex.splitlines()[0] if xelatex else 'xelatex ?'}",
    }
    out = REPO / "benchmarks/results/render_throughput.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
