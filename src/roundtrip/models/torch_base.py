"""Shared machinery of adapters around a ``torch.nn.Module``: device, precision, lazy loading.

Adapters validate their settings in ``__init__`` (cheap: the config check builds every model
before any job runs) and load weights in :meth:`TorchAdapter.load`, called on first use or by
``to(device)``. :meth:`TorchAdapter.check_weights` verifies the weights can be found without
loading them, so a missing checkpoint fails at DAG-build time with instructions.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from roundtrip.core.weights import WeightsMissing
from roundtrip.models.base import Adapter

PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class TorchAdapter(Adapter):
    """Base for learned models.

    Args:
        precision: ``fp32`` (default), or ``bf16``/``fp16`` autocast on CUDA (ignored on CPU,
            where autocast is slow and rarely supported by the ops used).
    """

    def __init__(self, precision: str = "fp32"):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
        self.precision = precision
        self._module: torch.nn.Module | None = None
        self._device = torch.device("cpu")

    # -- to implement -------------------------------------------------------------------------
    def _load_module(self) -> torch.nn.Module:
        """Build the network and load its weights (raise :class:`WeightsMissing` if absent)."""
        raise NotImplementedError

    def check_weights(self) -> None:
        """Raise :class:`WeightsMissing` if the weights cannot be found; never loads them."""

    # -- shared ---------------------------------------------------------------------------------
    @property
    def module(self) -> torch.nn.Module:
        if self._module is None:
            self.load()
        return self._module

    def load(self) -> "TorchAdapter":
        """Load weights (once) onto the current device, in eval mode."""
        if self._module is None:
            self._module = self._load_module().eval().to(self._device)
            for p in self._module.parameters():
                p.requires_grad_(False)
        return self

    def to(self, device) -> "TorchAdapter":
        self._device = torch.device(device)
        if self._module is not None:
            self._module.to(self._device)
        return self

    @property
    def device(self) -> torch.device:
        return self._device

    def n_params(self) -> int:
        """Number of parameters (loads the model)."""
        return sum(p.numel() for p in self.module.parameters())

    def autocast(self):
        """Autocast context for ``precision`` on CUDA; a no-op otherwise."""
        if self.precision == "fp32" or self._device.type != "cuda":
            return contextlib.nullcontext()
        return torch.autocast("cuda", dtype=PRECISIONS[self.precision])

    def round_trip(self, x: torch.Tensor):
        with self.autocast():
            return super().round_trip(x)


def require_file(path: str | Path, model: str, what: str, how: str) -> Path:
    """Return ``path`` if it exists, else raise :class:`WeightsMissing` naming model and remedy."""
    p = Path(path).expanduser()
    if not p.exists():
        raise WeightsMissing(f"model {model}: {what} not found at {p}. {how}")
    return p
