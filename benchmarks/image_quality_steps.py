"""Where the CPU time of scoring one pair goes: each step of VTBench's image-quality scorer,
one thread, now and as the code before OpenCV did it.

The pairs are :mod:`metrics_vs_released`'s (``make_pairs``: crops of scikit-image's
photographs and page, PNG at zlib's default level as originals, through JPEG q30-90 and PNG at
zlib level 1 as reconstructions), ``--pairs`` of them at ``--side``; with ``--work`` the same
folder as that benchmark's ``--work`` (its pairs are reused, not remade).

For each pair, every step is timed ``--repeats`` times in this process
(``torch.set_num_threads(1)``, imports and the first pair not timed) and its fastest time kept
(what the step costs, not what the machine's other load added); the record holds, per step,
the median over the pairs in ms, and the sum:

- ``decode_original``, ``decode_reconstruction``: :func:`roundtrip.core.imaging.decode_image`
  of the file's bytes (imagecodecs' decoding of a plain 8-bit RGB PNG); ``before``: the same with
  that path off (Pillow's decoding, the code before);
- ``to_unit``: both images to float32 in [0, 1];
- ``mse``: :func:`~roundtrip.metrics.image_quality.mse_levels` (exact on the 8-bit levels);
  ``before``: :func:`~roundtrip.metrics.image_quality.mse` of the float32 images in float64;
- ``ssim_full_size``: :func:`~roundtrip.metrics.image_quality.ssim_conventions` of the pair
  under ``VALID`` in float32 (``ssim``: the moments filtered by OpenCV; with ``to_unit``, what
  ``metrics.ssim.scored_size: false`` saves); ``before``: the PyTorch path
  (``_ssim_conventions_torch``);
- ``views_256``: both images resized to 256 x 256 as the released evaluator does
  (:func:`~roundtrip.evals.vtbench.released.evaluated_view`, Pillow's bilinear);
- ``released_psnr``, ``released_ssim``: the released evaluator's PSNR terms and its SSIM at
  every batch range on the 256 px views (``ReleasedPSNR.level_stats``, ``ssim_at_ranges``, whose
  first range is ``ssim_pair_range``);
- ``extremes``: the originals' value range at both sizes;
- ``scorer_total``: ``_score_item`` on the decoded pair, all of the above but decoding, whose
  difference from the steps' sum is the scorer's own overhead;
- ``part_*``, parts of the above, not in the sum: ``part_released_ssim_moments``, the filtering
  inside ``released_ssim`` (torchmetrics' convolution; the rest is the maps at each batch range),
  and ``part_scorer_total_scored_size_ssim_off``, ``scorer_total`` without the SSIM at the
  scored size.

Usage: ``python benchmarks/image_quality_steps.py [--side 1024] [--pairs 32] [--repeats 3]
[--work DIR] [--out JSON]``; writes ``benchmarks/results/image_quality_steps.json``.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from records import commit, write_record  # benchmarks/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parent.parent
RESULT = REPO / "benchmarks" / "results" / "image_quality_steps.json"


def fastest(fn, repeats: int) -> float:
    """The fastest of ``repeats`` calls of ``fn``, in ms."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return 1000 * best


def steps(original: bytes, reconstruction: bytes, repeats: int) -> dict[str, float]:
    """Every step's fastest time in ms for one pair (see the module docstring)."""
    import torch

    from roundtrip.core import imaging
    from roundtrip.evals.vtbench import image_quality as scorer
    from roundtrip.evals.vtbench.released import (
        ReleasedPSNR,
        _ssim_moments,
        as_tensor,
        evaluated_view,
        ssim_at_ranges,
        view_extremes,
    )
    from roundtrip.metrics.image_quality import (
        VALID,
        _ssim_conventions_torch,
        mse,
        mse_levels,
        ssim_conventions,
    )

    a = imaging.decode_image(original, "original.png")
    b = imaging.decode_image(reconstruction, "reconstruction.png")
    x, y = imaging.to_unit(a), imaging.to_unit(b)
    tx, ty = (torch.from_numpy(v).permute(2, 0, 1)[None] for v in (x, y))
    va, vb = evaluated_view(a), evaluated_view(b)
    conventions = [VALID]

    def pillow(data: bytes):
        plain = imaging._plain_rgb8_png
        imaging._plain_rgb8_png = lambda _: False
        try:
            return imaging.decode_image(data)
        finally:
            imaging._plain_rgb8_png = plain

    out = {
        "decode_original": fastest(lambda: imaging.decode_image(original), repeats),
        "decode_reconstruction": fastest(lambda: imaging.decode_image(reconstruction), repeats),
        "to_unit": fastest(lambda: (imaging.to_unit(a), imaging.to_unit(b)), repeats),
        "mse": fastest(lambda: mse_levels(a, b), repeats),
        "ssim_full_size": fastest(lambda: ssim_conventions(ty, tx, conventions,
                                                           dtype=torch.float32), repeats),
        "views_256": fastest(lambda: (evaluated_view(a), evaluated_view(b)), repeats),
        "released_psnr": fastest(lambda: ReleasedPSNR.level_stats(vb, va), repeats),
        "released_ssim": fastest(lambda: ssim_at_ranges(vb, va), repeats),
        "extremes": fastest(lambda: (a.min(), a.max(), view_extremes(vb, va)), repeats),
        "scorer_total": fastest(lambda: scorer._score_item(a, b), repeats),
        # parts of steps above, not added to the sum
        "part_released_ssim_moments": fastest(lambda: _ssim_moments(as_tensor(vb), as_tensor(va)),
                                              repeats),
        "part_scorer_total_scored_size_ssim_off": fastest(
            lambda: scorer._score_item(a, b, full_ssim=False), repeats),
    }
    before = {
        "decode_original": fastest(lambda: pillow(original), repeats),
        "decode_reconstruction": fastest(lambda: pillow(reconstruction), repeats),
        "mse": fastest(lambda: mse(x, y), repeats),
        "ssim_full_size": fastest(lambda: _ssim_conventions_torch(ty, tx, conventions, 1.5,
                                                                  torch.float32), repeats),
    }
    return out | {f"before_{k}": v for k, v in before.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=1024)
    ap.add_argument("--pairs", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", help="metrics_vs_released.py's --work folder (pairs reused)")
    ap.add_argument("--out", default=str(RESULT))
    args = ap.parse_args()

    import torch

    from metrics_vs_released import make_pairs
    from roundtrip.core.compute import tune_allocator

    torch.set_num_threads(1)
    tune_allocator()
    work = Path(args.work or tempfile.mkdtemp(prefix="rt-iq-steps-"))
    # seeded as metrics_vs_released seeds a side: its first pairs, made here or reused
    data = make_pairs(work / f"pairs_{args.side}", args.pairs, args.side, seed=args.side)
    ids = sorted(p.stem for p in Path(data["recon"]).glob("*.png"))[:args.pairs]
    load_start = [round(v, 2) for v in os.getloadavg()]
    per_pair = []
    for k, item_id in enumerate([ids[0]] + ids):
        original = (Path(data["originals"]) / f"{item_id}.png").read_bytes()
        reconstruction = (Path(data["recon"]) / f"{item_id}.png").read_bytes()
        result = steps(original, reconstruction, args.repeats)
        if k:  # the first pair twice: its first run pays for the libraries' first calls
            per_pair.append(result)
    medians = {name: round(statistics.median(r[name] for r in per_pair), 2)
               for name in per_pair[0]}
    now = [n for n in medians if not n.startswith(("before_", "part_")) and n != "scorer_total"]
    record = {
        "benchmark": "image_quality_steps", "commit": commit(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                   f"torch {torch.__version__}",
        "side": args.side, "pairs": len(per_pair), "repeats": args.repeats, "threads": 1,
        "load_average_at_start": load_start,
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
        "median_ms": medians,
        "sum_of_steps_ms": round(sum(medians[n] for n in now), 1),
        "decode_and_score_ms": round(medians["decode_original"]
                                     + medians["decode_reconstruction"]
                                     + medians["scorer_total"], 1),
        "before_ms": {n: medians[f"before_{n}"] for n in
                      ("decode_original", "decode_reconstruction", "mse", "ssim_full_size")},
    }
    write_record(args.out, record)
    print(record)


if __name__ == "__main__":
    main()
