"""Where the config uses an API, and how those uses are resolved before any job runs.

Components name an endpoint (``endpoint: openai``) and may carry their own prompt template;
:func:`resolve_api` replaces the name by the endpoint's settings (a dict with ``name``, never a
key) and fills missing prompts from ``api.prompts``, so that every rule's params are
self-contained. Every template named below has its default text in ``config.schema.yaml``
(``api.prompts.properties``), filled in by the schema validation one template at a time: a
config names only the templates it changes, the others keep their defaults.
:func:`check_api_keys` then fails, naming the environment variable, when a used endpoint's key
is missing: before any work, not at the first request an hour in.

A use of ``type: transformers`` (the model runs in process,
:mod:`roundtrip.readers.transformers_vlm`) names no endpoint: it gets its default prompts from
the same ``api.prompts``, so that a prompt both paths send is one string, and its model is
located on this machine (a folder, or a hub id in the Hugging Face cache) instead, failing
before any work when it is not there.

Uses (config path -> prompt fields and their default template in ``api.prompts``):

- ``models.<m>`` with ``type: api_image``: ``prompt`` <- ``recreate``
- ``ocr.engines.<e>`` with ``type: vlm`` or ``transformers``: ``prompt`` <- ``ocr``
- ``audit.judge`` with ``type: vlm`` or ``transformers``: ``prompt`` <- ``judge``
- ``datasets.<d>`` with ``type: gpt_highres|gpt_detail|gpt_posters``: ``scenes_prompt`` <-
  ``{kind}_scenes``, ``image_prompt`` <- ``{kind}_image`` (kind without ``gpt_``)
- ``datasets.<d>.translate`` of an ``abstracts`` set: ``prompt`` <- ``translate``
- ``vista.readers.<r>`` with ``type: vlm|ocr_llm`` and ``vista.judge``: endpoint only (their
  prompts are presets, :mod:`roundtrip.readers.answerers`)
- an evaluation's own uses (``Evaluation.api_uses``), endpoint or in process (types
  ``transformers``: ``model``; ``diffusers``: ``t2i``, ``i2t``)
"""
from __future__ import annotations

from typing import Iterator

from roundtrip.api.endpoint import Endpoint
from roundtrip.api.errors import MissingApiKey

#: The ``type`` of a chat use that runs its model in process (no endpoint).
IN_PROCESS = "transformers"
#: Types of uses that run their models in process -> the keys that name their models (located
#: on this machine instead of resolving an endpoint): a chat VLM or a model that also draws
#: (``transformers``: ``model``), a diffusers pipeline with a transformers captioner
#: (``diffusers``: ``t2i``, ``i2t``).
IN_PROCESS_MODELS: dict[str, tuple[str, ...]] = {IN_PROCESS: ("model",),
                                                 "diffusers": ("t2i", "i2t")}
#: Types of the shared sections' chat uses (OCR engines, the render judge).
CHAT_TYPES = ("vlm", IN_PROCESS)


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
        if spec.get("type") in CHAT_TYPES:
            yield f"ocr.engines.{name}", spec, {"prompt": "ocr"}
    judge = (config.get("audit") or {}).get("judge")
    if judge and judge.get("type") in CHAT_TYPES:
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

    An in-process use (a type of :data:`IN_PROCESS_MODELS`, e.g. ``transformers``) gets its
    default prompts and has its models located (:func:`roundtrip.core.weights.local_model`);
    it uses no endpoint.

    Args:
        config: the config (modified in place).
        extra_uses: more ``(config path, spec, {prompt field: default template})`` uses, as
            :func:`api_uses` yields them (the evaluations' own).

    Raises:
        ApiConfigError: an unknown endpoint, bad endpoint settings, a prompt that is neither
            given nor in ``api.prompts``, or an in-process model that is not on this machine
            (the message names its key, e.g. ``<path>.model``, the hub id and how to fetch it).
    """
    api = config.get("api") or {}
    endpoints, prompts = api.get("endpoints") or {}, api.get("prompts") or {}
    used = []
    for path, spec, fields in [*api_uses(config), *extra_uses]:
        if spec.get("type") in IN_PROCESS_MODELS:
            _locate_models(path, spec, IN_PROCESS_MODELS[spec["type"]])
        else:
            used.append(_resolve_endpoint(path, spec, endpoints))
        _fill_prompts(path, spec, fields, prompts)
    return sorted(set(used))


def _resolve_endpoint(path: str, spec: dict, endpoints: dict) -> str:
    """Replace ``spec["endpoint"]`` (a name) by the endpoint's settings; returns the name."""
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
    return ref


def _fill_prompts(path: str, spec: dict, fields: dict[str, str], prompts: dict) -> None:
    """Set each prompt field ``spec`` leaves empty to its template in ``prompts``
    (``api.prompts``, defaults filled in by the schema).

    Raises:
        ApiConfigError: a field is empty and ``prompts`` has no such template (a config that
            did not go through the schema validation, or an evaluation's own template name).
    """
    for field, default in fields.items():
        if not spec.get(field):
            if default not in prompts:
                raise ApiConfigError(f"{path}.{field}: no prompt given and no default template "
                                     f"api.prompts.{default}")
            spec[field] = prompts[default]


def _locate_models(path: str, spec: dict, keys: tuple[str, ...]) -> None:
    from roundtrip.core.weights import ChecksumMismatch, WeightsMissing, local_model

    for key in keys:
        if not spec.get(key):
            raise ApiConfigError(f"{path}.{key}: required (a model folder or a hub id)")
        try:
            local_model(str(spec[key]), f"{path}.{key}")
        except (WeightsMissing, ChecksumMismatch) as exc:
            raise ApiConfigError(str(exc)) from exc


def check_api_keys(config: dict, used: list[str]) -> None:
    """The key of every endpoint in ``used`` (as returned by :func:`resolve_api`) is in the
    environment.

    Raises:
        MissingApiKey: the message names the variable (and the endpoint's config key).
    """
    for name in used:  # resolve_api found each of them under api.endpoints
        Endpoint.from_config(name, config["api"]["endpoints"][name]).api_key()


__all__ = ["CHAT_TYPES", "IN_PROCESS", "IN_PROCESS_MODELS", "ApiConfigError", "MissingApiKey",
           "api_uses", "check_api_keys", "resolve_api"]
