"""Peak memory and time of a 256^3 float32 volume through the slice-wise path.

A learned 2D model (the workflow's small continuous tokenizer, downsample 8, a few training steps
so its weights are real) reconstructs a 256^3 MONAI synthetic volume slice by slice along each
axis in turn. Each run is a fresh process, so its peak RSS (``ru_maxrss``) is its own: the goal is
under 4 GB. Reports the median of ``--repeats`` runs of time and peak RSS, and the volume PSNR/SSIM.
Writes ``benchmarks/results/medical_slicewise_memory.json``.

Usage: ``python benchmarks/medical_slicewise_memory.py [--size 256] [--repeats 3] [--batch 16]``
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def one_run(args: tuple) -> dict:
    size, batch, ckpt, axis = args
    import numpy as np
    import torch

    from roundtrip.datasets.volumes import synthetic_volume, to_unit_range
    from roundtrip.metrics.fidelity import fidelity
    from roundtrip.models import build_model
    from roundtrip.stages.volumes import reconstruct_slicewise

    torch.set_num_threads(2)
    volume, _ = synthetic_volume(size, seed=0)
    volume = to_unit_range(volume, "minmax")
    assert volume.dtype == np.float32 and volume.shape == (size,) * 3
    model = build_model("small", {"type": "small", "family": "continuous", "downsample": 8,
                                  "checkpoint": ckpt})
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    model.load()
    before = peak()  # torch, the model, the volume and its synthesis
    t0 = time.perf_counter()
    out = reconstruct_slicewise(model, volume, axis=axis, batch_size=batch)
    seconds = time.perf_counter() - t0
    after_recon = peak()
    scores = fidelity(volume, out, spatial_dims=3)  # MONAI 3D SSIM: five full-volume convolutions
    return {"axis": axis, "seconds": seconds, "peak_rss_mib_before": before,
            "peak_rss_mib_after_reconstruction": after_recon, "peak_rss_mib": peak(), **scores}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    a = ap.parse_args()
    import skimage.data
    import torch

    from roundtrip.stages.train import train_small_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        ckpt = str(Path(tmp) / "small.pt")
        train_small_tokenizer({"family": "continuous", "downsample": 8},
                              [skimage.data.astronaut(), skimage.data.camera()[..., None]
                               .repeat(3, axis=2)], ckpt, steps=20, batch_size=4, crop=64)
        ctx = mp.get_context("spawn")  # a fresh process per run: its own peak RSS
        runs = []
        for r in range(a.repeats):
            with ctx.Pool(1) as pool:
                runs.append(pool.map(one_run, [(a.size, a.batch, ckpt, r % 3)])[0])
            print(runs[-1], flush=True)
    record = {
        "volume": f"{a.size}^3 float32 (MONAI synthetic, min-max to [0, 1])",
        "model": "small continuous tokenizer, downsample 8, 3-channel input (20 training steps)",
        "batch_slices": a.batch, "repeats": a.repeats, "threads": 2,
        "seconds_median": statistics.median(r["seconds"] for r in runs),
        "peak_rss_mib_median": statistics.median(r["peak_rss_mib"] for r in runs),
        "peak_rss_mib_after_reconstruction_median": statistics.median(
            r["peak_rss_mib_after_reconstruction"] for r in runs),
        "peak_rss_mib_before_median": statistics.median(r["peak_rss_mib_before"] for r in runs),
        "peak_rss_mib_max": max(r["peak_rss_mib"] for r in runs),
        "goal_peak_mib": 4096, "runs": runs,
        "machine": f"{platform.machine()}, torch {torch.__version__}",
    }
    out = REPO / "benchmarks" / "results" / "medical_slicewise_memory.json"
    out.write_text(json.dumps(record, indent=1))
    print(json.dumps({k: v for k, v in record.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main()
