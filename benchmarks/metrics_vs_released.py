"""PSNR and SSIM scoring side by side with VTBench's released evaluator: speed and values.

The released evaluator is the VTBench authors' ``evaluations/evaluate_images.py`` (its
``evaluate()``), github.com/xingjianleng/VTBench at commit 01368b3
(https://github.com/xingjianleng/VTBench/tree/01368b3). It is not part of roundtrip; get it,
and the torchmetrics its ``environment.yml`` pins, into folders of their own::

    git clone https://github.com/xingjianleng/VTBench && git -C VTBench checkout 01368b3
    pip install --target released-site --no-deps torchmetrics==1.7.1 Levenshtein==0.27.1

(``evaluate_images.py`` imports ``character_error_rate.py``, which imports Levenshtein; torch,
torchvision, transformers, pandas, tqdm and Pillow come from roundtrip's environment), then::

    python benchmarks/metrics_vs_released.py --released VTBench --released-site released-site

Without ``--released`` (or with a folder that lacks ``evaluations/evaluate_images.py``) the
benchmark says so and measures roundtrip alone.

The pairs: ``--pairs-256`` pairs at 256 x 256 and ``--pairs-1024`` at 1024 x 1024, seeded crops
of scikit-image's photographs and scanned page (Lanczos-resized to the side, as the ``model_size``
and ``fixed_1024`` protocols resize) as originals, PNG at zlib's default level as a dataset's
images; each through JPEG at a seeded quality of 30 to 90 as its reconstruction, PNG at
zlib level 1 as roundtrip writes them.

What is timed, in a fresh process each (imports not timed), ``torch.set_num_threads(threads)``:

- ``roundtrip``: :func:`roundtrip.evals.vtbench.image_quality.score_image_quality_files` on the
  dataset folder and the reconstructions (every column of ``image_quality.csv`` and ``set.csv``:
  the released evaluator's PSNR and SSIM at 256 x 256, and roundtrip's PSNR, MSE, SSIM and the
  per-pair-range SSIM at the scored size), with glibc's allocator tuned as in every workflow
  job (:func:`roundtrip.core.compute.tune_allocator`);
- ``released``: ``evaluate()`` with ``--metrics psnr ssim --batch_size 16 --image_size 256``
  and ``--num_workers 0`` (in the process, as roundtrip);
- ``released_w8``: the same with ``--num_workers 8`` (``examples/submit.sh``), at more than one
  thread only;
- ``baseline`` (with ``--baseline-src``, at one thread): roundtrip's scoring from another
  source folder (e.g. ``git archive`` of an earlier commit's ``src``), to compare versions on
  the same load and their values column by column.

PNG decoding is included in every time. Each (size, threads) runs every contestant once per run,
``--runs`` runs interleaved (run 1 of every setting, then run 2, ...); the record holds each
wall time, the median and pairs/s (one pair = an original and its reconstruction), the CPU
seconds (the process and its ended children: the DataLoader workers) and their median per
pair, which a busy machine inflates less than the wall time, the ratios of roundtrip's pairs/s
to the others', the load average at each start, and the values: the
released evaluator's PSNR and SSIM against roundtrip's ``psnr_vtbench`` and ``ssim_vtbench``,
whether roundtrip's per-item rows were the same bytes in every run and at every thread count,
and the largest difference of each column from the baseline's rows and, with ``--reference``,
from per-item rows an earlier version wrote (``--save-items``).

Writes ``benchmarks/results/metrics_vs_released.json`` (``--out``) after every setting
(``"complete": false`` until the last).

Usage: ``python benchmarks/metrics_vs_released.py [--released DIR --released-site DIR]
[--pairs-256 512] [--pairs-1024 128] [--threads 1 2] [--runs 3] [--baseline-src DIR]
[--save-items DIR] [--reference DIR] [--work DIR] [--out JSON]``
"""
from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from records import commit, write_record  # benchmarks/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parent.parent
RESULT = REPO / "benchmarks" / "results" / "metrics_vs_released.json"
#: The released evaluator's commit this benchmark was written against.
RELEASED_COMMIT = "01368b3"
#: The contestant that scores what the released evaluator scores: every column but roundtrip's
#: SSIM at the scored size (``metrics.ssim.scored_size: false``).
LEAN = "roundtrip_scored_size_ssim_off"
#: Columns compared with ``--reference`` (every number of ``image_quality.csv``).
COLUMNS = ["psnr", "ssim", "mse", "n_values", "ssim_vtbench", "ssim_pair_range", "ref_min",
           "ref_max", "mse_vtbench", "n_values_vtbench", "ref_min_vtbench", "ref_max_vtbench",
           "height", "width"]


def make_pairs(root: Path, n: int, side: int, seed: int) -> dict[str, str]:
    """``n`` seeded pairs at ``side`` x ``side`` under ``root`` (see the module docstring);
    returns the paths the contestants read."""
    import numpy as np
    import pandas as pd
    import skimage.data
    from PIL import Image

    from roundtrip.core.imaging import FAST_PNG, write_png
    from roundtrip.core.manifest import Item, write_dataset

    paths = {"manifest": root / "ds" / "manifest.csv", "originals": root / "ds" / "images",
             "status": root / "status.csv", "recon": root / "recon"}
    if paths["status"].exists():
        return {k: str(v) for k, v in paths.items()}
    rng = np.random.default_rng(seed)
    sources = [skimage.data.astronaut(), skimage.data.coffee(), skimage.data.chelsea(),
               skimage.data.rocket(), np.repeat(skimage.data.page()[..., None], 3, axis=2),
               np.repeat(skimage.data.camera()[..., None], 3, axis=2)]
    items, recons = [], {}
    for k in range(n):
        img = sources[k % len(sources)]
        h = int(rng.integers(img.shape[0] // 2, img.shape[0] + 1))
        w = int(rng.integers(img.shape[1] // 2, img.shape[1] + 1))
        y0, x0 = rng.integers(0, img.shape[0] - h + 1), rng.integers(0, img.shape[1] - w + 1)
        crop = img[y0:y0 + h, x0:x0 + w]
        x = np.asarray(Image.fromarray(crop).resize((side, side), Image.LANCZOS))
        buf = io.BytesIO()
        Image.fromarray(x).save(buf, format="JPEG", quality=int(rng.integers(30, 91)))
        item_id = f"p{k:04d}"
        items.append(Item(item_id, "generated", image=x))
        recons[item_id] = np.asarray(Image.open(buf).convert("RGB"))
    write_dataset(items, root / "ds")
    paths["recon"].mkdir(parents=True)
    for item_id, y in recons.items():
        write_png(paths["recon"] / f"{item_id}.png", y, FAST_PNG)
    pd.DataFrame({"item_id": list(recons), "status": "ok", "reason": "", "seconds": 0.0,
                  "reference": ""}).to_csv(paths["status"], index=False)
    return {k: str(v) for k, v in paths.items()}


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else the architecture: ratios against the
    released evaluator differ between CPUs (its CPU time per pair more than roundtrip's)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({platform.machine()})"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its children that ended (the
    released evaluator's DataLoader workers)."""
    import resource
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def child(spec: dict) -> dict:
    """One timed contestant, in this (fresh) process: ``spec`` from :func:`run_child`."""
    if spec["contestant"].startswith("released"):
        sys.path[:0] = [spec["released_site"], str(Path(spec["released"]) / "evaluations")]
    import torch
    torch.set_num_threads(spec["threads"])
    data = spec["data"]
    if spec["contestant"].startswith("released"):
        import pandas as pd
        import torchmetrics
        import evaluate_images  # the released evaluator (imports transformers: not timed)

        out = Path(spec["out"])
        out.mkdir(parents=True, exist_ok=True)
        args = argparse.Namespace(original_dir=data["originals"], reconstructed_dir=data["recon"],
                                  output_dir=str(out), metrics=["psnr", "ssim"], batch_size=16,
                                  image_size=256, num_workers=spec["workers"])
        start, cpu = time.perf_counter(), cpu_seconds()
        evaluate_images.evaluate(args)
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        metrics = pd.read_csv(out / "metrics.csv")
        return {"seconds": seconds, "cpu_s": cpu, "psnr": float(metrics["psnr"][0]),
                "ssim": float(metrics["ssim"][0]), "torchmetrics": torchmetrics.__version__}
    from roundtrip.core.compute import tune_allocator
    from roundtrip.evals.vtbench.image_quality import score_image_quality_files

    tune_allocator()
    start, cpu = time.perf_counter(), cpu_seconds()
    # the keyword only where it is off: a --baseline-src from before the option has no keyword
    lean = {"ssim_scored_size": False} if spec["contestant"] == LEAN else {}
    per_item, set_rows = score_image_quality_files(data["manifest"], data["status"], data["recon"],
                                                   **lean)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    Path(spec["out"]).parent.mkdir(parents=True, exist_ok=True)
    per_item.to_csv(spec["out"], index=False)
    values = set_rows.set_index("metric")["value"]
    return {"seconds": seconds, "cpu_s": cpu, "psnr_vtbench": float(values["psnr_vtbench"]),
            "ssim_vtbench": float(values["ssim_vtbench"]),
            "ssim_vtbench_item_mean": float(per_item["ssim_vtbench"].mean())}


def run_child(spec: dict, env_src: str | None = None) -> dict:
    """Run :func:`child` in a fresh interpreter (``env_src``: a roundtrip ``src`` folder put
    first on its path); returns its result, or ``{"error": ...}``."""
    env = dict(os.environ)
    if env_src:
        env["PYTHONPATH"] = os.pathsep.join([env_src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], env=env,
                          capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines or not lines[-1].startswith("{"):
        return {"error": (proc.stderr or proc.stdout).strip()[-2000:], "load_1min": load}
    return json.loads(lines[-1]) | {"load_1min": round(load, 2)}


def released_problem(folder: str | None, site: str | None) -> str | None:
    """Why the released evaluator cannot run, or None."""
    if not folder:
        return "no --released folder given"
    if not (Path(folder) / "evaluations" / "evaluate_images.py").is_file():
        return f"{folder} has no evaluations/evaluate_images.py"
    if not site or not (Path(site) / "torchmetrics").is_dir():
        return "no --released-site folder with torchmetrics (pip install --target DIR torchmetrics==1.7.1)"
    return None


def released_commit(folder: str) -> str:
    """The released tree's commit: ``git rev-parse HEAD`` of a clone, else the commit this
    benchmark was written against (an archive carries none)."""
    out = subprocess.run(["git", "-C", folder, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else f"{RELEASED_COMMIT} (not a git clone)"


def column_differences(frames: list, reference) -> dict[str, float]:
    """Largest absolute difference of each numeric column between the rows of every run and the
    ``reference`` rows (NaN cells equal where both are NaN)."""
    import numpy as np
    out = {}
    for col in COLUMNS:
        ref = reference[col].to_numpy(dtype=float)
        worst = 0.0
        for frame in frames:
            got = frame[col].to_numpy(dtype=float)
            both_nan = np.isnan(ref) & np.isnan(got)
            if (np.isnan(ref) != np.isnan(got)).any():
                worst = float("inf")
            diff = np.abs(got - ref)[~both_nan]
            worst = max(worst, float(diff.max()) if diff.size else 0.0)
        out[col] = worst
    return out


def summarize(settings: dict) -> dict:
    """Medians, pairs/s and ratios of every setting's times."""
    out = {}
    for key, setting in settings.items():
        entry = {"pairs": setting["pairs"], "threads": setting["threads"], "side": setting["side"]}
        for name, results in setting["results"].items():
            times = [r["seconds"] for r in results if "seconds" in r]
            cpu = [r["cpu_s"] for r in results if "cpu_s" in r]
            errors = [r["error"] for r in results if "error" in r]
            entry[name] = {"seconds": [round(t, 3) for t in times],
                           "median_s": round(statistics.median(times), 3) if times else None,
                           "pairs_per_s": (round(setting["pairs"] / statistics.median(times), 2)
                                           if times else None),
                           "cpu_s": [round(c, 2) for c in cpu],
                           "cpu_ms_per_pair": (round(1000 * statistics.median(cpu)
                                                     / setting["pairs"], 1) if cpu else None),
                           "load_1min": [r.get("load_1min") for r in results]}
            if errors:
                entry[name]["errors"] = errors[:1]
        entry["ratios"] = {}
        for mine in ("roundtrip", LEAN):
            ours = entry.get(mine, {}).get("pairs_per_s")
            entry["ratios"].update({
                f"{mine}_over_{name}": round(ours / entry[name]["pairs_per_s"], 2)
                for name in setting["results"] if name.startswith(("released", "baseline"))
                and ours and entry[name]["pairs_per_s"]})
        out[key] = entry
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--released", help="the released VTBench tree (its evaluations/ folder)")
    ap.add_argument("--released-site", help="folder of torchmetrics 1.7.1 (pip --target)")
    ap.add_argument("--pairs-256", type=int, default=512)
    ap.add_argument("--pairs-1024", type=int, default=128)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline-src", help="another roundtrip src/ folder to time beside")
    ap.add_argument("--save-items", help="folder to write roundtrip's per-item rows to")
    ap.add_argument("--reference", help="folder of per-item rows of an earlier --save-items")
    ap.add_argument("--work", help="folder for the generated pairs (default: a temporary one)")
    ap.add_argument("--out", default=str(RESULT))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return

    import pandas as pd
    import torch

    problem = released_problem(args.released, args.released_site)
    if problem:
        print(f"released evaluator not run: {problem}; measuring roundtrip alone", flush=True)
    work = Path(args.work or tempfile.mkdtemp(prefix="rt-vs-released-"))
    sizes = [(side, n) for side, n in ((256, args.pairs_256), (1024, args.pairs_1024)) if n > 0]
    data = {side: make_pairs(work / f"pairs_{side}", n, side, seed=side) for side, n in sizes}
    settings = {}
    for side, n in sizes:
        for threads in args.threads:
            names = ["roundtrip", LEAN] + (["baseline"] if args.baseline_src and threads == 1
                                           else [])
            if not problem:
                names += ["released"] + (["released_w8"] if threads > 1 else [])
            settings[f"{side}px_{threads}t"] = {"side": side, "pairs": n, "threads": threads,
                                                "results": {name: [] for name in names}}
    record = {"benchmark": "metrics_vs_released", "commit": commit(),
              "machine": f"{cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}",
              "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
              "released": None if problem else {
                  "folder_commit": released_commit(args.released),
                  "command": "evaluate(--metrics psnr ssim --batch_size 16 --image_size 256 "
                             "--num_workers 0 | 8)"},
              "released_not_run": problem, "runs": args.runs, "complete": False}
    items = {}
    for run in range(args.runs):
        for key, setting in settings.items():
            for name in setting["results"]:
                spec = {"contestant": name, "threads": setting["threads"],
                        "data": data[setting["side"]], "released": args.released,
                        "released_site": args.released_site,
                        "workers": 8 if name == "released_w8" else 0,
                        "out": str(work / "out" / (f"{key}_{name}_{run}" + (
                            ".csv" if name in ("roundtrip", LEAN, "baseline") else "")))}
                result = run_child(spec, args.baseline_src if name == "baseline" else None)
                setting["results"][name].append(result)
                print(key, name, run, {k: v for k, v in result.items() if k != "error"},
                      result.get("error", "")[-300:], flush=True)
                if name in ("roundtrip", LEAN, "baseline") and "seconds" in result:
                    items.setdefault((name, setting["side"]), []).append(pd.read_csv(spec["out"]))
            record["settings"] = summarize(settings)
            write_record(args.out, record)
    values = {}
    for side, n in sizes:
        frames = items.get(("roundtrip", side), [])
        entry = {"roundtrip_rows_same_bytes_every_run_and_thread_count":
                 len({f.to_csv(index=False) for f in frames}) == 1 if frames else None}
        lean = items.get((LEAN, side), [])
        if frames and lean:
            entry[f"{LEAN}_rows_equal_but_ssim"] = all(
                f.drop(columns="ssim").equals(frames[0].drop(columns="ssim"))
                and f["ssim"].isna().all() for f in lean)
        ours = [r for key, s in settings.items() if s["side"] == side
                for r in s["results"]["roundtrip"] if "seconds" in r]
        if ours:
            entry["roundtrip"] = {k: ours[0][k] for k in ("psnr_vtbench", "ssim_vtbench",
                                                          "ssim_vtbench_item_mean")}
        for name in ("released", "released_w8"):
            theirs = [r for key, s in settings.items() if s["side"] == side
                      for r in s["results"].get(name, []) if "seconds" in r]
            if theirs and ours:
                entry[name] = {
                    "psnr": sorted({r["psnr"] for r in theirs}),
                    "ssim": sorted({r["ssim"] for r in theirs}),
                    "max_abs_diff_psnr_db": max(abs(r["psnr"] - ours[0]["psnr_vtbench"])
                                                for r in theirs),
                    "max_abs_diff_ssim": max(abs(r["ssim"] - ours[0]["ssim_vtbench"])
                                             for r in theirs),
                    "torchmetrics": theirs[0]["torchmetrics"]}
        if args.save_items and frames:
            Path(args.save_items).mkdir(parents=True, exist_ok=True)
            frames[0].to_csv(Path(args.save_items) / f"image_quality_{side}.csv", index=False)
        if frames and items.get(("baseline", side)):
            entry["max_abs_diff_from_baseline"] = column_differences(
                frames, items[("baseline", side)][0])
        if args.reference and frames:
            ref = Path(args.reference) / f"image_quality_{side}.csv"
            if ref.exists():
                entry["max_abs_diff_from_reference"] = column_differences(frames, pd.read_csv(ref))
        values[f"{side}px"] = entry
    record.update(values=values, load_average_at_end=[round(x, 2) for x in os.getloadavg()],
                  complete=True)
    write_record(args.out, record)
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
