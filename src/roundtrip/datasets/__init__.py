"""Dataset types: one table from a config ``type`` to its builder, its role and its keys.

A builder writes ``results/datasets/{dataset}/manifest.csv`` and the files it names (the
contract of :mod:`roundtrip.core.manifest`). The table below is all the workflow needs to know
about a type: which module builds it (imported only when a set of that type is built, so building
a folder of photographs does not import MONAI), which role its sets play (which evaluations and
tables they feed) and which config keys change the built files (a change rebuilds the set).

| type | builder | role |
|---|---|---|
| ``skimage`` | :mod:`.skimage` | images (VTBench Table 1) |
| ``folder`` | :mod:`.folder` | images (medical with ``labels_csv``/``modality``) |
| ``webdataset`` | :mod:`.webdataset_shards` (tar shards) | images, streamed |
| ``hf_dataset`` | :mod:`.hf_dataset` (``save_to_disk`` folder, parquet) | images, streamed |
| ``abstracts``, ``posters``, ``vista_questions`` | :mod:`.rendered` (XeLaTeX) | text (Table 3) |
| ``vista_release`` | :mod:`.vista` (the VISTA-Bench release TSV) | text (questions) |
| ``gpt_highres``, ``gpt_detail`` | :mod:`.generated` (image API) | images |
| ``gpt_posters`` | :mod:`.generated` | text |
| ``skimage_medical``, ``medmnist`` | :mod:`.medical` | medical 2D (3D with ``dims: 3``) |
| ``nifti``, ``bids``, ``brats``, ``synthetic_volumes`` | :mod:`.medical` | medical volumes |
| ``captions``, ``geneval``, ``chains`` | :mod:`.telephone` | chain inputs (The Telephone Game) |

Any set with a ``modality`` key joins the medical branch (MediBench).
"""
from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

log = logging.getLogger(__name__)

#: Roles: which evaluations a dataset feeds.
IMAGES, TEXT, MEDICAL_2D, VOLUMES = "images", "text", "medical_2d", "volumes"
#: Inputs of The Telephone Game's chains: feed no reconstruction, only the chains.
CHAIN_INPUTS = "chain_inputs"


@dataclass(frozen=True)
class DatasetType:
    """One row of the registry.

    Attributes:
        builder: ``module:function``; the function takes ``(name, spec, out_dir)`` and returns
            the items (a list, or an iterator that yields them one by one; written here with
            :func:`roundtrip.core.manifest.write_dataset`) or the manifest frame it wrote itself
            (volume sets).
        role: :data:`IMAGES`, :data:`TEXT`, :data:`MEDICAL_2D` or :data:`VOLUMES`.
        rendered: rendered by roundtrip and read back by Tesseract: the ``render`` and ``audit``
            sections and the OCR normalization change its files too.
        fingerprint: ``module:function`` taking the spec and returning a digest of the files the
            set is read from (a Snakemake param: a changed file rebuilds the set); ``""``: the
            files under ``path`` (:func:`dataset_fingerprint`).
        check_source: ``module:function`` taking ``(name, spec)`` that resolves the files
            ``path`` names (a brace pattern or glob of shards, parquet files) before any job,
            raising ``FileNotFoundError`` or ``ValueError`` whose message starts with
            ``datasets.<name>.path``; ``""``: the config check looks at ``path`` itself.
        packaged: built from data shipped inside installed packages, a few dozen items at
            most (no user ``path``). Such sets are reconstructed in one job per model
            (:meth:`roundtrip.workflow.recon_jobs.ReconJobs.batched`): their jobs are
            mostly start-up.
    """
    builder: str
    role: str
    rendered: bool = False
    fingerprint: str = ""
    check_source: str = ""
    packaged: bool = False


_VOLUME = DatasetType("roundtrip.datasets.medical:build_volumes", VOLUMES)
_RENDERED = DatasetType("roundtrip.datasets.rendered.build:synthesize", TEXT, rendered=True,
                        packaged=True)

#: config ``type`` -> :class:`DatasetType`.
DATASET_TYPES: dict[str, DatasetType] = {
    "skimage": DatasetType("roundtrip.datasets.skimage:build", IMAGES, packaged=True),
    "package_photos": DatasetType("roundtrip.datasets.package_photos:build", IMAGES,
                                  packaged=True),
    "folder": DatasetType("roundtrip.datasets.folder:build", IMAGES,
                          fingerprint="roundtrip.datasets.folder:fingerprint"),
    "webdataset": DatasetType("roundtrip.datasets.webdataset_shards:build", IMAGES,
                              fingerprint="roundtrip.datasets.webdataset_shards:fingerprint",
                              check_source="roundtrip.datasets.webdataset_shards:check_source"),
    "hf_dataset": DatasetType("roundtrip.datasets.hf_dataset:build", IMAGES,
                              fingerprint="roundtrip.datasets.hf_dataset:fingerprint",
                              check_source="roundtrip.datasets.hf_dataset:check_source"),
    "abstracts": _RENDERED,
    "posters": _RENDERED,
    "vista_questions": _RENDERED,
    "vista_release": DatasetType("roundtrip.datasets.vista:build_release", TEXT,
                                 fingerprint="roundtrip.datasets.vista:release_fingerprint"),
    "gpt_highres": DatasetType("roundtrip.datasets.generated:build", IMAGES),
    "gpt_detail": DatasetType("roundtrip.datasets.generated:build", IMAGES),
    "gpt_posters": DatasetType("roundtrip.datasets.generated:build", TEXT),
    "skimage_medical": DatasetType("roundtrip.datasets.medical:build_skimage_medical", MEDICAL_2D,
                                   packaged=True),
    "medmnist": DatasetType("roundtrip.datasets.medical:build_medmnist", MEDICAL_2D),
    "nifti": _VOLUME,
    "bids": _VOLUME,
    "brats": _VOLUME,
    "synthetic_volumes": _VOLUME,
    "captions": DatasetType("roundtrip.datasets.telephone:build_captions", CHAIN_INPUTS),
    "geneval": DatasetType("roundtrip.datasets.telephone:build_geneval", CHAIN_INPUTS),
    "chains": DatasetType("roundtrip.datasets.telephone:build_chains", CHAIN_INPUTS),
}

#: Dataset types rendered by roundtrip itself (:mod:`roundtrip.datasets.rendered`).
SYNTHETIC_TYPES = tuple(k for k, t in DATASET_TYPES.items() if t.rendered)
#: Question sets of VISTA-Bench (roundtrip.evals.vista answers them).
QUESTION_TYPES = ("vista_questions", "vista_release")
#: Dataset types generated through an image API (:mod:`roundtrip.datasets.generated`).
GPT_TYPES = tuple(k for k in DATASET_TYPES if k.startswith("gpt_"))
#: Types that produce volumes (``medmnist`` too, with ``dims: 3``).
VOLUME_TYPES = tuple(k for k, t in DATASET_TYPES.items() if t.role == VOLUMES)
#: Types of the medical branch (any set with a ``modality`` key joins it too).
MEDICAL_TYPES = tuple(k for k, t in DATASET_TYPES.items() if t.role in (MEDICAL_2D, VOLUMES))

#: Config keys that change the built files of any set.
COMMON_KEYS = ("type", "images", "path", "lang")
#: Config keys of the chain inputs (:mod:`.telephone`).
CHAIN_KEYS = ("captions", "prompts", "render", "font_size_pt", "width_px", "count")
#: Config keys of the streamed large sets (:mod:`.webdataset_shards`, :mod:`.hf_dataset`);
#: ``limit`` and ``label_column`` are among :data:`MEDICAL_KEYS`.
LARGE_SET_KEYS = ("split", "image_column", "text_column")
#: Config keys of the medical sources (:mod:`.medical`).
MEDICAL_KEYS = ("modality", "labels_csv", "splits", "dims", "limit", "bundled", "suffix",
                "label_column", "sequence", "count", "volume_size", "seed", "intensity",
                "volume_index", "nonfinite", "spacing")


def is_volume_spec(spec: dict) -> bool:
    """Whether a dataset spec produces volumes (a ``medmnist`` set says so with ``dims: 3``)."""
    return spec["type"] in VOLUME_TYPES or (spec["type"] == "medmnist" and spec.get("dims") == 3)


def is_medical_spec(spec: dict) -> bool:
    """Whether a dataset belongs to the medical branch (a medical type, or a ``modality``)."""
    return spec["type"] in MEDICAL_TYPES or bool(spec.get("modality"))


def role_of(spec: dict) -> str:
    """The role of a dataset spec: :data:`VOLUMES`, :data:`MEDICAL_2D`, :data:`TEXT` (rendered
    and GPT poster sets: VTBench Table 3 only) or :data:`IMAGES`.

    Raises:
        KeyError: unknown type.
    """
    if is_volume_spec(spec):
        return VOLUMES
    if is_medical_spec(spec):
        return MEDICAL_2D
    return DATASET_TYPES[spec["type"]].role


def file_keys(spec: dict) -> tuple[str, ...]:
    """The config keys of ``spec`` whose values change its built files (so that a change of
    ``protocol``, ``models`` or ``text_eval`` does not rebuild the set)."""
    kind = spec["type"]
    keys = COMMON_KEYS
    if DATASET_TYPES[kind].rendered:
        from roundtrip.datasets.rendered.build import SYNTHETIC_KEYS

        keys += SYNTHETIC_KEYS[kind]
    keys += MEDICAL_KEYS
    if DATASET_TYPES[kind].role == CHAIN_INPUTS:
        keys += CHAIN_KEYS
    if kind in GPT_TYPES:
        from roundtrip.datasets.generated import GPT_KEYS

        keys += GPT_KEYS
    if kind in ("webdataset", "hf_dataset"):
        keys += LARGE_SET_KEYS
    return keys


def dataset_fingerprint(spec: dict) -> str:
    """Digest of the files a dataset spec is read from (stat only: names, sizes, mtimes), so
    that a changed, added or removed file rebuilds the set: the type's own ``fingerprint``
    function where the registry names one (a folder's images and labels file, a release TSV
    with the folders beside it, a webdataset's shards, an HF dataset's files), else every file
    under ``path`` (``""`` without one).

    Raises:
        KeyError: unknown type.
    """
    from roundtrip.core.hashing import path_fingerprint

    func = DATASET_TYPES[spec["type"]].fingerprint
    if not func:
        return path_fingerprint(spec.get("path"))
    return _function(func)(spec)


def check_source(name: str, spec: dict) -> bool:
    """Resolve the files ``datasets.<name>.path`` names with the type's own
    ``check_source`` (shards, parquet files); returns False for a type without one.

    Raises:
        FileNotFoundError, ValueError: nothing matches, or a malformed pattern; the message
            starts with ``datasets.<name>.path``.
        KeyError: unknown type.
    """
    func = DATASET_TYPES[spec["type"]].check_source
    if func:
        _function(func)(name, spec)
    return bool(func)


def _function(target: str):
    """The function at ``"module:function"`` of a registry entry, imported when it is first
    needed (building a folder of photographs imports no MONAI)."""
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def expected_item_count(spec: dict) -> int | None:
    """Number of items a dataset spec will hold, where the config alone fixes it.

    Exact for lists of bundled images or volumes (``images``, ``bundled``) and for generated
    sets with a ``count``; ``None`` where only the built manifest can tell (folders, BIDS,
    MedMNIST files, question files, whose size also depends on ``limit`` and the style grid).
    The workflow uses it to claim no more threads than a job has items to spread them over.
    """
    for key in ("images", "bundled"):
        if isinstance(spec.get(key), list):
            return len(spec[key])
    if isinstance(spec.get("count"), int):
        return spec["count"]
    return None


def build_dataset(name: str, spec: dict, out_dir: str | Path) -> pd.DataFrame:
    """Build the dataset ``name`` described by its config ``spec`` into ``out_dir``.

    Args:
        name: dataset name (config key).
        spec: the ``datasets.<name>`` entry (rendered sets also carry the ``render`` and
            ``audit`` sections, every set the ``limits`` section); optional ``lang`` is written
            to every row that has no language of its own.

    Returns:
        The manifest written to ``out_dir/manifest.csv``.

    Raises:
        ValueError: unknown type (the message names ``datasets.<name>.type``); a builder's
            own errors (a missing folder) propagate. Colliding item ids are renamed, not fatal.
    """
    from roundtrip.core.manifest import write_dataset

    from roundtrip.core.imaging import DEFAULT_MAX_PIXELS, set_max_pixels
    from roundtrip.datasets.volumes import DEFAULT_MAX_VOXELS, set_max_voxels

    kind = spec["type"]
    if kind not in DATASET_TYPES:
        raise ValueError(f"datasets.{name}.type: unknown dataset type '{kind}'")
    limits = spec.get("limits") or {}  # config limits: checked before any file is decoded
    set_max_pixels(limits.get("max_pixels") or DEFAULT_MAX_PIXELS)
    set_max_voxels(limits.get("max_voxels") or DEFAULT_MAX_VOXELS)
    builder = _VOLUME.builder if is_volume_spec(spec) else DATASET_TYPES[kind].builder
    built = _function(builder)(name, spec, out_dir)  # is_volume_spec: medmnist with dims: 3
    if isinstance(built, pd.DataFrame):  # volume sets write their own manifest
        return built
    if spec.get("lang"):
        built = _with_language(built, spec["lang"])
    df = write_dataset(built, out_dir)
    n_err = int((df["status"] != "ok").sum())
    log.info("dataset %s: %d items, %d errors", name, len(df), n_err)
    return df


def _with_language(items, lang: str):
    """``items`` with ``lang`` on every item that has no language of its own (multilingual
    sets); a list stays a list (write_dataset reserves a list's ids up front), a builder's
    iterator stays lazy."""
    def add(it):
        it.extra = {"lang": lang, **(it.extra or {})}
        return it

    if isinstance(items, (list, tuple)):
        return [add(it) for it in items]
    return map(add, items)
