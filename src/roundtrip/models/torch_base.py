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


def read_weights(path: str | Path, key: str, loader=None):
    """``torch.load(path, map_location="cpu", weights_only=True)`` (or ``loader(path)``), with a
    message that names the file when it cannot be read.

    Args:
        path: an existing file (:func:`require_file` first).
        key: the config key that names it (``models.my_vq.state_dict``).
        loader: a function of the path that reads it instead (``torch.jit.load``).

    Raises:
        ValueError: starting with ``key``: the file is empty, holds more than tensors (a
            pickled object that ``weights_only`` refuses), or is truncated or not a PyTorch file
            (torch's own errors for these say ``Invalid argument``, ``EOFError`` or a
            ``KeyError``); the message names the path and its size in bytes.
    """
    import pickle
    import warnings

    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        raise ValueError(f"{key}: {path} is empty (0 bytes): copy the weights file again")
    try:
        with warnings.catch_warnings():  # torch.jit.load's deprecation notice, once per load
            warnings.simplefilter("ignore", FutureWarning)
            if loader is not None:
                return loader(str(path))
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "Unsupported global" in str(exc):  # a pickled object, not the file's bytes
            raise ValueError(f"{key}: {path} holds more than tensors (torch.load with "
                             "weights_only refuses it): save model.state_dict() instead of the "
                             "model object") from exc
        raise ValueError(_unreadable(key, path, size, exc)) from exc
    except Exception as exc:  # noqa: BLE001 - torch's errors for a bad file are of many kinds
        raise ValueError(_unreadable(key, path, size, exc)) from exc


def _unreadable(key: str, path: Path, size: int, exc: Exception) -> str:
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    first = first.split(". ")[0][:160]  # torch's first sentence says what failed
    return (f"{key}: {path} ({size:,} bytes) is truncated or not a PyTorch file "
            f"({type(exc).__name__}{': ' + first if first else ''}): copy it again in "
            f"full, or point {key} at a file torch.save wrote")
