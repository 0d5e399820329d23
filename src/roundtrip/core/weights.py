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
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

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


def sha256_of(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(path: str | Path, expected: str) -> None:
    """Check ``path``'s SHA-256 against ``expected`` (full digest or leading digits).

    Raises:
        ChecksumMismatch: naming both digests.
    """
    digest = sha256_of(path)
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
