"""GPU: roundtrip's reconstruction job around a VAE, against the VAE's own forward pass.

Writes ``--items`` distinct procedural images (``scale.make_image``, ``--size`` a side) as a
roundtrip dataset, saves a diffusers ``AutoencoderKL`` of the SD/SDXL VAE architecture
(``gpu.SD_VAE_CONFIG``, seeded random weights) with ``save_pretrained`` and runs, for each
precision (``--dtypes``), batch size (``--batch-sizes``) and pipeline mode, the reconstruction
job of a (model, dataset) as the workflow runs it (:func:`roundtrip.workflow.recon_job.
run_recon_job`, model type ``diffusers_kl`` loaded from that folder, VTBench's image-quality
scorer, ``keep_reconstructions: 16``) on CUDA:

- ``overlap``: the reader and finisher threads beside the model (what a GPU job runs);
- ``serial``: everything in one thread, for comparison.

A first job on a few items loads the model and warms CUDA up; each timed job then starts from
an empty output folder with the model loaded. Per setting it records the wall time, the model's
own forward time (the per-item ``seconds`` of the job's crash journal: each batch's transfer,
encode, decode and copy back, timed by the adapter), ``efficiency`` = forward / wall, images/s
and the peak GPU memory. Writes ``benchmarks/results/gpu_pipeline.json``.

Without a CUDA device it writes nothing and exits with status 2 and one line on stderr.

Usage: ``python benchmarks/gpu_pipeline.py [--items 512] [--size 512] [--batch-sizes 8 32]
[--dtypes fp32 bf16] [--out JSON]``
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO / "src")]
NO_CUDA = "no CUDA device: benchmarks/gpu_pipeline.py needs a GPU; nothing written"
TARGETS = {"image_quality": "roundtrip.evals.vtbench.image_quality:ImageQualityScorer"}


def write_dataset(folder: Path, n: int, side: int) -> Path:
    """``n`` procedural images as a roundtrip dataset; returns the manifest."""
    from roundtrip.core.manifest import Item, write_dataset as write
    from scale import make_image

    write((Item(f"img{i:05d}", f"procedural:{i}", make_image(i, side=side)) for i in range(n)),
          folder)
    return folder / "manifest.csv"


def save_vae(folder: Path, torch) -> Path:
    """The SD VAE with seeded random weights, as a diffusers folder."""
    from diffusers import AutoencoderKL
    from gpu import SD_VAE_CONFIG

    torch.manual_seed(0)
    AutoencoderKL(**SD_VAE_CONFIG).save_pretrained(folder)
    return folder


def run_job(manifest: Path, out: Path, spec: dict, batch_size: int, load, overlap: bool,
            torch, device: str = "cuda") -> dict:
    """One reconstruction job; its wall and forward seconds."""
    from roundtrip.stages import reconstruct
    from roundtrip.workflow.recon_job import run_recon_job

    shutil.rmtree(out, ignore_errors=True)
    (out / "m").mkdir(parents=True)
    outputs = {"status": str(out / "r" / "status.csv"),
               "image_quality": str(out / "m" / "image_quality.csv"),
               "set": str(out / "m" / "set.csv")}
    decide = reconstruct.overlaps
    reconstruct.overlaps = lambda model, threads: overlap
    cuda = device == "cuda"
    try:
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        run_recon_job("sdvae", spec, manifest, outputs, {"image_quality": {}}, TARGETS,
                      device=device, loader=load, keep=16, batch_size=batch_size,
                      protocol="native", size=None)
        if cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    finally:
        reconstruct.overlaps = decide
    journal = out / "r" / "shards" / "0-of-1.journal.csv"
    rows = list(csv.DictReader(open(journal)))
    forward = sum(float(r["seconds"]) for r in rows)
    ok = sum(r["status"] == "ok" for r in rows)
    return {"items": len(rows), "ok": ok, "wall_s": round(wall, 3),
            "forward_s": round(forward, 3), "efficiency": round(forward / wall, 3),
            "images_per_s": round(len(rows) / wall, 1),
            "model_images_per_s": round(len(rows) / forward, 1) if forward else None,
            "max_memory_allocated_mb": (round(torch.cuda.max_memory_allocated() / 2**20, 1)
                                        if cuda else None)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=512)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--dtypes", nargs="+", choices=("fp32", "bf16"), default=["fp32", "bf16"])
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/gpu_pipeline.json"))
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (a check of the script)")
    args = ap.parse_args()

    import torch

    device = "cpu" if args.cpu else "cuda"
    if not args.cpu and not torch.cuda.is_available():
        print(NO_CUDA, file=sys.stderr)
        return 2
    from roundtrip.core.compute import tune_allocator
    from roundtrip.stages.reconstruct import load_model

    tune_allocator()  # as every workflow job does
    settings = []
    with tempfile.TemporaryDirectory(prefix="gpu-pipeline-") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        manifest = write_dataset(tmp / "data", args.items, args.size)
        warm = write_dataset(tmp / "warm", 16, args.size)
        print(f"dataset: {args.items} images in {time.perf_counter() - t0:.1f} s", flush=True)
        weights = save_vae(tmp / "vae", torch)
        for dtype in args.dtypes:
            spec = {"type": "diffusers_kl", "weights": str(weights), "precision": dtype}
            load = cache(lambda spec=spec: load_model("sdvae", spec, device))
            for batch in args.batch_sizes:
                run_job(warm, tmp / "out", spec, batch, load, True, torch, device)  # warm-up
                for overlap in (True, False):
                    rec = {"dtype": dtype, "batch_size": batch,
                           "pipeline": "overlap" if overlap else "serial",
                           **run_job(manifest, tmp / "out", spec, batch, load, overlap, torch,
                                     device)}
                    settings.append(rec)
                    print(json.dumps(rec), flush=True)
    if args.cpu:
        return 0
    from gpu import cuda_machine
    from records import commit, write_record

    result = {
        "benchmark": f"roundtrip reconstruction job (image-quality scorer, keep 16) around the "
                     f"SD VAE (diffusers AutoencoderKL, random weights) on {args.items} "
                     f"procedural {args.size}x{args.size} images, CUDA",
        "commit": commit(),
        "machine": cuda_machine(torch),
        "items": args.items, "size": args.size,
        "settings": settings,
    }
    write_record(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
