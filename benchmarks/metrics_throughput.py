"""PSNR+SSIM throughput vs a per-image scikit-image loop, and memory vs item count.

Scores ``--items`` (reference, JPEG-q50) pairs of 512 x 512 crops of the bundled photographs
twice: with :func:`roundtrip.evals.vtbench.image_quality.score_image_quality` (streams pairs from disk, separable
Gaussian SSIM in torch) and with a loop over ``skimage.metrics.peak_signal_noise_ratio`` and
``structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False)`` on the
same files. Checks the values agree within 1e-4, reports images/s (median of ``--repeats``),
and the peak RSS growth of scoring N vs 4N items (streaming: no growth with N).
Writes ``benchmarks/results/metrics_throughput_{threads}t.json``.

Usage: ``python benchmarks/metrics_throughput.py [--items 24] [--repeats 5]``
"""
from __future__ import annotations

import argparse
import io
import json
import multiprocessing as mp
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image
from reconstruct_overhead import crops  # benchmarks/ is on sys.path when run as a script
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from roundtrip.core.imaging import read_image, to_unit, write_png
from roundtrip.core.manifest import write_dataset
from roundtrip.evals.vtbench.image_quality import score_image_quality

REPO = Path(__file__).resolve().parent.parent


def make_run(root: Path, n: int, side: int = 512) -> tuple[Path, Path, Path]:
    items = crops(n, side)
    write_dataset(items, root / "ds")
    recon = root / "recon"
    recon.mkdir()
    rows = []
    for it in items:
        buf = io.BytesIO()
        Image.fromarray(it.image).save(buf, format="JPEG", quality=50)
        write_png(recon / f"{it.item_id}.png", np.asarray(Image.open(buf).convert("RGB")))
        rows.append({"item_id": it.item_id, "status": "ok", "reason": "", "seconds": 0,
                     "reference": ""})
    pd.DataFrame(rows).to_csv(recon / "status.csv", index=False)
    return root / "ds" / "manifest.csv", recon / "status.csv", recon


def skimage_loop(manifest: Path, recon: Path) -> pd.DataFrame:
    m = pd.read_csv(manifest)
    rows = []
    for item_id, path in zip(m["item_id"], m["path"]):
        x = to_unit(read_image(manifest.parent / path)).astype(np.float64)
        y = to_unit(read_image(recon / f"{item_id}.png")).astype(np.float64)
        rows.append({"item_id": item_id,
                     "psnr": peak_signal_noise_ratio(x, y, data_range=1.0),
                     "ssim": structural_similarity(x, y, data_range=1.0, channel_axis=-1,
                                                   gaussian_weights=True, sigma=1.5,
                                                   use_sample_covariance=False)})
    return pd.DataFrame(rows)


def _peak_rss_child(args, queue):
    import resource
    manifest, status, recon = args
    score_image_quality(manifest, status, recon)
    queue.put(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # MiB


def peak_rss(n: int) -> float:
    """Peak RSS (MiB) of a fresh process scoring n items."""
    with tempfile.TemporaryDirectory() as tmp:
        args = make_run(Path(tmp), n)
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=_peak_rss_child, args=(args, q))
        p.start()
        value = q.get()
        p.join()
        return value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads for roundtrip (scikit-image is single-threaded)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        manifest, status, recon = make_run(Path(tmp), args.items)
        ours_t, ref_t = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            ours = score_image_quality(manifest, status, recon)
            ours_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            ref = skimage_loop(manifest, recon)
            ref_t.append(time.perf_counter() - t)
    diff_psnr = float(np.max(np.abs(ours["psnr"].to_numpy() - ref["psnr"].to_numpy())))
    diff_ssim = float(np.max(np.abs(ours["ssim"].to_numpy() - ref["ssim"].to_numpy())))
    rss = {n: peak_rss(n) for n in (args.items, 4 * args.items)}
    result = {
        "items": args.items, "size": "512x512 RGB (JPEG q50 reconstructions)",
        "repeats": args.repeats, "threads": args.threads,
        "roundtrip_s_median": statistics.median(ours_t),
        "skimage_s_median": statistics.median(ref_t),
        "roundtrip_img_per_s": args.items / statistics.median(ours_t),
        "skimage_img_per_s": args.items / statistics.median(ref_t),
        "speedup": statistics.median(ref_t) / statistics.median(ours_t),
        "max_abs_diff_psnr": diff_psnr, "max_abs_diff_ssim": diff_ssim,
        "peak_rss_mib": {str(k): round(v, 1) for k, v in rss.items()},
        "machine": f"{platform.processor() or platform.machine()}, torch {torch.__version__}",
    }
    out = REPO / "benchmarks" / "results" / f"metrics_throughput_{args.threads}t.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    assert diff_psnr < 1e-4 and diff_ssim < 1e-4, "values disagree"


if __name__ == "__main__":
    main()
