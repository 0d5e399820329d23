"""Pretrained weights of the metrics (LPIPS backbones, Inception-v3): a registry, a cache, a fetcher.

These machines have no internet, so metric weights are never downloaded on demand. On a machine
that has it, ``roundtrip weights fetch`` (or ``snakemake fetch_weights``) downloads each file
into the configured cache (``metrics.weights_cache``) and verifies its checksum; metrics then load
from the cache only. Where a file is missing, the metric's table cell reads "n/a" with a footnote
naming the file and this command (:func:`missing_note`), or, when the config says
``metrics.missing_weights: error``, the run fails before any work (:func:`require`).

Checksums: the upstream files follow torch hub's naming convention, ``name-<first 8 hex digits of
the file's SHA-256>.pth``; :func:`verify` checks that prefix (and the full digest when a
:class:`WeightFile` records one).

Model folders (Hugging Face snapshots, :class:`HubFolder`) are declared by the evaluations that
load them (``Evaluation.weight_folders``), not here; :func:`registered_folders` gathers them for
``roundtrip weights list/fetch`` and for resolving a folder's name in the cache. A model that a
config names by folder or by hub id (an in-process VLM) is found by :func:`local_model`, which
never downloads.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from roundtrip.core.hashing import sha256_file

DEFAULT_CACHE = "~/.cache/roundtrip/weights"
#: LPIPS backbone (``metrics.lpips.net``) -> registry name of its ImageNet weights.
LPIPS_NETS = {"alex": "lpips-alex", "vgg": "lpips-vgg"}


class WeightsMissing(FileNotFoundError):
    """Weights (of a model or a metric) are not available offline; the message says what to put
    where."""


@dataclass(frozen=True)
class WeightFile:
    """One downloadable file.

    Attributes:
        name: registry key (``lpips-alex``, ...).
        url: where :func:`fetch` downloads it from.
        filename: file name inside the cache directory.
        sha256: expected digest, or its leading hex digits (at least 8).
        used_by: what needs it, for messages.
    """
    name: str
    url: str
    filename: str
    sha256: str
    used_by: str


REGISTRY: dict[str, WeightFile] = {w.name: w for w in [
    # torchvision's ImageNet backbones; lpips's linear layers ship inside the lpips package.
    WeightFile("lpips-alex", "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth",
               "alexnet-owt-7be5be79.pth", "7be5be79", "LPIPS (net: alex)"),
    WeightFile("lpips-vgg", "https://download.pytorch.org/models/vgg16-397923af.pth",
               "vgg16-397923af.pth", "397923af", "LPIPS (net: vgg)"),
    # torch-fidelity's conversion of the TensorFlow FID Inception-v3 (pt_inception-2015-12-05).
    WeightFile("inception-fid",
               "https://github.com/toshas/torch-fidelity/releases/download/v0.2.0/"
               "weights-inception-2015-12-05-6726825d.pth",
               "weights-inception-2015-12-05-6726825d.pth", "6726825d", "FID and KID"),
    # torchvision's ImageNet ResNet-18: the 2D image baseline of MediBench's latent utility.
    WeightFile("resnet18-imagenet", "https://download.pytorch.org/models/resnet18-f37072fd.pth",
               "resnet18-f37072fd.pth", "f37072fd", "MediBench 2D baseline (ResNet-18 + MLP)"),
]}


class ChecksumMismatch(ValueError):
    """A downloaded file's SHA-256 does not match the registry."""


def cache_dir(config_value: str | None = None) -> Path:
    """The weights cache: ``config_value``, else ``$ROUNDTRIP_WEIGHTS``, else :data:`DEFAULT_CACHE`."""
    return Path(os.path.expanduser(config_value or os.environ.get("ROUNDTRIP_WEIGHTS")
                                   or DEFAULT_CACHE))


def path_of(name: str, cache: str | Path | None = None) -> Path:
    """Where weight file ``name`` lives in the cache (it may not exist).

    Raises:
        KeyError: ``name`` is not in :data:`REGISTRY`.
    """
    if name not in REGISTRY:
        raise KeyError(f"unknown weight file {name!r}; known: {sorted(REGISTRY)}")
    return cache_dir(str(cache) if cache else None) / REGISTRY[name].filename


def fetch_command(name: str, cache: str | Path | None = None) -> str:
    """The shell command that downloads ``name`` into ``cache``."""
    return f"roundtrip weights fetch {name} --cache {cache_dir(str(cache) if cache else None)}"


def missing_note(name: str, cache: str | Path | None = None) -> str:
    """Footnote text for a metric that could not run: the missing file and how to fetch it."""
    return (f"n/a: {REGISTRY[name].used_by} needs {path_of(name, cache)}; on a machine with "
            f"internet run `{fetch_command(name, cache)}` and copy the file there")


def require(name: str, cache: str | Path | None = None) -> Path:
    """Path of ``name`` in the cache.

    Raises:
        WeightsMissing: the file is not there; the message names it and the fetch command.
    """
    path = path_of(name, cache)
    if not path.is_file():
        raise WeightsMissing(missing_note(name, cache).removeprefix("n/a: "))
    return path


def verify(path: str | Path, expected: str) -> None:
    """Check ``path``'s SHA-256 against ``expected`` (full digest or leading digits).

    Raises:
        ChecksumMismatch: naming both digests.
    """
    digest = sha256_file(path)
    if not digest.startswith(expected.lower()):
        raise ChecksumMismatch(f"{path}: SHA-256 {digest} does not match expected {expected}")


def fetch(name: str, cache: str | Path | None = None, registry: dict | None = None,
          timeout: float = 60.0) -> Path:
    """Download weight file ``name`` into the cache, verify it, and return its path.

    An existing file with the right checksum is kept (no download). The download goes to a
    temporary file in the cache directory and is renamed into place only after its checksum
    matched, so an interrupted or corrupted download never leaves a file that looks valid.

    Args:
        registry: defaults to :data:`REGISTRY` (tests pass entries pointing at a local server).

    Raises:
        KeyError: unknown ``name``.
        ChecksumMismatch: the downloaded bytes have another digest (nothing is kept).
        urllib.error.URLError: the download failed.
    """
    reg = registry or REGISTRY
    if name not in reg:
        raise KeyError(f"unknown weight file {name!r}; known: {sorted(reg)}")
    entry = reg[name]
    target = cache_dir(str(cache) if cache else None) / entry.filename
    if target.is_file():
        try:
            verify(target, entry.sha256)
            return target
        except ChecksumMismatch:
            target.unlink()  # corrupt leftover: download again
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{entry.filename}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(entry.url, timeout=timeout) as r:
            shutil.copyfileobj(r, out, 1 << 20)
        verify(tmp, entry.sha256)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


# -- model folders (Hugging Face snapshots), declared by the evaluations that load them ---------
@dataclass(frozen=True)
class HubFolder:
    """A model folder fetched from the Hugging Face hub into the cache.

    An evaluation lists the folders it loads in its spec
    (:attr:`roundtrip.core.evaluation.Evaluation.weight_folders`); :func:`registered_folders`
    gathers them.

    Attributes:
        name: registry key (also the folder's name in the cache).
        repo: hub repository id; revision: branch, tag or commit.
        used_by: what needs it, for messages.
    """
    name: str
    repo: str
    used_by: str
    revision: str = "main"


def folders_of(evaluations: Iterable) -> dict[str, HubFolder]:
    """The model folders ``evaluations`` declare (their ``weight_folders``), by name, in the
    evaluations' order.

    Args:
        evaluations: :class:`roundtrip.core.evaluation.Evaluation` objects.

    Raises:
        ValueError: two evaluations declare one name with different folders.
    """
    found: dict[str, HubFolder] = {}
    for ev in evaluations:
        for folder in ev.weight_folders:
            if found.get(folder.name, folder) != folder:
                raise ValueError(f"model folder {folder.name!r} is declared twice with different "
                                 f"repositories ({found[folder.name].repo}, {folder.repo}); "
                                 f"the second by evaluation {ev.key!r}")
            found[folder.name] = folder
    return found


@functools.cache
def _registered() -> tuple[HubFolder, ...]:
    # imported here: the registry imports every evaluation, and those import this module
    from roundtrip.core.evaluation import load_evaluations

    return tuple(folders_of(load_evaluations().values()).values())


def registered_folders() -> dict[str, HubFolder]:
    """The model folders of every evaluation registered by entry point
    (:func:`roundtrip.core.evaluation.load_evaluations`), by name; loaded once per process.

    Evaluations named only in a config (``evaluations.plugins``) are not seen here: code that
    has the run's plan passes :func:`folders_of` its evaluations instead.

    Raises:
        roundtrip.core.evaluation.RegistryError: an evaluation that does not load.
        ValueError: see :func:`folders_of`.
    """
    return {f.name: f for f in _registered()}


#: Checksum list written into a fetched folder (``sha256sum`` format) and checked at load.
CHECKSUMS = "roundtrip-sha256.txt"


def resolve_folder(value: str, cache: str | Path | None = None,
                   folders: dict[str, HubFolder] | None = None) -> Path:
    """A model folder: a registered folder's name -> its place in the cache, else the path given.

    Args:
        folders: the folders known by name (default :func:`registered_folders`).
    """
    if value in (registered_folders() if folders is None else folders):
        return cache_dir(str(cache) if cache else None) / value
    return Path(value).expanduser()


def write_checksums(folder: str | Path) -> Path:
    """Write :data:`CHECKSUMS` in ``folder``: the SHA-256 of every other file, sorted by path."""
    folder = Path(folder)
    lines = [f"{sha256_file(p)}  {p.relative_to(folder).as_posix()}"
             for p in sorted(folder.rglob("*")) if p.is_file() and p.name != CHECKSUMS
             and ".cache" not in p.relative_to(folder).parts]
    out = folder / CHECKSUMS
    out.write_text("\n".join(lines) + "\n")
    return out


def verify_folder(folder: str | Path) -> bool:
    """Check a folder against its :data:`CHECKSUMS` list.

    Returns:
        True when the list exists and every file matches; False when there is no list (a folder
        saved by hand: nothing to check).

    Raises:
        ChecksumMismatch: a listed file is missing or has another digest (names the file).
    """
    folder = Path(folder)
    listing = folder / CHECKSUMS
    if not listing.is_file():
        return False
    for line in listing.read_text().splitlines():
        if not line.strip():
            continue
        digest, rel = line.split("  ", 1)
        path = folder / rel
        if not path.is_file():
            raise ChecksumMismatch(f"{path}: listed in {listing} but missing (copy incomplete?)")
        verify(path, digest)
    return True


def folder_missing_note(value: str, key: str, cache: str | Path | None = None,
                        folders: dict[str, HubFolder] | None = None) -> str:
    """What to do when the model folder ``value`` (config key ``key``) holds no model.

    Args:
        folders: the folders known by name (default :func:`registered_folders`).
    """
    folders = registered_folders() if folders is None else folders
    folder = resolve_folder(value, cache, folders)
    if value in folders:
        return (f"{key}: {folder} holds no model ({folders[value].used_by}); on a machine with "
                f"internet run `roundtrip weights fetch {value} --cache {folder.parent}` and copy "
                f"the folder there")
    return (f"{key}: {folder} holds no saved model (config.json). On a machine with internet run "
            f"`huggingface-cli download <repo id> --local-dir {folder}` (or name a registry "
            f"folder: {', '.join(sorted(folders))}) and copy the folder here.")


def fetch_folder(name: str, cache: str | Path | None = None, download=None,
                 folders: dict[str, HubFolder] | None = None) -> Path:
    """Download the hub folder ``name`` into the cache and write its checksum list.

    The snapshot goes to a temporary folder beside the target and is renamed into place after
    its checksums were written, so an interrupted download never looks complete.

    Args:
        download: ``(repo, revision, local_dir) -> None`` (default: huggingface_hub's
            ``snapshot_download``; tests pass a copier).
        folders: the folders known by name (default :func:`registered_folders`).

    Raises:
        KeyError: unknown ``name``.
    """
    folders = registered_folders() if folders is None else folders
    if name not in folders:
        raise KeyError(f"unknown model folder {name!r}; known: {sorted(folders)}")
    entry = folders[name]
    target = resolve_folder(name, cache, folders)
    if target.is_dir():
        try:
            if verify_folder(target):
                return target
        except ChecksumMismatch:
            pass
        shutil.rmtree(target)
    if download is None:
        from huggingface_hub import snapshot_download

        def download(repo, revision, local_dir):
            snapshot_download(repo, revision=revision, local_dir=local_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{name}.", suffix=".part"))
    try:
        download(entry.repo, entry.revision, str(tmp))
        write_checksums(tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return target


def model_folder(value: str, key: str, cache: str | Path | None = None,
                 folders: dict[str, HubFolder] | None = None) -> str:
    """The saved model folder named by config key ``key``: a path, or a registered folder's name
    in the cache; checked against its checksum list when it has one.

    Args:
        folders: the folders known by name (default :func:`registered_folders`).

    Raises:
        WeightsMissing: no ``config.json``, ``modules.json`` or ``model_index.json`` there (the
            message says what to fetch and where to put it).
        ChecksumMismatch: a file differs from the list written when it was fetched.
    """
    folders = registered_folders() if folders is None else folders
    folder = resolve_folder(value, cache, folders)
    markers = ("config.json", "modules.json", "model_index.json")
    if not any((folder / m).is_file() for m in markers):
        raise WeightsMissing(folder_missing_note(value, key, cache, folders))
    verify_folder(folder)
    return str(folder)


#: A Hugging Face hub id, ``owner/name``.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")


def hub_missing_note(value: str, key: str) -> str:
    """What to do when ``value`` (config key ``key``) is neither a saved model folder here nor a
    hub id whose snapshot is in the Hugging Face cache."""
    from huggingface_hub.constants import HF_HUB_CACHE

    return (f"{key}: {value} is not a saved model folder here, nor a model in the Hugging Face "
            f"cache ({HF_HUB_CACHE}); nothing is downloaded during a run. On a machine with "
            f"internet run `hf download {value}` and copy the cache folder here (HF_HOME), or "
            f"`hf download {value} --local-dir <folder>` and set {key}: <folder>")


def local_model(value: str, key: str, cache: str | Path | None = None,
                folders: dict[str, HubFolder] | None = None) -> Path:
    """The saved model that ``value`` names, found on this machine without any download.

    ``value`` is, in this order: a registered folder's name (its place in the weights cache), a
    folder path, or a hub id (``google/gemma-3-12b-it``) whose snapshot is in the Hugging Face
    cache (``HF_HOME``/``HF_HUB_CACHE``; looked up with ``local_files_only``).

    Args:
        key: the config key that names the model, for messages (``ocr.engines.gemma3.model``).
        folders: the folders known by name (default :func:`registered_folders`).

    Raises:
        WeightsMissing: no model there; the message names ``key``, the hub id and the command
            that fetches it.
        ChecksumMismatch: a fetched folder's file differs from its checksum list.
    """
    folders = registered_folders() if folders is None else folders
    if value in folders or resolve_folder(value, cache, folders).is_dir() \
            or not _HUB_ID.match(value):
        return Path(model_folder(value, key, cache, folders))
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(value, local_files_only=True))
    except LocalEntryNotFoundError:
        raise WeightsMissing(hub_missing_note(value, key)) from None
