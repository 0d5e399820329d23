"""Where the config uses an API, and how those uses are resolved before any job runs.

Components name an endpoint (``endpoint: openai``) and may carry their own prompt template;
:func:`resolve_api` replaces the name by the endpoint's settings (a dict with ``name``, never a
key) and fills missing prompts from ``api.prompts``, so that every rule's params are
self-contained. :func:`check_api_keys` then fails, naming the environment variable, when a used
endpoint's key is missing: before any work, not at the first request an hour in.

Uses (config path -> prompt fields and their default template in ``api.prompts``):

- ``models.<m>`` with ``type: api_image``: ``prompt`` <- ``recreate``
- ``ocr.engines.<e>`` with ``type: vlm``: ``prompt`` <- ``ocr``
- ``audit.judge`` with ``type: vlm``: ``prompt`` <- ``judge``
- ``datasets.<d>`` with ``type: gpt_highres|gpt_detail|gpt_posters``: ``scenes_prompt`` <-
  ``{kind}_scenes``, ``image_prompt`` <- ``{kind}_image`` (kind without ``gpt_``)
- ``datasets.<d>.translate`` of an ``abstracts`` set: ``prompt`` <- ``translate``
- ``vista.readers.<r>`` with ``type: vlm|ocr_llm`` and ``vista.judge``: endpoint only (their
  prompts are presets, :mod:`roundtrip.readers.answerers`)
- ``telephone.pairs.<p>`` with ``type: api``: ``t2i_prompt`` <- ``telephone_t2i``,
  ``i2t_prompt`` <- ``telephone_i2t``
"""
from __future__ import annotations

from typing import Iterator

from roundtrip.api.client import Endpoint, MissingApiKey


class ApiConfigError(ValueError):
    """A bad API use in the config; the message starts with the config key."""


def api_uses(config: dict) -> Iterator[tuple[str, dict, dict[str, str]]]:
    """``(config path, spec dict, {prompt field: default template name})`` of every API use of
    the shared sections (models, OCR engines, the render judge, dataset synthesis); an
    evaluation's own uses come from its spec (``Evaluation.api_uses``)."""
    for name, spec in config.get("models", {}).items():
        if spec.get("type") == "api_image":
            yield f"models.{name}", spec, {"prompt": "recreate"}
    for name, spec in config.get("ocr", {}).get("engines", {}).items():
        if spec.get("type") == "vlm":
            yield f"ocr.engines.{name}", spec, {"prompt": "ocr"}
    judge = (config.get("audit") or {}).get("judge")
    if judge and judge.get("type") == "vlm":
        yield "audit.judge", judge, {"prompt": "judge"}
    for name, spec in config.get("datasets", {}).items():
        if str(spec.get("type", "")).startswith("gpt_"):  # the image-API dataset types
            kind = spec["type"].removeprefix("gpt_")
            yield f"datasets.{name}", spec, {"scenes_prompt": f"{kind}_scenes",
                                             "image_prompt": f"{kind}_image"}
        if spec.get("type") == "abstracts" and spec.get("translate"):
            yield f"datasets.{name}.translate", spec["translate"], {"prompt": "translate"}


def resolve_api(config: dict, extra_uses=()) -> list[str]:
    """Resolve endpoint names and default prompts in place; returns the used endpoint names.

    Args:
        config: the config (modified in place).
        extra_uses: more ``(config path, spec, {prompt field: default template})`` uses, as
            :func:`api_uses` yields them (the evaluations' own).

    Raises:
        ApiConfigError: an unknown endpoint, bad endpoint settings, or a prompt that is neither
            given nor in ``api.prompts``.
    """
    api = config.get("api") or {}
    endpoints, prompts = api.get("endpoints") or {}, api.get("prompts") or {}
    used = []
    for path, spec, fields in [*api_uses(config), *extra_uses]:
        ref = spec.get("endpoint")
        if isinstance(ref, dict):  # already resolved (config resolved twice)
            ref = ref["name"]
        if ref not in endpoints:
            raise ApiConfigError(f"{path}.endpoint: unknown endpoint {ref!r}; define it under "
                                 f"api.endpoints (known: {sorted(endpoints)})")
        try:
            Endpoint.from_config(ref, endpoints[ref])
        except TypeError as exc:
            raise ApiConfigError(f"api.endpoints.{ref}: {exc}") from exc
        spec["endpoint"] = {"name": ref, **endpoints[ref]}
        for field, default in fields.items():
            if not spec.get(field):
                if default not in prompts:
                    raise ApiConfigError(f"{path}.{field}: no prompt given and no default template "
                                         f"api.prompts.{default}")
                spec[field] = prompts[default]
        used.append(ref)
    return sorted(set(used))


def check_api_keys(config: dict, used: list[str]) -> None:
    """The key of every endpoint in ``used`` (as returned by :func:`resolve_api`) is in the
    environment.

    Raises:
        MissingApiKey: the message names the variable (and the endpoint's config key).
    """
    for name in used:  # resolve_api found each of them under api.endpoints
        Endpoint.from_config(name, config["api"]["endpoints"][name]).api_key()


__all__ = ["ApiConfigError", "MissingApiKey", "api_uses", "check_api_keys",
           "resolve_api"]
