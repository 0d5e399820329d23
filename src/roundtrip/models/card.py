"""Model card: family, size, native resolution, latent shape and compression ratio per model.

The latent shape is the adapter's own (:meth:`Adapter.latent_shape`) where it declares one, else
what the model's ``encode`` returns for a probe image of that size
(:func:`roundtrip.models.probe.observed_latent_shape`): a user's TorchScript or state-dict model
gets its shape without declaring it. Only a latent that is not a tensor (a codec's bytes, an
image API's answer) has no shape.

Compression ratio = latent elements / input elements, with 3 input channels (MediBench Table 6):
``prod(latent_shape(H, W)) / (3 H W)``. For the SDXL VAE at 256 x 256 this is
``4 * 32 * 32 / (3 * 256 * 256) = 0.0208``, the same at 512 x 512.
"""
from __future__ import annotations

import math

import pandas as pd

from roundtrip.models import Adapter
from roundtrip.models.probe import observed_latent_shape

CARD_SIZES = (256, 512)

#: Footnotes printed under every model card.
CARD_NOTES = [
    "Compression ratio = latent elements / input elements (3 channels), MediBench Table 6.",
    "MediBench Table 6 prints 0.083 for the SDXL VAE at 256x256: that divides the 512x512 "
    "latent (4x64x64 = 16384) by a 256x256 input (196608); the latent of a 256x256 input is "
    "4x32x32 and the ratio 0.0208 at both sizes.",
]


def compression_ratio(latent_shape: tuple[int, ...] | None, h: int, w: int) -> float:
    """``prod(latent_shape) / (3 h w)``; NaN when the latent is not a fixed-shape tensor."""
    if not latent_shape:
        return math.nan
    return math.prod(latent_shape) / (3 * h * w)


def card_row(model: Adapter) -> dict:
    """One model card row (loads the model's weights to count parameters and, where the adapter
    declares no latent shape, encodes a probe image at each of :data:`CARD_SIZES`).

    Raises:
        roundtrip.models.probe.ProbeError: the model cannot be loaded or fails to encode.
    """
    info = model.info()
    natives = ", ".join(f"{a}x{b}" for a, b in info.native_sizes) or "any"
    row = {"model": model.name, "family": info.family, "params": info.params,
           "native_sizes": natives + (" (fixed)" if info.fixed_size else ""),
           "downsample": info.downsample,
           "codebook_size": info.codebook_size if info.codebook_size else "–"}
    for s in CARD_SIZES:
        shape = observed_latent_shape(model, s, s)
        row[f"latent_{s}"] = "x".join(map(str, shape)) if shape else "–"
        row[f"ratio_{s}"] = compression_ratio(shape, s, s)
    return row


def model_card(models: list[Adapter]) -> tuple[pd.DataFrame, list[str]]:
    """Rows for ``models`` and the footnotes (one per model whose latent has no shape, saying
    why, and one per stochastic model, naming its seeds)."""
    rows, notes = [], list(CARD_NOTES)
    for m in models:
        rows.append(card_row(m))
        if rows[-1]["latent_256"] == "–":
            notes.append(f"{m.name}: {_no_shape_reason(m)}; no fixed compression ratio.")
        if m.stochastic:
            notes.append(f"{m.name}: stochastic (models.{m.name}.stochastic): every item is "
                         f"reconstructed alone under a seed of its own, derived from "
                         f"models.{m.name}.seed ({m.seed}) and its id; each item's seed is in "
                         "its status.csv.")
    return pd.DataFrame(rows), notes


def _no_shape_reason(model: Adapter) -> str:
    family = model.info().family
    if family == "codec":
        return "the latent is a variable-length bitstream, not a tensor"
    if family == "api":
        return "an image API returns images, not a latent"
    if not model.supports(256, 256):
        return "the model does not take 256x256 inputs"
    return "encode() returns no tensor (nor a dict with a 'latent', 'quant' or 'low' tensor)"
