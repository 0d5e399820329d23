"""Model zoo: the registry that turns a ``models:`` config entry into an :class:`Adapter`."""
from __future__ import annotations

from roundtrip.core.manifest import ORIGINAL  # noqa: F401 - the reserved model name, here too
from roundtrip.core.registry import build_registered
from roundtrip.core.weights import WeightsMissing
from roundtrip.models.api_backend import ApiImageModel
from roundtrip.models.base import (DISCRETE_FAMILIES, FAMILIES, Adapter, ModelInfo, item_seed,
                                   seeded)
from roundtrip.models.codecs import Identity, Jpeg, Resample, Webp
from roundtrip.models.custom import StateDictModel, TorchScriptModel
from roundtrip.models.diffusers_backend import DiffusersKL, DiffusersVQ
from roundtrip.models.monai_backend import MonaiKL, MonaiVQVAE
from roundtrip.models.outputs import DEFAULT_TOLERANCE, OutputError
from roundtrip.models.small import SmallTokenizer
from roundtrip.models.torch_base import TorchAdapter

#: config ``type`` -> adapter class.
MODEL_TYPES: dict[str, type[Adapter]] = {
    "identity": Identity,
    "jpeg": Jpeg,
    "webp": Webp,
    "resample": Resample,
    "diffusers_kl": DiffusersKL,
    "diffusers_vq": DiffusersVQ,
    "monai_kl": MonaiKL,
    "monai_vqvae": MonaiVQVAE,
    "torchscript": TorchScriptModel,
    "state_dict": StateDictModel,
    "small": SmallTokenizer,
    "api_image": ApiImageModel,
}

#: Types whose weights the workflow trains itself (rule train_tokenizer).
TRAINED_TYPES = ("small",)
#: Types that are pixel codecs: no network, never on a GPU.
CODEC_TYPES = ("identity", "jpeg", "webp", "resample")

#: Keys of a ``models`` entry that belong to the workflow, not to the adapter's constructor.
WORKFLOW_KEYS = ("batch_size", "output_tolerance", "stochastic", "seed", "item_timeout_s")


def build_model(name: str, spec: dict) -> Adapter:
    """Instantiate the model ``name`` from its config entry.

    Args:
        name: config key (used in paths and tables).
        spec: ``{"type": ..., **constructor arguments}``.

    Raises:
        ValueError: unknown type or bad arguments; the message names ``models.<name>``.
    """
    tolerance = spec.get("output_tolerance", DEFAULT_TOLERANCE)
    model = build_registered(MODEL_TYPES, {k: v for k, v in spec.items()
                                           if k not in WORKFLOW_KEYS}, f"models.{name}", "model")
    model.name, model.output_tolerance = name, float(tolerance)
    model.stochastic, model.seed = bool(spec.get("stochastic", False)), int(spec.get("seed", 0))
    timeout = spec.get("item_timeout_s")
    model.item_timeout_s = float(timeout) if timeout else None
    return model


__all__ = ["CODEC_TYPES", "DISCRETE_FAMILIES", "FAMILIES", "MODEL_TYPES", "ORIGINAL", "TRAINED_TYPES", "Adapter", "ModelInfo",
           "OutputError", "TorchAdapter", "WeightsMissing", "build_model", "item_seed", "seeded"]
