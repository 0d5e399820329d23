"""diffusers autoencoders: ``AutoencoderKL`` (SD 1.x/2.x, SDXL, SD3.5, FLUX VAEs) and ``VQModel``.

Weights come from a local directory (``save_pretrained`` layout) or a Hugging Face hub id that is
already in the local hub cache. Downloads happen only with ``allow_download: true``; otherwise a
missing model raises :class:`WeightsMissing` naming what was tried and how to provide it.
"""
from __future__ import annotations

import os
from pathlib import Path

from roundtrip.core.weights import WeightsMissing
from roundtrip.models.base import ModelInfo
from roundtrip.models.torch_base import TorchAdapter


def _hub_cache() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


class _DiffusersAdapter(TorchAdapter):
    """Common loading logic.

    Args:
        weights: local directory, or hub id (``org/name``) present in the hub cache.
        subfolder: e.g. ``vae`` for a full pipeline repository.
        revision: hub revision.
        allow_download: fetch from the hub when missing (needs internet).
        native_size: training resolution override (default: the config's ``sample_size``).
        precision: see :class:`TorchAdapter`.
    """

    model_class = ""

    def __init__(self, weights: str, subfolder: str | None = None, revision: str | None = None,
                 allow_download: bool = False, native_size: int | None = None,
                 precision: str = "fp32"):
        super().__init__(precision)
        if not weights:
            raise ValueError("weights (a local directory or hub id) is required")
        self.weights, self.subfolder, self.revision = weights, subfolder, revision
        self.allow_download, self.native_size = bool(allow_download), native_size

    def _source(self) -> str:
        return str(Path(self.weights).expanduser()) if Path(self.weights).expanduser().exists() \
            else self.weights

    def _missing(self, detail: str = "") -> WeightsMissing:
        local = Path(self.weights).expanduser()
        return WeightsMissing(
            f"model {self.name}: cannot load {self.model_class} weights '{self.weights}'"
            f"{f' (subfolder {self.subfolder})' if self.subfolder else ''}: not a local directory "
            f"({local}) and not in the Hugging Face cache ({_hub_cache()}). {detail}"
            f"To provide them: on a machine with internet run `huggingface-cli download "
            f"{self.weights}` and copy the cache to {_hub_cache()}, or save the model to a folder "
            f"and set models.{self.name}.weights to that folder; or set "
            f"models.{self.name}.allow_download: true.")

    def check_weights(self) -> None:
        src = self._source()
        if Path(src).exists():
            cfg = Path(src) / (self.subfolder or "") / "config.json"
            if not cfg.exists():
                raise self._missing(f"{cfg} does not exist. ")
            return
        if self.allow_download:
            return
        from huggingface_hub import try_to_load_from_cache

        name = f"{self.subfolder}/config.json" if self.subfolder else "config.json"
        try:
            found = try_to_load_from_cache(self.weights, name, revision=self.revision)
        except ValueError:  # a path that is not there is no hub id either (HFValidationError)
            found = None
        if not isinstance(found, str):
            raise self._missing()

    def _from_pretrained(self, cls):
        kwargs = {"local_files_only": not self.allow_download}
        if self.subfolder:
            kwargs["subfolder"] = self.subfolder
        if self.revision:
            kwargs["revision"] = self.revision
        try:
            return cls.from_pretrained(self._source(), **kwargs)
        except (OSError, ValueError) as exc:
            if os.environ.get("ROUNDTRIP_DEBUG"):
                raise
            raise self._missing(f"({type(exc).__name__}: {str(exc)[:200]}) ") from exc

    def _downsample(self) -> int:
        return 2 ** (len(self.module.config.block_out_channels) - 1)

    def _native_sizes(self):
        size = self.native_size or self.module.config.sample_size
        size = size if isinstance(size, int) else size[0]
        return [(int(size), int(size))]


class DiffusersKL(_DiffusersAdapter):
    """``AutoencoderKL``: latent = posterior mode (deterministic), scaled as the model's pipelines
    do, ``z = (mode - shift_factor) * scaling_factor`` (shift 0 when absent)."""

    model_class = "AutoencoderKL"

    def _load_module(self):
        from diffusers import AutoencoderKL

        return self._from_pretrained(AutoencoderKL)

    def _factors(self):
        cfg = self.module.config
        return float(cfg.scaling_factor or 1.0), float(getattr(cfg, "shift_factor", None) or 0.0)

    def encode(self, x):
        scale, shift = self._factors()
        mode = self.module.encode(x.to(self.device)).latent_dist.mode()
        return (mode - shift) * scale

    def decode(self, latent):
        scale, shift = self._factors()
        return self.module.decode(latent / scale + shift).sample

    def latent_shape(self, h, w):
        f = self._downsample()
        return (int(self.module.config.latent_channels), h // f, w // f)

    def info(self):
        return ModelInfo(family="continuous", params=self.n_params(),
                         native_sizes=self._native_sizes(), downsample=self._downsample())


class DiffusersVQ(_DiffusersAdapter):
    """``VQModel``: latent = pre-quantization features; ``tokens`` = nearest codebook indices."""

    model_class = "VQModel"

    def _load_module(self):
        from diffusers import VQModel

        return self._from_pretrained(VQModel)

    def encode(self, x):
        return self.module.encode(x.to(self.device)).latents

    def decode(self, latent):
        return self.module.decode(latent).sample

    def tokens(self, latent):
        _, _, (_, _, idx) = self.module.quantize(latent)
        b, _, h, w = latent.shape
        return idx.reshape(b, h, w).long()

    def latent_shape(self, h, w):
        f = self._downsample()
        return (int(self.module.config.vq_embed_dim or self.module.config.latent_channels),
                h // f, w // f)

    def info(self):
        return ModelInfo(family="VQ", params=self.n_params(), native_sizes=self._native_sizes(),
                         downsample=self._downsample(),
                         codebook_size=int(self.module.config.num_vq_embeddings))
