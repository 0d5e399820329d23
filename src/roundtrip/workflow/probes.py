"""Every model of a config probed before any job (:mod:`roundtrip.models.probe`), at the input
sizes the config's datasets will give it, with the result cached by the model's fingerprint.

The sizes follow the protocols (:mod:`roundtrip.core.protocols`): ``model_size`` gives the
model's native size (``size`` for any-size models), ``fixed_1024`` 1024 x 1024, ``fixed`` the
dataset's ``size``, ``native_resize`` the native size; ``native`` (images at their own, varying
sizes) and 2D models on volume slices are padded to a multiple of ``downsample``, so the probe
sends an odd multiple of it (:func:`~roundtrip.models.probe.padding_size`), which is what shows
a wrong ``downsample``. Every size is padded as the protocol pads it.

Not probed: models the workflow trains (no weights before their job; their code is roundtrip's),
the pixel codecs (roundtrip's own code, no weights: their settings are checked when they are
built), API models (a probe would be a paid request), and 3D models' forward pass (they are
loaded only: their windows are set per dataset by MediBench's ``roi_size``).

The cache, ``.snakemake/roundtrip/probes/{model}.json`` under the working directory, holds the
fingerprint (the model's config entry, the sizes, the size and time of every file the entry names
and of the module of ``import_path``) and the result: a rerun with nothing changed does not load
the model again.

The models that readers, judges and pairs run in process (OCR engines, the render judge, VISTA
readers, Telephone pairs) are checked without loading them (:func:`in_process_problems`): each
is on this machine, and one that reads images holds an image-text model, as its ``config.json``
says.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

from roundtrip.core.protocols import DEFAULT_ANY_SIZE
from roundtrip.core.weights import WeightsMissing
from roundtrip.models import CODEC_TYPES, ORIGINAL, TRAINED_TYPES, Adapter, build_model
from roundtrip.models.probe import ProbeError, ProbeResult, load_model, padding_size, probe_model
from roundtrip.stages.volumes import is_3d

#: Where probe results are kept, relative to the working directory.
CACHE = Path(".snakemake/roundtrip/probes")
#: Model types that are not probed (see the module docstring).
UNPROBED_TYPES = (*TRAINED_TYPES, *CODEC_TYPES, "api_image")
#: Keys of a model entry that name files (their size and time enter the fingerprint).
FILE_KEYS = ("path", "state_dict", "checkpoint", "weights")


def probe_config(config: dict, cache: Path | None = CACHE) -> dict[str, ProbeResult]:
    """Probe every model of a schema-validated ``config`` (see the module docstring); nothing
    with ``run.probe_models: false``.

    Returns:
        model name -> :class:`ProbeResult` of the probed models.

    Raises:
        ProbeError: one line per model that failed, each starting with its config key.
    """
    results, problems = {}, []
    if not config.get("run", {}).get("probe_models", True):
        return results
    for name, spec in (config.get("models") or {}).items():
        if spec.get("type") in UNPROBED_TYPES or name == ORIGINAL:
            continue
        try:
            results[name] = probe_cached(name, spec, config, cache)
        except (ProbeError, ValueError, WeightsMissing) as exc:
            text = " ".join(str(exc).split())
            problems.append(text if text.startswith("models.") else f"models.{name}: {text}")
    if problems:
        raise ProbeError("\n".join(problems))
    return results


def probe_cached(name: str, spec: dict, config: dict, cache: Path | None = CACHE) -> ProbeResult:
    """:func:`~roundtrip.models.probe.probe_model` of one model, or its cached result when the
    fingerprint is unchanged.

    Raises:
        ProbeError, ValueError: the model does not build, load or round-trip; the message
            starts with its key.
    """
    model = build_model(name, spec)
    if is_3d(model):
        load_model(model)  # volumes go through windows sized per dataset: loaded, not run
        return ProbeResult()
    sizes = model_sizes(name, model, config)
    key = fingerprint(spec, sizes)
    path = cache / f"{name}.json" if cache is not None else None
    if path is not None and path.is_file():
        try:
            stored = json.loads(path.read_text())
            if stored.get("fingerprint") == key:
                return ProbeResult.from_dict(stored["result"])
        except (ValueError, KeyError, TypeError):
            pass  # a damaged cache entry is probed again
    result = probe_model(model, sizes)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"fingerprint": key, "result": result.as_dict()}))
        tmp.replace(path)
    return result


def model_sizes(name: str, model: Adapter, config: dict) -> list[tuple[int, int]]:
    """The ``(H, W)`` inputs the config's datasets give ``model``, padded to its downsample
    factor, in first-use order (loads the model: :meth:`Adapter.info` may count parameters).

    Raises:
        ProbeError: the model cannot be loaded.
    """
    load_model(model)
    info = model.info()
    d = max(1, int(info.downsample))
    native = tuple(info.native_sizes[0]) if info.native_sizes else None
    sizes = []
    for dataset, spec in (config.get("datasets") or {}).items():
        if name not in (spec.get("models") or config["models"]):
            continue
        sizes.extend(_dataset_sizes(spec, native, info.fixed_size, d))
    if not sizes and not info.fixed_size:
        sizes.append(padding_size(d))
    padded = [(-(-h // d) * d, -(-w // d) * d) for h, w in sizes]
    return list(dict.fromkeys(padded))


def _dataset_sizes(spec: dict, native, fixed_size: bool, d: int) -> list[tuple[int, int]]:
    from roundtrip.datasets import is_volume_spec

    protocol = spec.get("protocol", "native")
    side = spec.get("size") or DEFAULT_ANY_SIZE
    if is_volume_spec(spec) or protocol == "native":
        return [] if fixed_size else [padding_size(d)]
    if protocol in ("model_size", "native_resize"):
        return [native or (side, side)]
    if protocol == "fixed_1024":
        return [(1024, 1024)]
    return [(side, side)]  # fixed


def fingerprint(spec: dict, sizes: list[tuple[int, int]]) -> str:
    """sha256 of the model's entry, the probe sizes and the size and modification time of the
    files it names (and of its ``import_path`` module's file): a new checkpoint or an edited
    model class is probed again."""
    files = {}
    for key in FILE_KEYS:
        value = spec.get(key)
        if isinstance(value, str):
            files[key] = _stat(Path(value).expanduser())
    if spec.get("import_path"):
        files["module"] = _stat(_module_file(spec))
    blob = json.dumps({"spec": spec, "sizes": sizes, "files": files}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _stat(path: Path | None) -> list | None:
    try:
        st = path.stat()
    except (OSError, AttributeError, TypeError):
        return None
    return [str(path), st.st_size, st.st_mtime_ns]


def _module_file(spec: dict) -> Path | None:
    """The file of ``import_path``'s module, found without importing it (None if not found)."""
    module = str(spec["import_path"]).split(":", 1)[0]
    folders = spec.get("pythonpath") or []
    folders = [folders] if isinstance(folders, str) else list(folders)
    saved = list(sys.path)
    sys.path[:0] = [str(Path(f).expanduser()) for f in folders]
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    finally:
        sys.path[:] = saved
    return Path(found.origin) if found and found.origin else None


# -- one model under two names ---------------------------------------------------------------
#: Keys of a model entry that change how a job runs, not what the model returns.
RUN_KEYS = ("batch_size", "output_tolerance", "item_timeout_s")


def duplicate_models(models: dict) -> list[str]:
    """One line per model entry that is another entry under a second name: the same type and
    settings (every key but :data:`RUN_KEYS`), the same weights (files of equal SHA-256, a
    diffusers folder or hub id that resolves to the same place) and the same code (the module
    of ``import_path``, by SHA-256). Such a pair would be computed twice and ranked against
    itself.

    Files are hashed only for entries that agree on everything else and on the files' sizes,
    so a config of distinct models reads no weights.

    Args:
        models: the config's ``models`` section.

    Returns:
        ``"models.<b>: the same model as models.<a> (...): remove one of the two names"`` for
        every entry after the first of its kind, in config order.
    """
    groups: dict[str, list[str]] = {}
    for name, spec in models.items():
        groups.setdefault(_cheap_identity(spec), []).append(name)
    lines = []
    for names in (g for g in groups.values() if len(g) > 1):
        seen: dict[str, str] = {}
        for name in names:
            key = _content_identity(models[name])
            if key in seen:
                lines.append(f"models.{name}: the same model as models.{seen[key]} (same type, "
                             "settings, weights and code): it would be computed twice and "
                             "ranked against itself; remove one of the two names")
            else:
                seen[key] = name
    return lines


def _cheap_identity(spec: dict) -> str:
    """The entry without its run keys, its files as (resolved path or size)."""
    entry = {k: v for k, v in spec.items() if k not in RUN_KEYS}
    for key in (*FILE_KEYS, "import_path"):
        if key == "import_path" and spec.get(key):
            path = _module_file(spec)
            entry["module"] = _size(path) if path else spec[key]
            entry.pop("pythonpath", None)
        elif isinstance(spec.get(key), str):
            entry[key] = _size(Path(spec[key]).expanduser())
    return json.dumps(entry, sort_keys=True, default=str)


def _size(path: Path) -> str | int:
    """A file's size; a folder (or a hub id) by its resolved path."""
    return path.stat().st_size if path.is_file() else str(path.resolve())


def _content_identity(spec: dict) -> str:
    """:func:`_cheap_identity` with every file by its SHA-256."""
    from roundtrip.core.hashing import sha256_file

    entry = json.loads(_cheap_identity(spec))
    for key in FILE_KEYS:
        value = spec.get(key)
        if isinstance(value, str) and Path(value).expanduser().is_file():
            entry[key] = sha256_file(Path(value).expanduser())
    if spec.get("import_path") and (path := _module_file(spec)) and path.is_file():
        entry["module"] = sha256_file(path)
    return json.dumps(entry, sort_keys=True)


# -- models run in process by the readers, judges and pairs ---------------------------------------
#: Keys of an in-process use (:data:`roundtrip.api.settings.IN_PROCESS_MODELS`: a ``type`` ->
#: the keys that name its models) whose model reads images and writes text: a chat VLM or a
#: unified model (``transformers``: ``model``), the captioner of a text-to-image pipeline
#: (``diffusers``: ``i2t``). Every other key names a text-to-image pipeline (``diffusers``:
#: ``t2i``).
READER_KEYS: dict[str, tuple[str, ...]] = {"transformers": ("model",), "diffusers": ("i2t",)}
#: What to fetch, by what a slot holds, for the message of a folder that holds no model.
FETCH_EXAMPLES = {
    True: "an image-text model (a chat VLM such as google/gemma-3-12b-it or "
          "llava-hf/llava-1.5-7b-hf, or a VisionEncoderDecoder captioner)",
    False: "a diffusers text-to-image pipeline (such as stabilityai/stable-diffusion-xl-base-1.0)",
}


def in_process_problems(uses) -> list[str]:
    """One line per problem of the models that readers, judges and pairs run in process, found
    from their folders and ``config.json`` alone (no weights loaded), before any job.

    Each model key of an in-process use (:data:`roundtrip.api.settings.IN_PROCESS_MODELS`) must
    name a model on this machine (:func:`roundtrip.core.weights.local_model`: a registered
    folder, a saved folder, or a hub id whose snapshot is in the Hugging Face cache); a key that
    reads images (:data:`READER_KEYS`) must hold an image-text model
    (:func:`roundtrip.readers.transformers_vlm.image_text_architecture`). Every slot is checked,
    so a config with several missing folders names all of them.

    Args:
        uses: ``(config path, spec, prompt fields)`` of the config's API uses
            (:func:`roundtrip.api.settings.api_uses` and the evaluations' ``api_uses``); uses
            that name an endpoint are skipped.

    Returns:
        Lines such as ``vista.readers.my_vlm.model: /models/gpt2 holds GPT2LMHeadModel, a
        text-only model: a reader needs an image-text model (...)``, in the order of ``uses``;
        empty when every model is there and of its kind.
    """
    from roundtrip.api.settings import IN_PROCESS_MODELS
    from roundtrip.core.weights import ChecksumMismatch, local_model
    from roundtrip.readers.transformers_vlm import NotImageText, image_text_architecture

    problems = []
    for path, spec, _ in uses:
        keys = IN_PROCESS_MODELS.get(spec.get("type")) if isinstance(spec, dict) else None
        for key in keys or ():
            where, value = f"{path}.{key}", spec.get(key)
            reads = key in READER_KEYS.get(spec["type"], ())
            if not value or not isinstance(value, str):
                problems.append(f"{where}: required (a model folder or a hub id of "
                                f"{FETCH_EXAMPLES[reads]})")
                continue
            try:
                folder = local_model(value, where)
            except WeightsMissing as exc:
                problems.append(_missing_note(value, where, exc, reads))
                continue
            except ChecksumMismatch as exc:
                problems.append(f"{where}: {' '.join(str(exc).split())}")
                continue
            if reads:
                try:
                    image_text_architecture(folder)
                except NotImageText as exc:
                    problems.append(f"{where}: {exc}")
    return problems


def _missing_note(value: str, where: str, exc: WeightsMissing, reads: bool) -> str:
    """The message of a model slot ``where`` whose model ``value`` is not here: a registered
    folder's or a hub id's as :func:`~roundtrip.core.weights.local_model` words it; a folder
    path's names the kind of model the slot takes (an image-text model, a text-to-image
    pipeline), not the registry's folders (CLIP, DINO, ...), which no such slot can use."""
    from roundtrip.core.weights import registered_folders, resolve_folder

    text = " ".join(str(exc).split())
    if value in registered_folders() or text.startswith(f"{where}: {value} is not a saved model "
                                                         "folder here"):
        return text  # a registered name, or a hub id not in the Hugging Face cache
    folder = resolve_folder(value)
    return (f"{where}: {folder} holds no saved model (config.json). On a machine with internet "
            f"run `hf download <hub id> --local-dir {folder}` with the hub id of "
            f"{FETCH_EXAMPLES[reads]} and copy the folder here, or set {where} to the hub id "
            "when its snapshot is in the Hugging Face cache")
