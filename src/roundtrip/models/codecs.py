"""Classical reconstruction baselines: identity, JPEG, WebP and bicubic resampling.

They bound the learned models from both sides (identity is perfect, bicubic x8 is poor) and run
everywhere without weights. All work on 8-bit RGB: ``[-1, 1]`` floats are mapped to 0..255 with
rounding, exactly inverting the loader for 8-bit sources, so ``identity`` is lossless on them.
"""
from __future__ import annotations

import io

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from roundtrip.models.base import Adapter, ModelInfo


def _to_uint8(x: torch.Tensor) -> np.ndarray:
    """``[B, 3, H, W]`` in ``[-1, 1]`` -> ``uint8 [B, H, W, 3]``."""
    u = ((x.detach().float().cpu().clamp(-1, 1) + 1.0) * 127.5).round().to(torch.uint8)
    return u.permute(0, 2, 3, 1).numpy()


def _from_uint8(a: np.ndarray) -> torch.Tensor:
    """``uint8 [B, H, W, 3]`` -> float32 ``[B, 3, H, W]`` in ``[-1, 1]``."""
    t = torch.from_numpy(np.ascontiguousarray(a)).permute(0, 3, 1, 2).float()
    return t / 127.5 - 1.0


class Identity(Adapter):
    """Returns its input: the latent is the image itself. PSNR = inf, SSIM = 1 by construction."""

    def encode(self, x):
        return x.clone()

    def decode(self, latent):
        return latent

    def info(self):
        return ModelInfo(family="codec")

    def latent_shape(self, h, w):
        return (3, h, w)


class _PILCodec(Adapter):
    """Shared JPEG/WebP logic: the latent is a list of compressed byte strings, one per item."""

    format = ""

    def __init__(self, quality: int, **save_kwargs):
        if not 1 <= int(quality) <= 100:
            raise ValueError(f"quality must be in 1..100, got {quality}")
        self.quality = int(quality)
        self.save_kwargs = save_kwargs

    def encode(self, x):
        out = []
        for arr in _to_uint8(x):
            buf = io.BytesIO()
            Image.fromarray(arr, "RGB").save(buf, format=self.format, quality=self.quality,
                                             **self.save_kwargs)
            out.append(buf.getvalue())
        return out

    def decode(self, latent):
        arrs = [np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in latent]
        return _from_uint8(np.stack(arrs))

    def info(self):
        return ModelInfo(family="codec")

    @staticmethod
    def bits_per_pixel(latent, h: int, w: int) -> list[float]:
        """Compressed size of each item in bits per pixel."""
        return [8.0 * len(b) / (h * w) for b in latent]


class Jpeg(_PILCodec):
    """Baseline JPEG via libjpeg (Pillow), 4:2:0 chroma subsampling by default.

    Args:
        quality: 1..100 (libjpeg scale).
        subsampling: Pillow's code, 0 = 4:4:4, 1 = 4:2:2, 2 = 4:2:0.
    """

    format = "JPEG"

    def __init__(self, quality: int = 75, subsampling: int = 2):
        super().__init__(quality, subsampling=int(subsampling))


class Webp(_PILCodec):
    """Lossy WebP via libwebp (Pillow), ``method=4``.

    Args:
        quality: 1..100 (libwebp scale).
    """

    format = "WEBP"

    def __init__(self, quality: int = 75):
        super().__init__(quality, method=4)


class Resample(Adapter):
    """Bicubic downsampling by ``factor`` (antialiased) and bicubic upsampling back.

    The latent is the low-resolution image ``[B, 3, round(H/f), round(W/f)]``: the information a
    tokenizer with the same downsampling factor and full-precision 3-channel latents would keep.

    Args:
        factor: downsampling factor, > 1.
    """

    def __init__(self, factor: float = 4):
        if float(factor) <= 1:
            raise ValueError(f"factor must be > 1, got {factor}")
        self.factor = float(factor)

    def _low_size(self, h, w):
        return max(1, round(h / self.factor)), max(1, round(w / self.factor))

    def encode(self, x):
        size = self._low_size(x.shape[-2], x.shape[-1])
        low = F.interpolate(x, size=size, mode="bicubic", antialias=True, align_corners=False)
        return {"low": low, "size": tuple(x.shape[-2:])}

    def decode(self, latent):
        return F.interpolate(latent["low"], size=latent["size"], mode="bicubic",
                             align_corners=False)

    def info(self):
        f = int(self.factor) if self.factor.is_integer() else self.factor
        return ModelInfo(family="codec", downsample=f)

    def latent_shape(self, h, w):
        return (3, *self._low_size(h, w))
