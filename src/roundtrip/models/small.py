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

Training is a pipeline stage (:func:`roundtrip.stages.train.train_small_tokenizer`); the
checkpoint (:mod:`roundtrip.core.checkpoint`, safetensors) stores the architecture arguments
beside the weights.
"""
from __future__ import annotations

import math
import sys

import torch
from torch import nn

from roundtrip.core.checkpoint import load_checkpoint
from roundtrip.models.base import ModelInfo
from roundtrip.models.torch_base import TorchAdapter, require_file

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


def import_vector_quantize():
    """``vector_quantize_pytorch``, imported without torch.compile's machinery.

    Its dependency einx registers its operations with ``torch.compiler.allow_in_graph`` when it
    is imported beside torch, and that imports Dynamo with triton and sympy: 0.85 s of every job
    that builds a quantizer on the 2-core reference machine (measured: 2.35 s vs 1.5 s for the
    import; the reconstructions are bit-identical either way). roundtrip never compiles a model,
    so the registration is skipped while importing; it only tells torch.compile not to trace into
    einx's functions.
    """
    if "vector_quantize_pytorch" in sys.modules:
        return sys.modules["vector_quantize_pytorch"]
    import torch.compiler

    allow_in_graph = torch.compiler.allow_in_graph
    torch.compiler.allow_in_graph = lambda fn: fn
    try:
        import vector_quantize_pytorch
    finally:
        torch.compiler.allow_in_graph = allow_in_graph
    return vector_quantize_pytorch


def _make_quantizer(family, dim, codebook_size, num_quantizers):
    vqp = import_vector_quantize()

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


class SmallTokenizer(TorchAdapter):
    """Adapter for a trained :class:`SmallAutoencoder` checkpoint.

    Args:
        family: one of :data:`SMALL_FAMILIES`.
        checkpoint: path of the trained checkpoint (the workflow fills it in:
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
        state, meta = load_checkpoint(path)
        module = SmallAutoencoder(**meta["arch"])
        module.load_state_dict(state)
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
