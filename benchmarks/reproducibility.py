"""What ``reproducibility: portable`` costs: the training jobs of the default config in each mode.

In a fresh copy of the repository (as ``default_run.py`` makes one) the default ``config.yaml``'s
training jobs run through Snakemake: ``train_tokenizer`` for every small tokenizer (the token
reference through ``train_reference_tokenizer``) and ``train_cmms``. The datasets are built once;
then each round forces the training jobs in one mode, then in the other (alternating, so that
load from other processes spreads over both), ``--cores 1`` so that the jobs do not share the
CPU with each other. Each job's time is its ``benchmark:`` record; each checkpoint's SHA-256 is
recorded too (within a mode, every round must write the same bytes).

Writes ``benchmarks/results/reproducibility.json``: every round, the median seconds per job and
mode, the median total and the ratio portable / fast.

``--part kernels`` (or ``all``) adds the evidence of what the pins are for: a small tokenizer
(BSQ, the default architecture, 30 steps) trained as a job would train it, in a fresh
interpreter per variant, under each mode with the kernel level forced from outside
(``ATEN_CPU_CAPABILITY``), one library pinned at a time and one or two threads; and a Transformer
layer (MKL's GEMM, as in CMMS) under MKL's code paths. The SHA-256 of the weights per variant
shows which variable changes the bytes. Written under ``kernels`` in the same file.

Usage: ``python benchmarks/reproducibility.py [--part timing|kernels|all] [--runs 3]
[--workdir DIR]``
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from default_run import REPO, fresh_checkout  # noqa: E402 - the sibling benchmark's copy
from records import commit, write_record  # noqa: E402 - sibling

MODES = ("portable", "fast")
RULES = ("train_tokenizer", "train_cmms")


def training_targets(config: dict) -> list[str]:
    """Checkpoints of the config's training jobs: every ``type: small`` model, and the CMMS
    regressor of the token reference (when the token metrics are on)."""
    out = [f"results/weights/{name}/model.pt" for name, spec in config["models"].items()
           if spec.get("type") == "small"]
    reference = ((config.get("metrics") or {}).get("tokens") or {}).get("reference", "small_vq")
    if reference:
        out.append(f"results/weights/cmms/{reference}/model.pt")
    return out


def snakemake(work: Path, mode: str, targets: list[str], force: bool) -> float:
    """Run the targets in ``mode``; returns the wall seconds.

    Raises:
        RuntimeError: Snakemake failed.
    """
    # targets first: --forcerun and --config take every word after them
    cmd = [sys.executable, "-m", "snakemake", *targets, "--cores", "1"]
    if force:
        cmd += ["--forcerun", "train_tokenizer", "train_reference_tokenizer", "train_cmms"]
    cmd += ["--config", f"reproducibility={mode}"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake failed:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    return time.perf_counter() - t0


def job_seconds(work: Path) -> dict[str, float]:
    """``rule/wildcards -> seconds`` of the training jobs' ``benchmark:`` records."""
    out = {}
    for rule in RULES:
        for tsv in sorted((work / "results/benchmarks" / rule).glob("*.tsv")):
            rows = list(csv.DictReader(open(tsv), delimiter="\t"))
            out[f"{rule}/{tsv.stem}"] = float(rows[-1]["s"])
    return out


def digests(work: Path, targets: list[str]) -> dict[str, str]:
    return {t: hashlib.sha256((work / t).read_bytes()).hexdigest() for t in targets}


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.processor()


def summarize(rounds: list[dict]) -> dict:
    """Median seconds per job and mode, the median total per mode and portable / fast."""
    out = {}
    for mode in MODES:
        runs = [r for r in rounds if r["mode"] == mode]
        jobs = sorted(runs[0]["seconds"])
        out[mode] = {"median_s": {j: round(statistics.median(r["seconds"][j] for r in runs), 1)
                                  for j in jobs},
                     "median_total_s": round(statistics.median(sum(r["seconds"].values())
                                                               for r in runs), 1),
                     "checkpoints_identical_across_rounds":
                         all(r["sha256"] == runs[0]["sha256"] for r in runs)}
    out["portable_over_fast"] = round(out["portable"]["median_total_s"]
                                      / out["fast"]["median_total_s"], 3)
    return out


#: A job as a Snakemake script runs it (preamble, _bootstrap, configure_torch), training a small
#: tokenizer or a Transformer layer; prints the compute record and the weights' SHA-256.
KERNEL_JOB = """
import hashlib, json, sys, types
sys.path.insert(0, {scripts!r})
snakemake = types.SimpleNamespace(config={{"reproducibility": {mode!r}}}, threads={threads})
import _bootstrap
import torch
from roundtrip.core.compute import configure_torch
record = configure_torch(snakemake.config, snakemake.threads)
if {net!r} == "bsq":
    import skimage.data
    from roundtrip.core.checkpoint import load_checkpoint
    from roundtrip.stages.train import train_small_tokenizer
    images = [getattr(skimage.data, n)() for n in ("astronaut", "chelsea", "coffee", "rocket")]
    train_small_tokenizer({{"family": "BSQ"}}, images, {out!r}, steps=30)
    state = load_checkpoint({out!r})[0]
else:  # nn.Linear runs MKL's sgemm
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True)
    opt = torch.optim.Adam(layer.parameters(), 1e-3)
    for _ in range(20):
        loss = layer(torch.randn(16, 64, 256)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    state = layer.state_dict()
digest = hashlib.sha256()
for name in sorted(state):
    digest.update(state[name].contiguous().numpy().tobytes())
record["weights_sha256"] = digest.hexdigest()[:16]
print(json.dumps(record))
"""

#: (net, mode, threads, outer environment) of each variant of the kernel evidence.
KERNEL_VARIANTS = [
    ("bsq", "fast", 1, {}), ("bsq", "fast", 2, {}),
    ("bsq", "fast", 1, {"ATEN_CPU_CAPABILITY": "avx2"}),
    ("bsq", "fast", 1, {"ATEN_CPU_CAPABILITY": "default"}),
    ("bsq", "fast", 1, {"ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2"}),
    ("bsq", "fast", 1, {"ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2",
                        "MKL_CBWR": "AVX2,STRICT"}),
    ("bsq", "portable", 1, {}), ("bsq", "portable", 2, {}),
    ("bsq", "portable", 1, {"ATEN_CPU_CAPABILITY": "avx2"}),
    ("bsq", "portable", 2, {"ATEN_CPU_CAPABILITY": "avx512"}),
    ("bsq", "portable", 1, {"ATEN_CPU_CAPABILITY": "default", "DNNL_MAX_CPU_ISA": "SSE41"}),
    ("transformer", "fast", 1, {"ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2"}),
    ("transformer", "fast", 1, {"ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2",
                                "MKL_CBWR": "AVX2,STRICT"}),
    ("transformer", "fast", 1, {"ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2",
                                "MKL_CBWR": "COMPATIBLE"}),
    ("transformer", "portable", 1, {"MKL_CBWR": "COMPATIBLE"}),
]


def kernel_evidence(work: Path) -> list[dict]:
    """Run every :data:`KERNEL_VARIANTS` in a fresh interpreter (the outer environment cleared of
    every variable ``portable`` sets, then the variant's added)."""
    from roundtrip.core.compute import PORTABLE_ENV

    base = {k: v for k, v in os.environ.items() if k not in PORTABLE_ENV}
    out = []
    for k, (net, mode, threads, extra) in enumerate(KERNEL_VARIANTS):
        code = KERNEL_JOB.format(scripts=str(REPO / "scripts"), mode=mode, threads=threads,
                                 net=net, out=str(work / f"variant{k}.pt"))
        proc = subprocess.run([sys.executable, "-c", code], env={**base, **extra},
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        record = json.loads(proc.stdout.strip().splitlines()[-1])
        out.append({"net": net, "mode": mode, "threads_asked": threads, "outer_env": extra,
                    "cpu_capability": record["cpu_capability"], "threads": record["threads"],
                    "weights_sha256": record["weights_sha256"]})
        print(out[-1], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("timing", "kernels", "all"), default="all")
    ap.add_argument("--runs", type=int, default=3, help="rounds per mode")
    ap.add_argument("--workdir", default=None, help="a new folder to run in (kept)")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/reproducibility.json"))
    args = ap.parse_args()
    tmp = None if args.workdir else tempfile.TemporaryDirectory(prefix="roundtrip-repro-")
    work = Path(args.workdir or tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    result = json.loads(out.read_text()) if out.is_file() else {}
    if args.part in ("timing", "all"):
        result.update(timing(work, args.runs))
    if args.part in ("kernels", "all"):
        result["kernels"] = kernel_evidence(work)
    import torch

    result["commit"] = commit()
    result["machine"] = {"cpu": cpu_model(), "cpus": os.cpu_count(),
                         "torch_cpu_capability_fast": torch.backends.cpu.get_cpu_capability(),
                         "torch": torch.__version__, "python": platform.python_version()}
    write_record(out, result, indent=1)
    print(json.dumps(result.get("summary"), indent=1))
    if tmp is not None:
        tmp.cleanup()


def timing(work: Path, runs: int) -> dict:
    """The timed rounds (module docstring) in a fresh copy of the repository in ``work``."""
    fresh_checkout(work)
    config = yaml.safe_load((work / "config.yaml").read_text())
    targets = training_targets(config)
    snakemake(work, "portable", targets, force=False)  # datasets (and a first training), untimed
    rounds = []
    for k in range(runs):
        for mode in MODES:
            wall = snakemake(work, mode, targets, force=True)
            rounds.append({"round": k + 1, "mode": mode, "wall_s": round(wall, 1),
                           "seconds": job_seconds(work), "sha256": digests(work, targets)})
            print(f"round {k + 1} {mode}: {sum(rounds[-1]['seconds'].values()):.1f} s "
                  f"{rounds[-1]['seconds']}", flush=True)
    return {"benchmark": "training jobs of the default config.yaml (train_tokenizer per small "
                         "model, train_cmms) forced in each mode, snakemake --cores 1, fresh copy",
            "summary": summarize(rounds), "rounds": rounds}


if __name__ == "__main__":
    main()
