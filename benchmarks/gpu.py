"""GPU throughput and memory of a Stable Diffusion VAE round trip (encode + decode) at 1024².

Builds diffusers' ``AutoencoderKL`` from the SD/SDXL VAE architecture written below
(:data:`SD_VAE_CONFIG`: four blocks of 128, 256, 512, 512 channels, two ResNet layers each, a
4-channel latent at 1/8 of the side, one attention block in the middle; SDXL's 1024 sample size
and scaling factor) with random weights, so nothing is downloaded: throughput and memory do not
depend on the weights. For each precision in ``--dtypes`` (fp32, bf16: the weights and the input
in that dtype) and each batch size in ``--batch-sizes`` (default 1 2 4 8), it runs
``decode(encode(x).latent_dist.mode())`` on random ``[B, 3, 1024, 1024]`` inputs in
``torch.inference_mode()``: ``--warmup`` passes, then ``--repeats`` timed passes between
``torch.cuda.synchronize()`` calls. Each setting records images/s, seconds per batch and
``torch.cuda.max_memory_allocated`` (peak statistics reset before it); a setting that runs out
of memory is recorded as ``oom`` and the next one runs. Writes ``benchmarks/results/gpu.json``.

Without a CUDA device it writes nothing and exits with status 2 and one line on stderr.

Usage: ``python benchmarks/gpu.py [--batch-sizes 1 2 4 8] [--dtypes fp32 bf16]
[--resolution 1024] [--warmup 2] [--repeats 5] [--out JSON]``
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time

from records import REPO, commit, write_record  # sibling module, on sys.path

NO_CUDA = "no CUDA device: benchmarks/gpu.py needs a GPU; nothing written"

#: The Stable Diffusion VAE (SD 1.x/2.x and SDXL share this architecture; SDXL's sample size
#: and scaling factor), as in the ``config.json`` of ``stabilityai/sdxl-vae``.
SD_VAE_CONFIG = {
    "in_channels": 3,
    "out_channels": 3,
    "down_block_types": ["DownEncoderBlock2D"] * 4,
    "up_block_types": ["UpDecoderBlock2D"] * 4,
    "block_out_channels": [128, 256, 512, 512],
    "layers_per_block": 2,
    "act_fn": "silu",
    "latent_channels": 4,
    "norm_num_groups": 32,
    "sample_size": 1024,
    "scaling_factor": 0.13025,
    "force_upcast": True,
}
DTYPES = ("fp32", "bf16")


def one_setting(vae, torch, dtype, batch: int, side: int, warmup: int, repeats: int) -> dict:
    """Time ``repeats`` round trips of a ``[batch, 3, side, side]`` input after ``warmup``."""
    device = torch.device("cuda")

    def peak_mb(stat) -> float:
        return round(stat(device) / 2**20, 1)

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    x = None
    try:
        generator = torch.Generator(device).manual_seed(0)
        x = torch.rand(batch, 3, side, side, device=device, generator=generator, dtype=dtype)
        x = x * 2 - 1
        with torch.inference_mode():
            for _ in range(warmup):
                vae.decode(vae.encode(x).latent_dist.mode()).sample
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(repeats):
                y = vae.decode(vae.encode(x).latent_dist.mode()).sample
            torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
        assert tuple(y.shape) == tuple(x.shape)
        return {"batch_size": batch, "oom": False,
                "images_per_s": round(batch * repeats / seconds, 3),
                "s_per_batch": round(seconds / repeats, 4),
                "max_memory_allocated_mb": peak_mb(torch.cuda.max_memory_allocated),
                "max_memory_reserved_mb": peak_mb(torch.cuda.max_memory_reserved)}
    except torch.cuda.OutOfMemoryError as exc:
        return {"batch_size": batch, "oom": True,
                "error": " ".join(str(exc).split())[:300],
                "max_memory_allocated_mb": peak_mb(torch.cuda.max_memory_allocated)}
    finally:
        del x
        gc.collect()
        torch.cuda.empty_cache()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    ap.add_argument("--resolution", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/gpu.json"))
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print(NO_CUDA, file=sys.stderr)
        return 2
    from diffusers import AutoencoderKL

    settings = []
    for name in args.dtypes:
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[name]
        torch.manual_seed(args.seed)
        vae = AutoencoderKL(**SD_VAE_CONFIG).to("cuda", dtype).eval()
        for batch in args.batch_sizes:
            rec = {"dtype": name, **one_setting(vae, torch, dtype, batch, args.resolution,
                                                args.warmup, args.repeats)}
            settings.append(rec)
            print(json.dumps(rec), flush=True)
        del vae
        gc.collect()
        torch.cuda.empty_cache()

    result = {
        "benchmark": f"diffusers AutoencoderKL, SD/SDXL VAE architecture, random weights, "
                     f"encode + decode (latent = posterior mode) at {args.resolution}x"
                     f"{args.resolution}, {args.warmup} warm-up and {args.repeats} timed passes "
                     "per setting, CUDA",
        "commit": commit(),
        "machine": cuda_machine(torch),
        "config": SD_VAE_CONFIG,
        "settings": settings,
    }
    write_record(args.out, result)
    return 0


def cuda_machine(torch) -> dict:
    """What a GPU record names of its machine: the first CUDA device (name, memory in GiB,
    compute capability), the CPU count, the versions of Python, torch, CUDA and diffusers, and
    whether TF32 is allowed (cuDNN, matrix products)."""
    import diffusers

    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "gpu_memory_gb": round(props.total_memory / 2**30, 1),
            "capability": f"{props.major}.{props.minor}", "cpus": os.cpu_count(),
            "python": platform.python_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "diffusers": diffusers.__version__,
            "cudnn_tf32": torch.backends.cudnn.allow_tf32,
            "matmul_tf32": torch.backends.cuda.matmul.allow_tf32}


if __name__ == "__main__":
    sys.exit(main())
