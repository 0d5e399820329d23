"""GPT-image as a reconstruction row (family ``api``; VTBench Section 4, "GPT-4o as a reference").

Each image is sent to ``images.edit`` with the paper's reconstruction prompt (Sec. 4: "Please
recreate the exact same image without any alterations and preserve the original resolution.",
``api.prompts.recreate``) at 1024 x 1024, the resolution of the paper's GPT-4o row (Table 1); the
model's input size is 1024 x 1024, so ``model_size`` sets reach it at that size. The first
successful answer is kept (and cached, see
:mod:`roundtrip.api.client`). When the API answers at another size than the input (gpt-image-1
only produces 1024x1024, 1536x1024 and 1024x1536), the answer is resized to the input size with
Lanczos and the item's status records it, so no one mistakes the resize for the model's output.
"""
from __future__ import annotations

import numpy as np
import torch

from roundtrip.models.base import Adapter, ModelInfo
from roundtrip.models.codecs import _from_uint8, _to_uint8


class ApiImageModel(Adapter):
    """Reconstruction through an image-edit API (config ``type: api_image``).

    Args:
        endpoint: resolved ``api.endpoints`` entry (:func:`roundtrip.api.settings.resolve_api`).
        model: image model at the endpoint (``gpt-image-1``).
        prompt: template; ``{width}`` and ``{height}`` (optional) become the input size in pixels.
        size: the ``size`` request parameter, default ``1024x1024`` (VTBench Table 1's GPT-4o
            row; ``auto`` lets the API choose); an answer at another size is resized to the input
            size and noted.
        params: further ``images.edit`` parameters (e.g. ``{"quality": "high"}``).

    Raises:
        ValueError: the endpoint is not resolved or the prompt is empty.
    """

    def __init__(self, endpoint: dict, model: str = "gpt-image-1", prompt: str = "",
                 size: str = "1024x1024", params: dict | None = None):
        if not isinstance(endpoint, dict):
            raise ValueError("endpoint: not resolved; name an entry of api.endpoints")
        if not prompt:
            raise ValueError("prompt: empty (set it, or api.prompts.recreate)")
        self.endpoint, self.model, self.prompt = endpoint, model, prompt
        self.size, self.params = size, dict(params or {})
        self._notes: list[str] = []

    def info(self) -> ModelInfo:
        # 1024 x 1024: the input size of VTBench's GPT-4o row (Table 1); any size is accepted
        return ModelInfo(family="api", native_sizes=[(1024, 1024)])

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Sends each item of ``x`` (``[B, 3, H, W]`` in ``[-1, 1]``) to the API; the "latent" is
        the returned image batch (the API's tokens are not observable).

        Raises:
            ApiError: any item failed after retries (the harness then retries items one by one,
                answered from the cache where they succeeded).
        """
        from roundtrip.api.client import client_for
        from roundtrip.api.images import decode_at_size, png_bytes

        client = client_for(self.endpoint)
        h, w = x.shape[-2:]
        prompt = self.prompt.format(width=w, height=h)
        pngs = [png_bytes(arr) for arr in _to_uint8(x)]
        params = {"size": self.size, **self.params} if self.size else dict(self.params)
        replies = client.map(lambda png: client.edit_image(self.model, png, prompt, **params), pngs)
        errors = [r for r in replies if isinstance(r, Exception)]
        if errors:
            raise errors[0]
        decoded = [decode_at_size(reply.image_bytes(), w, h) for reply in replies]
        self._notes = [note for _, note in decoded]
        return _from_uint8(np.stack([img for img, _ in decoded])).to(x.device)

    def decode(self, latent: torch.Tensor) -> torch.Tensor:
        return latent

    def take_notes(self, n: int) -> list[str]:
        """Per-item notes of the last batch (resizes), then cleared."""
        notes, self._notes = self._notes, []
        return notes if len(notes) == n else [""] * n
