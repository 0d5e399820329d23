"""Scale: wall time, memory and disk of the workflow against the number of images N.

For each N in ``--sizes`` (default 100 1000 10000), in a fresh copy of the repository
(``default_run.fresh_checkout``):

1. N distinct 256 x 256 RGB images are generated, seeded by ``(--seed, index)``
   (:func:`make_image`: smooth random fields at three scales, a few discs and rectangles, mild
   noise) and written as WebDataset shards of up to 1000 samples (:func:`write_shards`: one
   lossless PNG member per sample, ``{index:06d}.png``, written with ``webdataset.TarWriter``).
2. A config (:func:`scale_config`) names one ``webdataset`` set cut into ``--jobs`` shards
   (default: one per core) and two models: ``jpeg`` (quality 75, a codec) and ``small``, the
   small VQ tokenizer (``roundtrip.models.small``, default architecture) with random weights.
   ``type: small`` is always trained by the workflow, so ``small`` is the same network loaded
   through ``type: state_dict`` from a weights file written here (``scale_small.py``, copied
   to a folder on the runs' ``PYTHONPATH``): no training job runs. LPIPS and FID are switched off; the run
   reconstructs and scores PSNR/SSIM (VTBench's per-item image quality).
3. Snakemake (``--cores``, default all) runs, each timed on its own: the set's build
   (``results/datasets/scale/manifest.csv``), then each model's image quality
   (``results/metrics/{model}/scale/image_quality.csv``: its ``reconstruct_shard`` jobs, which
   reconstruct and score their items, then the job that merges their statuses and finishes
   their records), one model per run and per ``--keeps`` value (``run.keep_reconstructions``,
   default 16 then ``all``: the second run redoes the model's items, to measure the disk of
   every reconstruction kept), and finally a rerun of both targets with nothing to do
   (Snakemake's start-up and DAG). Every ``--interval`` seconds the
   process tree is sampled: the largest RSS of a single job process (Snakemake's own process
   is recorded apart) and the summed PSS of the tree (as ``default_run.py``).

One row per (model, N, keep) in ``benchmarks/results/scale.json``:

- ``wall_s``: the model's Snakemake run (start-up included, the set already built);
  ``s_per_item`` = ``wall_s / N``.
- ``forward_s_per_item``: the sum of the per-item ``seconds`` of the model's crash journals
  (``results/recon/{model}/scale/shards/*.journal.csv``: the forward pass of each batch, with
  stacking and the move to the device, shared out over its items) divided by N.
- ``efficiency``: that forward time over the seconds of all the model's reconstruction jobs
  (the ``s`` of Snakemake's ``benchmark:`` files under ``results/benchmarks``: every
  ``reconstruct_shard/{model}/scale/*.tsv`` and ``reconstruct/{model}/scale.tsv``, the merge
  job). ``shard_efficiency`` divides by the ``reconstruct_shard`` jobs alone. The rest is
  start-up (Python, torch, the model), decoding the inputs, writing the kept PNGs and the
  journals, and scoring.
- ``peak_rss_mb``: the largest RSS of one job process over the run (sampled);
  ``job_max_rss_mb``: the largest ``max_rss`` of the model's ``benchmark:`` files, a cross-check
  that a short job the sampler missed cannot hide; ``peak_pss_sum_mb``: the summed PSS.
- ``disk_mb``: disk used (allocated blocks) by ``results/recon/{model}`` after its run;
  ``results_mb``: by all of ``results/`` then.

The rows of the first ``--keeps`` value give the plot and the fit. With two sizes or more,
``fit`` holds per model a least-squares line ``wall_s = fixed_s +
per_item_s * N`` and what it predicts for 10000 items. The plot (``--out`` with ``.png``) shows
seconds per item (wall, and forward dashed) and peak job RSS against N, one line per model.

Usage: ``python benchmarks/scale.py [--sizes 100 1000 10000] [--keeps 16 all] [--keep DIR]
[--out JSON] [--jobs 2] [--cores all] [--interval 1.0] [--seed 0]``. ``--keep DIR`` keeps each size's run
folder as ``DIR/n{N}``; otherwise they go to a temporary folder that is deleted.
"""
from __future__ import annotations

import argparse
import csv
import functools
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from default_run import REPO, fresh_checkout, job_count, rule_times  # noqa: E402 - sibling
from records import commit, write_record  # noqa: E402 - sibling

sys.path.insert(1, str(REPO / "src"))  # this checkout's roundtrip, as the Snakefile's jobs use

DATASET = "scale"
SIDE = 256
PER_SHARD = 1000
CONFIG_NAME = "scale.yaml"
#: model -> kind; the specs are in :func:`scale_config`.
MODELS = {"jpeg": "codec", "small": "learned"}
#: The small tokenizer's architecture (``type: small`` keys; the rest are its defaults).
SMALL = {"family": "VQ"}


# -- the images -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _interp_matrix(side: int, knots: int) -> np.ndarray:
    """``(side, knots)`` weights of linear interpolation between ``knots`` evenly spaced control
    points: ``M @ grid @ M.T`` is a ``side x side`` bilinear upsampling of a ``knots x knots``
    grid."""
    pos = np.linspace(0.0, knots - 1, side)
    lo = np.minimum(np.floor(pos).astype(int), knots - 2)
    frac = (pos - lo).astype(np.float32)
    m = np.zeros((side, knots), np.float32)
    m[np.arange(side), lo] = 1.0 - frac
    m[np.arange(side), lo + 1] = frac
    return m


def make_image(index: int, seed: int = 0, side: int = SIDE) -> np.ndarray:
    """Image ``index`` of the set of ``seed``: ``(side, side, 3)`` uint8 RGB, the same bytes for
    the same arguments on any machine with NumPy's PCG64.

    A base colour, smooth random fields at three scales (bilinear upsamplings of 4², 9² and 33²
    Gaussian grids), 3 to 7 discs and rectangles blended over it in random colours, and
    Gaussian noise of standard deviation 3 (so that a codec has texture to lose); each image
    draws from its own generator, ``default_rng([seed, index])``.
    """
    rng = np.random.default_rng([seed, index])
    img = np.empty((side, side, 3), np.float32)
    img[:] = rng.uniform(40.0, 215.0, 3)
    for knots, amplitude in ((4, 50.0), (9, 25.0), (33, 10.0)):
        grid = rng.normal(0.0, amplitude, (knots, knots, 3)).astype(np.float32)
        m = _interp_matrix(side, knots)
        img += np.einsum("ya,abc,xb->yxc", m, grid, m, optimize=True)
    yy, xx = np.ogrid[:side, :side]
    for _ in range(int(rng.integers(3, 8))):
        colour = rng.uniform(0.0, 255.0, 3).astype(np.float32)
        cy, cx = rng.uniform(0.0, side, 2)
        r = rng.uniform(side / 20, side / 4)
        if rng.random() < 0.5:
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
        else:
            mask = (np.abs(yy - cy) < r) & (np.abs(xx - cx) < r * rng.uniform(0.3, 1.0))
        img[mask] = 0.25 * img[mask] + 0.75 * colour
    img += rng.normal(0.0, 3.0, img.shape).astype(np.float32)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def png_bytes(img: np.ndarray) -> bytes:
    """``img`` as a PNG file (zlib level 1: lossless, and quick to write)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def write_shards(folder: str | Path, n: int, seed: int = 0, per_shard: int = PER_SHARD,
                 side: int = SIDE) -> list[Path]:
    """Images ``0 .. n-1`` (:func:`make_image`) as WebDataset shards in ``folder``.

    Shard ``k`` is ``scale-{k:06d}.tar`` and holds samples ``k * per_shard`` onwards, up to
    ``per_shard`` of them; each sample is one member ``{index:06d}.png``. Member times are 0, so
    the same arguments write the same bytes.

    Returns:
        The shards, in order.
    """
    import webdataset

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    shards = []
    for k, start in enumerate(range(0, n, per_shard)):
        path = folder / f"scale-{k:06d}.tar"
        with webdataset.TarWriter(str(path), mtime=0.0) as writer:
            for i in range(start, min(n, start + per_shard)):
                writer.write({"__key__": f"{i:06d}", "png": png_bytes(make_image(i, seed, side))})
        shards.append(path)
    return shards


# -- the run ----------------------------------------------------------------------------------
def small_arch() -> dict:
    """Constructor arguments of the small tokenizer (:data:`SMALL` with its defaults)."""
    from roundtrip.models.small import arch_args

    return arch_args(SMALL)


def scale_config(shards: Path, weights: Path, jobs: int, batch_size: int = 8,
                 keep: int | str = 16) -> dict:
    """The benchmark's config: the ``scale`` set in ``jobs`` shards, ``jpeg`` and ``small``,
    ``keep`` reconstructions written per model (``run.keep_reconstructions``)."""
    arch = small_arch()
    small = {"type": "state_dict", "import_path": "scale_small:SmallModule", "kwargs": arch,
             "state_dict": str(weights), "family": arch["family"],
             "downsample": arch["downsample"], "codebook_size": arch["codebook_size"]}
    return {
        "run": {"batch_size": batch_size, "keep_reconstructions": keep},
        "datasets": {DATASET: {"type": "webdataset", "path": str(shards), "shards": jobs}},
        "models": {"jpeg": {"type": "jpeg", "quality": 75}, "small": small},
        "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False}},
    }


def model_target(model: str) -> str:
    return f"results/metrics/{model}/{DATASET}/image_quality.csv"


def _command_name(p: psutil.Process) -> str:
    return " ".join(Path(a).name for a in p.cmdline()[:3])[:80]


def sample_tree(main: psutil.Process) -> tuple[int, int, int, str]:
    """``(summed pss, main rss, largest rss of a descendant, its command)`` of a process tree."""
    pss = main_rss = job_rss = 0
    job = ""
    for p in [main, *main.children(recursive=True)]:
        try:
            info = p.memory_full_info()
            pss += info.pss
            if p.pid == main.pid:
                main_rss = info.rss
            elif info.rss > job_rss:
                job_rss, job = info.rss, _command_name(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return pss, main_rss, job_rss, job


def snakemake(work: Path, targets: list[str], cores: str, env: dict, interval: float) -> dict:
    """Run Snakemake on :data:`CONFIG_NAME` for ``targets`` in ``work``; with ``interval`` > 0,
    sample the memory of its process tree.

    Raises:
        RuntimeError: Snakemake failed (the end of its output attached).
    """
    # targets first: --configfile takes every argument after it
    cmd = [sys.executable, "-m", "snakemake", *targets, "--cores", cores,
           "--configfile", CONFIG_NAME]
    log = tempfile.TemporaryFile()  # a pipe would fill up and block snakemake
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT, env=env)
    main = psutil.Process(proc.pid)
    peak = {"pss": 0, "main": 0, "job": 0, "job_name": ""}
    while interval and proc.poll() is None:
        pss, main_rss, job_rss, job = sample_tree(main)
        peak["pss"] = max(peak["pss"], pss)
        peak["main"] = max(peak["main"], main_rss)
        if job_rss > peak["job"]:
            peak["job"], peak["job_name"] = job_rss, job
        time.sleep(interval)
    proc.wait()
    wall = time.perf_counter() - t0
    log.seek(0)
    out = log.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake {' '.join(targets)} failed:\n{out[-3000:]}")
    mb = 2 ** 20
    return {"wall_s": round(wall, 2), "jobs": job_count(out),
            "nothing_to_do": "Nothing to be done" in out,
            "peak_rss_mb": round(peak["job"] / mb, 1), "largest_process": peak["job_name"],
            "snakemake_rss_mb": round(peak["main"] / mb, 1),
            "peak_pss_sum_mb": round(peak["pss"] / mb, 1)}


def disk_mb(path: Path) -> float:
    """Disk space the files under ``path`` take (allocated blocks, as ``du``), in MiB."""
    if not path.exists():
        return 0.0
    return round(sum(f.lstat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def _benchmark_rows(files: list[Path]) -> list[dict]:
    return [list(csv.DictReader(open(f), delimiter="\t"))[-1] for f in files if f.is_file()]


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def model_jobs(work: Path, model: str) -> dict:
    """Seconds and ``max_rss`` of a model's reconstruction jobs, from their ``benchmark:`` files."""
    bench = work / "results/benchmarks"
    shard = _benchmark_rows(sorted((bench / "reconstruct_shard" / model / DATASET).glob("*.tsv")))
    merge = _benchmark_rows([bench / "reconstruct" / model / f"{DATASET}.tsv"])
    return {"reconstruct_shard_s": round(sum(_number(r["s"]) for r in shard), 2),
            "reconstruct_s": round(sum(_number(r["s"]) for r in merge), 2),
            "jobs": len(shard) + len(merge),
            "job_max_rss_mb": round(max((_number(r.get("max_rss")) for r in shard + merge),
                                        default=0.0), 1)}


def forward_seconds(work: Path, model: str) -> tuple[float, int]:
    """``(summed per-item seconds, ok items)`` of a model's crash journals (an item journaled
    twice counts once: its last record)."""
    last = {}
    for f in sorted((work / "results/recon" / model / DATASET / "shards").glob("*.journal.csv")):
        for row in csv.DictReader(open(f, newline="")):
            last[row["item_id"]] = row
    return (sum(float(r["seconds"]) for r in last.values()),
            sum(r["status"] == "ok" for r in last.values()))


def mean_psnr(work: Path, model: str) -> float | None:
    """Mean finite PSNR of the model's items (a sanity check of the reconstructions)."""
    import pandas as pd

    psnr = pd.read_csv(work / model_target(model))["psnr"]
    psnr = psnr[np.isfinite(psnr)]
    return round(float(psnr.mean()), 2) if len(psnr) else None


def run_size(n: int, work: Path, args) -> tuple[dict, list[dict]]:
    """One size in a fresh copy of the repository at ``work``: ``(size record, model rows)``."""
    import yaml
    from scale_small import save_random

    work.mkdir(parents=True)
    fresh_checkout(work)
    data = work / "scale_data"
    t0 = time.perf_counter()
    shards = write_shards(data / "shards", n, args.seed)
    generate_s = time.perf_counter() - t0
    weights = save_random(data / "small_vq.pt", small_arch(), seed=args.seed)
    config = scale_config(data / "shards", weights, args.jobs, args.batch_size,
                          _keep_value(args.keeps[0]))
    (work / CONFIG_NAME).write_text(yaml.safe_dump(config, sort_keys=False))
    # the jobs import scale_small from a folder of its own (benchmarks/ holds other modules)
    (data / "python").mkdir()
    shutil.copy(work / "benchmarks/scale_small.py", data / "python")
    env = dict(os.environ)
    # the copy's own code first (as default_run.py), then scale_small
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(work / "src"), str(data / "python"), env.get("PYTHONPATH")) if p)

    build = snakemake(work, [f"results/datasets/{DATASET}/manifest.csv"], args.cores, env,
                      args.interval)
    print(f"N={n}: generated in {generate_s:.1f} s; set built in {build['wall_s']} s", flush=True)
    rows = []
    for model, kind in MODELS.items():
        for keep in args.keeps:  # the same set and model, keeping another number each time
            forget_model(work, model)  # each run does all of the model's work again
            config["run"]["keep_reconstructions"] = _keep_value(keep)
            (work / CONFIG_NAME).write_text(yaml.safe_dump(config, sort_keys=False))
            rows.append(model_row(work, model, kind, n, keep, env, args))
    rerun = snakemake(work, [model_target(m) for m in MODELS], args.cores, env, 0.0)
    size = {
        "n_items": n, "generate_s": round(generate_s, 2), "shards": len(shards),
        "shards_mb": disk_mb(data / "shards"),
        "build_wall_s": build["wall_s"], "build_peak_rss_mb": build["peak_rss_mb"],
        "dataset_mb": disk_mb(work / f"results/datasets/{DATASET}"),
        "results_mb": disk_mb(work / "results"),
        "rerun_s": rerun["wall_s"], "rerun_nothing_to_do": rerun["nothing_to_do"],
        "rules": rule_times(work),
    }
    return size, rows


def forget_model(work: Path, model: str) -> None:
    """Delete the model's reconstructions, metrics and job records of the set, so that its next
    run recomputes everything (a changed ``keep_reconstructions`` alone would redo only the
    items whose files are missing)."""
    for path in (work / "results/recon" / model / DATASET, work / "results/metrics" / model,
                 work / "results/benchmarks/reconstruct_shard" / model,
                 work / "results/benchmarks/reconstruct" / model):
        shutil.rmtree(path, ignore_errors=True)


def _keep_value(keep: str) -> int | str:
    return keep if keep in ("all", "none") else int(keep)


def model_row(work: Path, model: str, kind: str, n: int, keep: str, env: dict, args) -> dict:
    """One model's run on the built set, keeping ``keep`` reconstructions: its row."""
    run = snakemake(work, [model_target(model)], args.cores, env, args.interval)
    jobs = model_jobs(work, model)
    forward, ok = forward_seconds(work, model)
    job_s = jobs["reconstruct_shard_s"] + jobs["reconstruct_s"]
    row = {
        "model": model, "kind": kind, "n_items": n, "keep": keep,
        "wall_s": run["wall_s"],
        "s_per_item": round(run["wall_s"] / n, 4),
        "forward_s_per_item": round(forward / n, 4),
        "efficiency": round(forward / job_s, 3) if job_s else None,
        "peak_rss_mb": run["peak_rss_mb"],
        "disk_mb": disk_mb(work / "results/recon" / model),
        "shard_efficiency": (round(forward / jobs["reconstruct_shard_s"], 3)
                             if jobs["reconstruct_shard_s"] else None),
        "forward_s": round(forward, 2),
        "items_ok": ok,
        **jobs,
        "snakemake_jobs": run["jobs"],
        "largest_process": run["largest_process"],
        "snakemake_rss_mb": run["snakemake_rss_mb"],
        "peak_pss_sum_mb": run["peak_pss_sum_mb"],
        "results_mb": disk_mb(work / "results"),
        "mean_psnr": mean_psnr(work, model),
    }
    print(f"N={n} {model} keep={keep}: " + json.dumps({k: row[k] for k in (
        "wall_s", "s_per_item", "forward_s_per_item", "efficiency", "peak_rss_mb",
        "job_max_rss_mb", "disk_mb")}), flush=True)
    return row


def fit(rows: list[dict], at: int = 10000) -> dict:
    """Per model, the least-squares line ``wall_s = fixed_s + per_item_s * N`` over the sizes
    run, and its prediction at ``at`` items (two sizes or more)."""
    out = {}
    for model in MODELS:
        pts = [(r["n_items"], r["wall_s"]) for r in rows
               if r["model"] == model and r["keep"] == rows[0]["keep"]]
        if len({n for n, _ in pts}) < 2:
            continue
        slope, intercept = np.polyfit([n for n, _ in pts], [w for _, w in pts], 1)
        out[model] = {"fixed_s": round(float(intercept), 1), "per_item_s": round(float(slope), 4),
                      f"predicted_wall_s_{at}": round(float(intercept + slope * at))}
    return out


def plot(result: dict, path: Path) -> None:
    """Seconds per item (wall; forward dashed) and peak job RSS against N, one line per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for k, model in enumerate(MODELS):
        rows = sorted((r for r in result["rows"]
                       if r["model"] == model and r["keep"] == result["rows"][0]["keep"]),
                      key=lambda r: r["n_items"])
        n = [r["n_items"] for r in rows]
        colour = f"C{k}"
        left.plot(n, [r["s_per_item"] for r in rows], "o-", color=colour, label=f"{model} (wall)")
        left.plot(n, [r["forward_s_per_item"] for r in rows], "s--", color=colour,
                  label=f"{model} (forward)")
        right.plot(n, [r["peak_rss_mb"] for r in rows], "o-", color=colour, label=model)
    left.set(xscale="log", yscale="log", xlabel="images (N)", ylabel="seconds per image",
             title="Time per image")
    right.set(xscale="log", xlabel="images (N)", ylabel="MiB",
              title="Peak RSS of one job process")
    right.set_ylim(bottom=0)
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    m = result["machine"]
    fig.suptitle(f"roundtrip at scale: 256² images, {m['cpus']} cores, {m['device']}, "
                 f"{result['commit']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def machine() -> dict:
    import torch

    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    return {"cpus": os.cpu_count(), "cpu": cpu,
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
            "python": platform.python_version(), "torch": torch.__version__,
            "platform": platform.platform()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="datasets.scale.shards: reconstruction jobs per model (default: cores)")
    ap.add_argument("--cores", default="all")
    ap.add_argument("--batch-size", type=int, default=8, help="run.batch_size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--interval", type=float, default=1.0,
                    help="seconds between memory samples (each costs CPU the run then lacks)")
    ap.add_argument("--keep", default=None, help="keep each size's run folder as DIR/n{N}")
    ap.add_argument("--keeps", nargs="+", default=["16", "all"],
                    help="run.keep_reconstructions of each model's runs, in turn (the first "
                         "gives the timings plotted and fitted)")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/scale.json"),
                    help="the JSON record; the plot goes beside it with .png")
    args = ap.parse_args()
    if args.keep:
        taken = [str(Path(args.keep) / f"n{n}") for n in args.sizes
                 if (Path(args.keep) / f"n{n}").exists()]
        if taken:
            ap.error(f"--keep: {', '.join(taken)} exist; the runs would not start fresh")
    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="roundtrip-scale-")
    root = Path(args.keep or tmp.name)
    sizes, rows = [], []
    try:
        for n in args.sizes:
            size, size_rows = run_size(n, root / f"n{n}", args)
            sizes.append(size)
            rows += size_rows
    finally:
        if tmp is not None:
            tmp.cleanup()
    result = {
        "benchmark": f"{DATASET}: N generated 256x256 PNG images in WebDataset shards, "
                     f"datasets.{DATASET}.shards={args.jobs}, run.batch_size={args.batch_size}, "
                     f"run.keep_reconstructions={' then '.join(args.keeps)}, "
                     f"snakemake --cores {args.cores}, one run per model (see the docstring)",
        "machine": machine(),
        "commit": commit(),
        "rows": rows,
        "sizes": sizes,
        "fit": fit(rows),
    }
    write_record(args.out, result)
    plot(result, Path(args.out).with_suffix(".png"))
    print(json.dumps({k: result[k] for k in ("rows", "fit")}, indent=2))


if __name__ == "__main__":
    main()
