"""Small tokenizers trained by the workflow: one per family (continuous KL, VQ, LFQ, BSQ, RVQ).

They give the offline default real learned models and real discrete tokens. The architecture is
a plain convolutional autoencoder (stride-2 convolutions down, transposed convolutions up, one
residual block per scale, nothing at full resolution so that it trains in minutes on a CPU); the quantizers come from vector-quantize-pytorch:

| family | bottleneck | tokens |
|---|---|---|
| continuous | diagonal Gaussian; latent = posterior mean (deterministic) | none |
| VQ | ``VectorQuantize`` (EMA codebook, commitment 0.25) | ``[B, h, w]`` |
| LFQ | ``LFQ`` (lookup-free, entropy loss), Yu et al. 2023 | ``[B, h, w]`` |
| BSQ | ``LFQ(spherical=True)``: binary spherical quantization, Zhao et al. 2024 | ``[B, h, w]`` |
| RVQ | ``ResidualVQ`` with ``num_quantizers`` stages | ``[B, h, w, Q]`` |

Training (:func:`train_small_tokenizer`): random crops of the configured datasets, Adam, MSE
reconstruction loss plus the quantizer's auxiliary loss (or ``kl_weight`` x KL for continuous),
seeded, deterministic on CPU. The checkpoint stores the architecture arguments beside the weights.
"""
from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .base import ModelInfo
from .torch_base import TorchAdapter, require_file

log = logging.getLogger(__name__)

SMALL_FAMILIES = ("continuous", "VQ", "LFQ", "BSQ", "RVQ")


class _ResBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.body = nn.Sequential(nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1),
                                  nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1))

    def forward(self, x):
        return x + self.body(x)


class SmallAutoencoder(nn.Module):
    """Convolutional autoencoder with a pluggable bottleneck.

    Args:
        family: one of :data:`SMALL_FAMILIES`.
        downsample: power of two >= 2.
        channels: feature channels of the conv trunk.
        latent_channels: channels of the latent grid (for LFQ/BSQ: bits per token).
        codebook_size: codes per quantizer (VQ, RVQ); LFQ/BSQ use ``2 ** latent_channels``.
        num_quantizers: RVQ stages.
    """

    def __init__(self, family: str, downsample: int = 4, channels: int = 32,
                 latent_channels: int = 8, codebook_size: int = 1024, num_quantizers: int = 4):
        super().__init__()
        self.family, self.latent_channels = family, latent_channels
        n_down = int(math.log2(downsample))
        # No layer runs at full resolution (CPU training speed): a stride-2 "patchify" stem in,
        # a transposed convolution straight to RGB out.
        enc = [nn.Conv2d(3, channels, 4, stride=2, padding=1), _ResBlock(channels)]
        for _ in range(n_down - 1):
            enc += [nn.Conv2d(channels, channels, 4, stride=2, padding=1), _ResBlock(channels)]
        out = latent_channels * (2 if family == "continuous" else 1)
        enc += [nn.GroupNorm(8, channels), nn.SiLU(), nn.Conv2d(channels, out, 1)]
        self.encoder = nn.Sequential(*enc)
        dec = [nn.Conv2d(latent_channels, channels, 3, padding=1), _ResBlock(channels)]
        for _ in range(n_down - 1):
            dec += [nn.ConvTranspose2d(channels, channels, 4, stride=2, padding=1),
                    _ResBlock(channels)]
        dec += [nn.GroupNorm(8, channels), nn.SiLU(),
                nn.ConvTranspose2d(channels, 3, 4, stride=2, padding=1)]
        self.decoder = nn.Sequential(*dec)
        self.quantizer = _make_quantizer(family, latent_channels, codebook_size, num_quantizers)

    def encode(self, x):
        """``x`` ``[B, 3, H, W]`` in [-1, 1] -> (latent ``[B, C, h, w]``, tokens or None, aux loss)."""
        h = self.encoder(x)
        if self.family == "continuous":
            mean, logvar = h.chunk(2, dim=1)
            kl = 0.5 * (mean.pow(2) + logvar.exp() - 1.0 - logvar).mean()
            if self.training:
                mean = mean + torch.randn_like(mean) * (0.5 * logvar).exp()
            return mean, None, kl
        b, c, hh, ww = h.shape
        seq = h.permute(0, 2, 3, 1).reshape(b, hh * ww, c)
        q = self.quantizer(seq)
        quant, idx, aux = q[0], q[1], q[2]
        if aux is None:
            aux = torch.zeros((), device=x.device)
        elif not torch.is_tensor(aux):  # LFQ returns a named tuple of losses
            aux = aux.sum() if hasattr(aux, "sum") else torch.as_tensor(aux)
        quant = quant.reshape(b, hh, ww, c).permute(0, 3, 1, 2)
        idx = idx.reshape(b, hh, ww, -1).squeeze(-1) if idx.ndim == 3 else idx.reshape(b, hh, ww)
        return quant, idx.long(), aux.sum()

    def decode(self, latent):
        return self.decoder(latent)


def _make_quantizer(family, dim, codebook_size, num_quantizers):
    import vector_quantize_pytorch as vqp

    if family == "continuous":
        return None
    if family == "VQ":
        return vqp.VectorQuantize(dim=dim, codebook_size=codebook_size, decay=0.9,
                                  commitment_weight=0.25, kmeans_init=True)
    if family in ("LFQ", "BSQ"):
        return vqp.LFQ(dim=dim, entropy_loss_weight=0.1, diversity_gamma=1.0,
                       spherical=family == "BSQ")
    if family == "RVQ":
        return vqp.ResidualVQ(dim=dim, num_quantizers=num_quantizers,
                              codebook_size=codebook_size, decay=0.9, commitment_weight=0.25,
                              kmeans_init=True)
    raise ValueError(f"family must be one of {SMALL_FAMILIES}, got {family!r}")


def arch_args(spec: dict) -> dict:
    """Architecture arguments of a ``type: small`` model spec (defaults filled in)."""
    return {"family": spec["family"], "downsample": int(spec.get("downsample", 4)),
            "channels": int(spec.get("channels", 32)),
            "latent_channels": int(spec.get("latent_channels", 8)),
            "codebook_size": int(spec.get("codebook_size", 1024)),
            "num_quantizers": int(spec.get("num_quantizers", 4))}


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
                          steps: int = 400, batch_size: int = 16, crop: int = 64,
                          lr: float = 2e-3, kl_weight: float = 1e-4, seed: int = 0) -> dict:
    """Train a :class:`SmallAutoencoder` and save ``{"arch", "state_dict", "history"}``.

    Args:
        spec: model spec (``family``, ``downsample``, ...; see :func:`arch_args`).
        images: ``uint8 (H, W, 3)`` training images, each at least ``crop`` pixels a side.
        out_path: checkpoint file (``.pt``).

    Returns:
        Training summary: final loss, seconds, steps.

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
    summary = {"steps": steps, "seconds": round(time.perf_counter() - t0, 1),
               "final_mse": history[-1]["mse"], "seed": seed}
    torch.save({"arch": arch, "state_dict": model.state_dict(), "history": history,
                "summary": summary}, out_path)
    return summary


class SmallTokenizer(TorchAdapter):
    """Adapter for a trained :class:`SmallAutoencoder` checkpoint.

    Args:
        family: one of :data:`SMALL_FAMILIES`.
        checkpoint: path of the trained ``.pt`` (the workflow fills it in:
            ``results/weights/{model}/model.pt``).
        downsample, channels, latent_channels, codebook_size, num_quantizers: architecture.
        train: training settings (used by the training rule; see :func:`train_small_tokenizer`).
    """

    def __init__(self, family: str, checkpoint: str | None = None, downsample: int = 4,
                 channels: int = 32, latent_channels: int = 8, codebook_size: int = 1024,
                 num_quantizers: int = 4, train: dict | None = None, precision: str = "fp32"):
        super().__init__(precision)
        if family not in SMALL_FAMILIES:
            raise ValueError(f"family must be one of {SMALL_FAMILIES}, got {family!r}")
        if downsample < 2 or downsample & (downsample - 1):
            raise ValueError(f"downsample must be a power of two >= 2, got {downsample}")
        if family in ("VQ", "RVQ") and codebook_size < 2:
            raise ValueError("codebook_size must be >= 2")
        self.family, self.checkpoint = family, checkpoint
        self.arch = arch_args({"family": family, "downsample": downsample, "channels": channels,
                               "latent_channels": latent_channels, "codebook_size": codebook_size,
                               "num_quantizers": num_quantizers})
        self.train_settings = dict(train or {})

    def check_weights(self):
        if self.checkpoint:
            require_file(self.checkpoint, self.name, "trained checkpoint",
                         "It is produced by the workflow's train_tokenizer rule.")

    def _load_module(self):
        if not self.checkpoint:
            raise ValueError(f"model {self.name}: no checkpoint path set")
        path = require_file(self.checkpoint, self.name, "trained checkpoint",
                            "It is produced by the workflow's train_tokenizer rule.")
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        module = SmallAutoencoder(**ckpt["arch"])
        module.load_state_dict(ckpt["state_dict"])
        return module

    def encode(self, x):
        latent, idx, _ = self.module.encode(x.to(self.device))
        return {"latent": latent, "tokens": idx}

    def decode(self, latent):
        return self.module.decode(latent["latent"])

    def tokens(self, latent):
        return latent["tokens"]

    def latent_shape(self, h, w):
        f = self.arch["downsample"]
        return (self.arch["latent_channels"], h // f, w // f)

    def info(self):
        fam = self.family
        codebook = None
        if fam in ("VQ", "RVQ"):
            codebook = self.arch["codebook_size"]
        elif fam in ("LFQ", "BSQ"):
            codebook = 2 ** self.arch["latent_channels"]
        # Fully convolutional: any size (trained on crops), so model_size uses the dataset's size.
        return ModelInfo(family=fam, params=self.n_params(), native_sizes=[],
                         downsample=self.arch["downsample"], codebook_size=codebook)
