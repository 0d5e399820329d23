"""Building a component from its config entry through a registry (models, VISTA readers)."""
from __future__ import annotations


def build_registered(registry: dict, spec: dict, key: str, what: str):
    """``registry[spec["type"]](**other keys)``, with errors that name the config key.

    Args:
        registry: config ``type`` -> class.
        spec: the config entry, ``{"type": ..., **constructor arguments}`` (not modified).
        key: the entry's config path, e.g. ``models.small_vq``.
        what: the kind of component in messages, e.g. ``model``.

    Raises:
        ValueError: ``{key}.type: unknown {what} type ...`` with the known types, or
            ``{key}: <the constructor's TypeError or ValueError>``.
    """
    spec = dict(spec)
    kind = spec.pop("type", None)
    if kind not in registry:
        raise ValueError(f"{key}.type: unknown {what} type {kind!r}; known: {sorted(registry)}")
    try:
        return registry[kind](**spec)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{key}: {exc}") from exc
