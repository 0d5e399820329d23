"""Reconstruction throughput and harness overhead (goal: overhead < 10% at 256^2, CPU).

Runs :func:`roundtrip.stages.reconstruct.reconstruct_shard` on ``--items`` 256 x 256 crops of the
bundled photographs with a small tokenizer (``type: small``, the default architecture; random
weights, since speed does not depend on them), ``--repeats`` times. The model's own
``encode``/``decode`` time is measured inside the harness; overhead = 1 - model time / total
(image decoding, protocol, batching, PNG writing, status journal). Medians go to
``benchmarks/results/reconstruct_overhead.json``.

Usage: ``python benchmarks/reconstruct_overhead.py [--items 48] [--repeats 5] [--family VQ]``
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import skimage.data
import torch

from roundtrip.core.manifest import Item, write_dataset
from roundtrip.models import build_model
from roundtrip.models.small import SmallAutoencoder, arch_args
from roundtrip.stages.reconstruct import reconstruct_shard

REPO = Path(__file__).resolve().parent.parent


def crops(n: int, side: int = 256) -> list[Item]:
    """``n`` seeded random crops of four bundled photographs, ``side`` x ``side`` or the
    photograph's extent where it is smaller (also used by ``metrics_throughput.py``)."""
    rng = np.random.default_rng(0)
    photos = [skimage.data.astronaut(), skimage.data.coffee(), skimage.data.chelsea(),
              skimage.data.rocket()]
    items = []
    for k in range(n):
        img = photos[k % len(photos)]
        h, w = min(side, img.shape[0]), min(side, img.shape[1])
        y, x = rng.integers(0, img.shape[0] - h + 1), rng.integers(0, img.shape[1] - w + 1)
        items.append(Item(f"crop{k:04d}", "skimage:crop", image=img[y:y + h, x:x + w].copy()))
    return items


def one_repeat(model, manifest: Path, batch_size: int) -> dict:
    out = Path(tempfile.mkdtemp(prefix="rt-overhead-"))
    model_time = 0.0
    inner = model.reconstruct

    def timed(x):
        nonlocal model_time
        t = time.perf_counter()
        y = inner(x)
        model_time += time.perf_counter() - t
        return y

    model.reconstruct = timed
    t0 = time.perf_counter()
    status = reconstruct_shard(model, manifest, out, batch_size=batch_size)
    total = time.perf_counter() - t0
    model.reconstruct = inner
    shutil.rmtree(out)
    assert (status["status"] == "ok").all()
    n = len(status)
    return {"total_s": total, "model_s": model_time, "overhead": 1 - model_time / total,
            "images_per_s": n / total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--family", default="VQ")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (a job's default)")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/reconstruct_overhead.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="rt-bench-"))
    write_dataset(crops(args.items), work / "ds")
    spec = {"family": args.family}
    torch.manual_seed(0)
    torch.save({"arch": arch_args(spec), "state_dict": SmallAutoencoder(**arch_args(spec)).state_dict()},
               work / "model.pt")
    model = build_model("bench", {"type": "small", **spec, "checkpoint": str(work / "model.pt")})
    model.load()
    one_repeat(model, work / "ds" / "manifest.csv", args.batch_size)  # warm-up
    runs = [one_repeat(model, work / "ds" / "manifest.csv", args.batch_size)
            for _ in range(args.repeats)]
    shutil.rmtree(work)
    result = {
        "benchmark": f"reconstruct_shard, small {args.family} tokenizer, {args.items} images "
                     f"256x256, batch {args.batch_size}, {args.threads} torch thread(s), CPU",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "torch": torch.__version__},
        "runs": [{k: round(v, 4) for k, v in r.items()} for r in runs],
        "median_images_per_s": round(statistics.median(r["images_per_s"] for r in runs), 2),
        "median_overhead": round(statistics.median(r["overhead"] for r in runs), 4),
        "goal_overhead": 0.10,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
