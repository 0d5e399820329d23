"""Training of the small tokenizers (``type: small``): the ``train_tokenizer`` stage.

Random crops of the configured datasets, Adam with a cosine schedule, MSE reconstruction loss
plus the quantizer's auxiliary loss (or ``kl_weight`` x KL for the continuous family), seeded,
deterministic on CPU. The architecture is :class:`roundtrip.models.small.SmallAutoencoder`.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from roundtrip.core.checkpoint import save_checkpoint
from roundtrip.core.progress import Progress
from roundtrip.models.small import SmallAutoencoder, arch_args

log = logging.getLogger(__name__)

#: Training settings of a ``type: small`` model when its ``train`` entry leaves them out
#: (``datasets`` defaults to the first dataset of the config).
TRAIN_DEFAULTS = {"steps": 400, "batch_size": 16, "crop": 64, "lr": 2e-3, "kl_weight": 1e-4,
                  "seed": 0}


def _training_crops(images: list[np.ndarray], n: int, crop: int, rng: np.random.Generator):
    batch = []
    for _ in range(n):
        img = images[rng.integers(len(images))]
        y = rng.integers(0, img.shape[0] - crop + 1)
        x = rng.integers(0, img.shape[1] - crop + 1)
        patch = img[y:y + crop, x:x + crop]
        if rng.random() < 0.5:
            patch = patch[:, ::-1]
        batch.append(patch)
    t = torch.from_numpy(np.ascontiguousarray(np.stack(batch))).permute(0, 3, 1, 2).float()
    return t / 127.5 - 1.0


def train_small_tokenizer(spec: dict, images: list[np.ndarray], out_path: str | Path,
                          steps: int = TRAIN_DEFAULTS["steps"],
                          batch_size: int = TRAIN_DEFAULTS["batch_size"],
                          crop: int = TRAIN_DEFAULTS["crop"], lr: float = TRAIN_DEFAULTS["lr"],
                          kl_weight: float = TRAIN_DEFAULTS["kl_weight"],
                          seed: int = TRAIN_DEFAULTS["seed"]) -> dict:
    """Train a :class:`SmallAutoencoder` and save its weights with ``{"arch", "history",
    "summary"}`` (:func:`roundtrip.core.checkpoint.save_checkpoint`: the same bytes for the same
    weights; no time inside).

    Args:
        spec: model spec (``family``, ``downsample``, ...; see :func:`arch_args`).
        images: ``uint8 (H, W, 3)`` training images, each at least ``crop`` pixels a side.
        out_path: checkpoint file (``.pt``).

    Returns:
        Training summary: steps, final MSE, seed, and ``seconds`` of training (wall clock; for
        the job's log only, it is not in the checkpoint).

    Raises:
        ValueError: no image large enough for the crop.
    """
    images = [im if im.dtype == np.uint8 else (im // 257).astype(np.uint8) for im in images]
    images = [im for im in images if min(im.shape[:2]) >= crop]
    if not images:
        raise ValueError(f"no training image is at least {crop}x{crop}")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    arch = arch_args(spec)
    model = SmallAutoencoder(**arch)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    model.train()
    t0, history = time.perf_counter(), []
    progress = Progress(steps, f"train {Path(out_path).parent.name}", unit="steps")
    for step in range(steps):
        x = _training_crops(images, batch_size, crop, rng)
        latent, _, aux = model.encode(x)
        rec = F.mse_loss(model.decode(latent), x)
        loss = rec + (kl_weight * aux if arch["family"] == "continuous" else aux)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0 or step == steps - 1:
            history.append({"step": step, "mse": float(rec.detach()), "aux": float(aux.detach())})
            log.info("step %d mse %.5f aux %.5f", step, history[-1]["mse"], history[-1]["aux"])
        progress.add()
    progress.finish()
    summary = {"steps": steps, "final_mse": history[-1]["mse"], "seed": seed}
    save_checkpoint(out_path, model.state_dict(),
                    {"arch": arch, "history": history, "summary": summary})
    return {**summary, "seconds": round(time.perf_counter() - t0, 1)}
