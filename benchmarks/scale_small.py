"""The learned model of ``benchmarks/scale.py``: roundtrip's small tokenizer with random weights.

``type: small`` models are always trained by the workflow (their checkpoint path is fixed to
``results/weights/{model}/model.pt``, and the plan adds a ``train_tokenizer`` job), so the
benchmark runs the same network through the ``state_dict`` model type instead:
:class:`SmallModule` is :class:`roundtrip.models.small.SmallAutoencoder` (same layers, same
state-dict keys) with ``encode``/``decode`` in the shape that type expects (a latent dict in,
a latent dict out), and :func:`save_random` writes random weights for it. The scale benchmark
copies this file into a folder of its own and puts that on the ``PYTHONPATH`` of its Snakemake
runs, so the jobs import ``scale_small:SmallModule``. Speed does not depend on the weights.
"""
from __future__ import annotations

from pathlib import Path

import torch

from roundtrip.models.small import SmallAutoencoder


class SmallModule(SmallAutoencoder):
    """:class:`SmallAutoencoder` with the ``encode``/``decode``/``tokens`` of the ``state_dict``
    type: ``encode(x) -> {"latent", "tokens"}``, ``decode(that) -> x_hat``. The computation is
    the one :class:`roundtrip.models.small.SmallTokenizer` runs."""

    def encode(self, x):
        latent, tokens, _ = super().encode(x)
        return {"latent": latent, "tokens": tokens}

    def decode(self, latent):
        return super().decode(latent["latent"])

    def tokens(self, latent):
        return latent["tokens"]


def save_random(path: str | Path, arch: dict, seed: int = 0) -> Path:
    """Random weights for ``SmallModule(**arch)`` saved with ``torch.save`` to ``path``.

    One forward pass in training mode on random inputs first, so that a quantizer with k-means
    initialization (VQ, RVQ) starts from a filled codebook, as a trained one does, instead of
    initializing it on the first batch it reconstructs.
    """
    torch.manual_seed(seed)
    module = SmallModule(**arch)
    module.train()
    with torch.no_grad():
        module.encode(torch.rand(16, 3, 64, 64) * 2 - 1)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(module.state_dict(), path)
    return path
