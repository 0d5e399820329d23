"""Config checks that JSON schema cannot express, run before any job starts.

``config.schema.yaml`` checks types, ranges and required keys; :func:`check_config` then builds
every model and OCR engine once (without loading weights) and checks that every model's weights
can be found, so a bad parameter or a missing checkpoint fails at DAG-build time with the key
named, not an hour into a cluster run.
"""
from __future__ import annotations

from .models import ORIGINAL, TRAINED_TYPES, WeightsMissing, build_model
from .ocr import build_ocr


class ConfigError(ValueError):
    """Invalid configuration; the message starts with the offending key."""


def check_config(config: dict) -> None:
    """Validate cross-key constraints of a schema-validated config.

    Raises:
        ConfigError: naming the key, e.g. ``models.jpeg_q10.quality: quality must be in 1..100``.
    """
    if ORIGINAL in config.get("models", {}):
        raise ConfigError(f"models.{ORIGINAL}: the name '{ORIGINAL}' is reserved for the unmodified "
                          "originals; rename the model")
    datasets = config.get("datasets", {})
    for name, spec in config.get("models", {}).items():
        try:
            model = build_model(name, spec)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        if spec["type"] in TRAINED_TYPES:
            unknown = [d for d in spec.get("train", {}).get("datasets", []) if d not in datasets]
            if unknown:
                raise ConfigError(f"models.{name}.train.datasets: unknown datasets {unknown}")
        elif hasattr(model, "check_weights"):
            try:
                model.check_weights()
            except WeightsMissing as exc:
                raise ConfigError(f"models.{name}: {exc}") from exc
    for name, spec in config.get("ocr", {}).get("engines", {}).items():
        try:
            build_ocr(name, spec)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"ocr.engines.{name}: {exc}") from exc
    for name, spec in config.get("datasets", {}).items():
        if spec.get("text_eval") and not config.get("ocr", {}).get("engines"):
            raise ConfigError(f"datasets.{name}.text_eval: needs at least one engine in ocr.engines")
        if spec["type"] == "skimage":
            from .datasets import SKIMAGE_BUNDLED

            unknown = [i for i in spec.get("images", []) if i not in SKIMAGE_BUNDLED]
            if unknown:
                raise ConfigError(f"datasets.{name}.images: not bundled with scikit-image: {unknown}; "
                                  f"choose from {sorted(SKIMAGE_BUNDLED)}")
