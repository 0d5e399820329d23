"""The one adapter interface every model sits behind (DESIGN.md, "Model").

A model reconstructs images through ``encode`` then ``decode``. Inputs and outputs are float32
tensors ``[B, C, H, W]`` (or ``[B, C, D, H, W]`` for volumes) with values in ``[-1, 1]``; an adapter
converts to its own input range internally. What ``encode`` returns (the latent) is the model's
business: a float tensor for VAEs, codes for tokenizers, compressed bytes for codecs.
"""
from __future__ import annotations

import contextlib
import hashlib
import random
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from roundtrip.core.limits import time_limit
from roundtrip.models.diagnosis import diagnose, diagnose_set
from roundtrip.models.outputs import (DEFAULT_TOLERANCE, OutputError, reconstruction_defects,
                                      repeat_defect, token_defects)

#: Model families (DESIGN.md). ``codec`` covers classical baselines (JPEG, WebP, resampling).
FAMILIES = ("continuous", "VQ", "LFQ", "BSQ", "RVQ", "RBSQ", "codec", "api")
#: Families whose models must return token ids (:meth:`Adapter.tokens`).
DISCRETE_FAMILIES = ("VQ", "LFQ", "BSQ", "RVQ", "RBSQ")


@dataclass
class ModelInfo:
    """Static description of a model, for the model card and protocol decisions.

    Attributes:
        family: one of :data:`FAMILIES`.
        params: number of learnable parameters (0 for codecs).
        native_sizes: ``(H, W)`` sizes the model was trained at; empty = any size.
        downsample: spatial reduction factor of the latent grid (1 for pixel codecs).
        codebook_size: number of codes for discrete models, else ``None``.
        fixed_size: True when only ``native_sizes`` are accepted.
    """
    family: str
    params: int = 0
    native_sizes: list[tuple[int, int]] = field(default_factory=list)
    downsample: int = 1
    codebook_size: int | None = None
    fixed_size: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


class Adapter(ABC):
    """Base class of all model adapters.

    Subclasses implement :meth:`encode`, :meth:`decode` and :meth:`info`; discrete models also
    :meth:`tokens`. ``supports`` says whether an input size can be processed; the harness records
    an unsupported size as ``unsupported`` rather than forcing it.
    """

    #: Set by the registry: the config key of this model.
    name: str = ""
    #: How far outside ``[-1, 1]`` outputs may reach (``models.<name>.output_tolerance``;
    #: :mod:`roundtrip.models.outputs`). Set by the registry.
    output_tolerance: float = DEFAULT_TOLERANCE
    #: The model samples (``models.<name>.stochastic``): every item is reconstructed alone under
    #: a seed of its own (:func:`item_seed`), so its output repeats run to run and does not
    #: depend on its batch. Set by the registry.
    stochastic: bool = False
    #: The seed the items' seeds derive from (``models.<name>.seed``). Set by the registry.
    seed: int = 0
    #: Seconds an item's forward pass may take before it is stopped and the item fails
    #: (``models.<name>.item_timeout_s``; None: no limit). Set by the registry.
    item_timeout_s: float | None = None

    @abstractmethod
    def encode(self, x: torch.Tensor) -> Any:
        """``x``: float32 ``[B, C, H, W]`` in ``[-1, 1]`` -> latent (model-specific)."""

    @abstractmethod
    def decode(self, latent: Any) -> torch.Tensor:
        """Latent -> float32 ``[B, C, H, W]`` in ``[-1, 1]`` (same size as the encoded input)."""

    @abstractmethod
    def info(self) -> ModelInfo:
        """Static model description."""

    def tokens(self, latent: Any) -> torch.Tensor | None:
        """Discrete token ids ``LongTensor [B, h, w]`` (or ``[B, n]``), ``None`` if continuous."""
        return None

    def latent_tensor(self, latent: Any) -> torch.Tensor | None:
        """The latent as a float tensor ``[B, C, h, w]`` for saving, ``None`` if it is not one
        (e.g. a codec's bitstream). Dict latents use their ``latent``/``quant``/``low`` entry."""
        if torch.is_tensor(latent):
            return latent
        if isinstance(latent, dict):
            for key in ("latent", "quant", "low"):
                if torch.is_tensor(latent.get(key)):
                    return latent[key]
        return None

    def latent_shape(self, h: int, w: int) -> tuple[int, ...] | None:
        """Shape of one item's latent for an ``h x w`` input, ``None`` if not a tensor."""
        return None

    def supports(self, h: int, w: int) -> bool:
        """Whether an ``h x w`` input can be reconstructed without resizing."""
        info = self.info()
        if info.fixed_size:
            return (h, w) in [tuple(s) for s in info.native_sizes]
        return True

    def take_notes(self, n: int) -> list[str]:
        """Per-item remarks on the last batch of ``n`` items (e.g. an API answer that had to be
        resized), recorded in the ``reason`` column of ok items. Default: none."""
        return [""] * n

    def round_trip(self, x: torch.Tensor) -> tuple[Any, Any]:
        """``(latent, decode(latent))`` with ``latent = encode(x)``, as the model returns them,
        unchecked (:meth:`reconstruct_items` checks them); an adapter may wrap it (precision)."""
        latent = self.encode(x)
        return latent, self.decode(latent)

    @torch.no_grad()
    def reconstruct_items(self, x: torch.Tensor, seeds: list[int] | None = None,
                          limit_s: float | None = None, pooled: bool = False
                          ) -> tuple[torch.Tensor | None, list[str]]:
        """:meth:`round_trip` of ``x`` with every item checked: the reconstruction
        (:func:`~roundtrip.models.outputs.reconstruction_defects`: shape, finite values, the value
        range within :attr:`output_tolerance`), the convention mistakes a simple fix would
        explain (:func:`~roundtrip.models.diagnosis.diagnose`: range, channel order,
        orientation, shift; not for the ``api`` family, whose image models re-draw) and, for a discrete family, the token ids
        (:func:`~roundtrip.models.outputs.token_defects`: ``0 <= id < codebook_size``).

        Args:
            x: float32 ``[B, C, H, W]`` (or ``[B, C, D, H, W]``) in ``[-1, 1]``.
            seeds: for a :attr:`stochastic` model, one seed per item: each item is then
                reconstructed alone under its seed (:func:`seeded`). Ignored otherwise.
            limit_s: seconds the model's forward pass may take (each item's, for a stochastic
                model), the checks apart; None: no limit.
            pooled: the items are parts of one thing (the slices of a volume): the diagnosis
                pools them (:func:`~roundtrip.models.diagnosis.diagnose_set`) and its finding,
                if any, is every item's reason.

        Returns:
            ``(y, reasons)``: float32 ``y`` of ``x``'s shape clamped to ``[-1, 1]`` (None where the
            whole batch failed), and one reason per item, ``""`` for an item that passed (the
            values of a failed item are not to be used).

        Raises:
            roundtrip.core.limits.TimeLimitExceeded: the forward pass ran past ``limit_s``.
        """
        if self.stochastic and seeds is not None:
            return self._reconstruct_seeded(x, seeds, limit_s)
        with time_limit(limit_s):
            latent, y = self.round_trip(x)
        info = self.info()
        reasons = reconstruction_defects(x, y, self.name, info.downsample, self.output_tolerance)
        if info.family != "api" and any(not r for r in reasons):
            # an image API re-draws its input (VTBench's GPT-4o row): scored as it answers
            unit = getattr(self, "unit_range", None)
            found = [diagnose_set(x, y)] * len(x) if pooled else diagnose(x, y)
            reasons = [r or (f.reason(self.name, unit) if f else "")
                       for r, f in zip(reasons, found)]
        if info.family in DISCRETE_FAMILIES:
            ids = self.tokens(latent)
            if ids is not None:
                reasons = [r or t for r, t in zip(reasons, token_defects(
                    ids, len(x), self.name, info.codebook_size))]
        if not torch.is_tensor(y) or y.shape != x.shape or not y.is_floating_point():
            return None, reasons
        return y.float().clamp_(-1.0, 1.0), reasons

    @torch.no_grad()
    def repeat_defect(self, x: torch.Tensor, seeds: list[int] | None = None) -> str:
        """Reconstruct the first item of ``x`` twice, alone, and compare the two
        (:func:`~roundtrip.models.outputs.repeat_defect`): ``""`` where they agree, else why the
        model cannot be scored (an active dropout or sampling). The item alone both times, not
        against its reconstruction in the batch: a quantizer's nearest code may change with the
        batch's last bits, which is no sampling. A :attr:`stochastic` model runs under the
        item's seed both times (``seeds[0]``).

        Args:
            x: the batch the model reconstructed, float ``[B, C, H, W]`` in ``[-1, 1]``.
            seeds: the items' seeds, for a stochastic model.
        """
        if self.info().family in ("codec", "api"):
            return ""  # pixel codecs are roundtrip's deterministic code; an API call is paid
        seed = seeds[0] if self.stochastic and seeds else None
        outputs = []
        for _ in range(2):
            with seeded(seed) if seed is not None else contextlib.nullcontext():
                _, y = self.round_trip(x[:1])
            outputs.append(y.float().clamp(-1.0, 1.0) if torch.is_tensor(y) else y)
        if not torch.is_tensor(outputs[0]):
            return ""  # the output checks speak for it
        return repeat_defect(outputs[0], outputs[1], self.name, self.stochastic)

    def _reconstruct_seeded(self, x: torch.Tensor, seeds: list[int], limit_s: float | None
                            ) -> tuple[torch.Tensor | None, list[str]]:
        """:meth:`reconstruct_items` of each item alone under its seed (a failed item's values
        are zeros)."""
        if len(seeds) != len(x):
            raise ValueError(f"{len(seeds)} seeds for {len(x)} items")
        ys, reasons = [], []
        for i, s in enumerate(seeds):
            with seeded(s):
                y, why = self.reconstruct_items(x[i:i + 1], limit_s=limit_s)
            ys.append(y if y is not None else torch.zeros_like(x[i:i + 1]))
            reasons += why
        if all(reasons):
            return None, reasons
        return torch.cat(ys), reasons

    @torch.no_grad()
    def reconstruct(self, x: torch.Tensor, pooled: bool = False) -> torch.Tensor:
        """``decode(encode(x))``, checked (:meth:`reconstruct_items`, ``pooled`` as there),
        clamped to ``[-1, 1]``.

        Raises:
            OutputError: an item's output failed a check; ``reasons`` holds one per item.
        """
        y, reasons = self.reconstruct_items(x, pooled=pooled)
        if any(reasons):
            raise OutputError(reasons)
        return y

    def checked_tokens(self, latent: Any, n: int) -> torch.Tensor | None:
        """:meth:`tokens` of a latent of ``n`` items, checked
        (:func:`~roundtrip.models.outputs.token_defects`: integer ids, one row per item,
        ``0 <= id < codebook_size``); None for a model without tokens.

        Raises:
            OutputError: an item's ids failed a check; ``reasons`` holds one per item.
        """
        ids = self.tokens(latent)
        if ids is None:
            return None
        reasons = token_defects(ids, n, self.name, self.info().codebook_size)
        if any(reasons):
            raise OutputError(reasons)
        return ids

    def to(self, device: torch.device) -> "Adapter":
        """Move weights to ``device`` (no-op for codecs)."""
        return self

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")


def item_seed(seed: int, item_id: str) -> int:
    """The seed of one item of a stochastic model: the first 8 bytes of
    ``sha256(f"{seed}:{item_id}")`` as an integer in ``[0, 2**63)`` (the same for the item in every
    run, batch and shard)."""
    digest = hashlib.sha256(f"{seed}:{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@contextlib.contextmanager
def seeded(seed: int):
    """Seed torch (CPU and CUDA), NumPy's global generator and :mod:`random` with ``seed``, so
    that a sampling model's call repeats; the generators' states are restored afterwards."""
    py, np_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=range(torch.cuda.device_count())
                               if torch.cuda.is_available() else []):
        torch.manual_seed(seed)
        np.random.seed(seed % 2 ** 32)
        random.seed(seed)
        try:
            yield
        finally:
            random.setstate(py)
            np.random.set_state(np_state)
