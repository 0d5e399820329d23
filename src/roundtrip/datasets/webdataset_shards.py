"""Dataset type ``webdataset``: images stored as WebDataset tar shards, read one sample at a time.

``path`` is a folder of ``.tar`` shards (recursive, sorted, hidden files skipped), one shard, or
a brace pattern or glob (``/data/shard-{000000..000009}.tar``: :mod:`roundtrip.core.paths`).
webdataset groups the members of a shard into samples by their name up to the first dot
(``000123.jpg``, ``000123.txt`` -> sample ``000123``); each sample becomes one item:

- id: the sample's ``__key__`` (:func:`~roundtrip.core.manifest.safe_item_id`; ids that
  repeat across shards are renamed, with a note);
- image: its first member, in archive order, with an image extension (:data:`IMAGE_MEMBERS`);
- ``text``: its ``.txt`` member (UTF-8, surrounding whitespace removed); ``label``: its
  ``.cls`` member; a ``.json`` object's ``caption`` (or ``text``) and ``label`` fill the
  columns a ``.txt`` or ``.cls`` member leaves empty.

Hostile input costs items, never the set:

- a member that does not decode (image bytes, a ``.txt`` that is not UTF-8, a ``.json`` that is
  not JSON), a sample without an image member (the reason lists the members it has) and a
  sample with two members of one name are error items with the reason;
- a damaged shard (truncated, not a tar archive, no end-of-archive marker) keeps the samples
  read before the damage; one error item ``{shard}__damaged`` says where reading stopped, and
  the next shard is read.

Shards are opened here as local files and handed to webdataset's tar iterator and sample
grouping (:mod:`webdataset.tariterators`); webdataset's URL opener is not used, because it runs
a ``pipe:`` path as a shell command. webdataset (which imports torch) is imported only when a
set is built.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

from roundtrip.core.imaging import IMAGE_EXTENSIONS, decode_image, one_line
from roundtrip.core.manifest import Item, safe_item_id
from roundtrip.core.paths import expand_pattern, is_pattern, some_of
from roundtrip.core.hashing import files_fingerprint
from roundtrip.datasets.streamed import SampleError, cell_text, item_from, limited

log = logging.getLogger(__name__)

#: Member extensions read as the sample's image (lower case, without the dot).
IMAGE_MEMBERS = frozenset(ext.lstrip(".") for ext in IMAGE_EXTENSIONS)
#: The end of a tar archive: two zero blocks (POSIX); a shard cut at a member boundary lacks
#: it, and Python's tarfile reads such a shard to its end without an error.
_END_OF_ARCHIVE = 1024
#: Magic numbers of the compressed tars tarfile reads (gzip, bzip2, xz).
_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ")


def list_shards(path: str | Path) -> list[Path]:
    """The shards ``path`` names, in reading order.

    Args:
        path: a folder (its ``*.tar`` files, recursive, sorted, hidden ones skipped), a shard
            file, or a brace pattern or glob (expansion order: :func:`expand_pattern`).

    Raises:
        FileNotFoundError: nothing there, a folder without shards, or a pattern that names a
            shard that does not exist (the message names them).
        ValueError: a pattern with unbalanced braces.
    """
    p = Path(path)
    if p.is_dir():
        shards = sorted(f for f in p.rglob("*.tar") if f.is_file()
                        and not any(part.startswith(".") for part in f.relative_to(p).parts))
        if not shards:
            raise FileNotFoundError(f"{path} holds no .tar shards")
        return shards
    if p.is_file():
        return [p]
    if not is_pattern(path):
        raise FileNotFoundError(f"{path} does not exist")
    shards, missing = expand_pattern(path)
    if missing:
        raise FileNotFoundError(f"{path} names {len(missing)} shard(s) that do not exist: "
                                f"{some_of(missing)}")
    shards = [s for s in shards if s.is_file()]
    if not shards:
        raise FileNotFoundError(f"{path} names no shard files")
    return shards


def check_source(name: str, spec: dict) -> list[Path]:
    """The shards of ``datasets.<name>`` (:func:`list_shards`), or an error naming the key.

    Raises:
        FileNotFoundError, ValueError: as :func:`list_shards`, the message starting with
            ``datasets.<name>.path:``.
    """
    try:
        return list_shards(spec["path"])
    except (FileNotFoundError, ValueError) as exc:
        raise type(exc)(f"datasets.{name}.path: {exc}") from exc


def fingerprint(spec: dict) -> str:
    """Digest of the shards' paths, sizes and mtimes (dataset registry), ``missing`` when the
    path names none: a changed, added or removed shard rebuilds the set."""
    try:
        return files_fingerprint(list_shards(spec["path"]))
    except (FileNotFoundError, ValueError):
        return "missing"


def build(name: str, spec: dict, out_dir: str | Path) -> Iterator[Item]:
    """Builder of the dataset registry: an iterator over the items of every shard, in order.

    Args:
        spec: ``path`` (:func:`list_shards`), optional ``limit`` (the first N items, error
            items included; later shards are not opened).

    Returns:
        A lazy iterator of :class:`~roundtrip.core.manifest.Item`: each sample is read,
        decoded and handed on before the next is read.

    Raises:
        FileNotFoundError, ValueError: the path names no shards (:func:`check_source`); raised
            here, before any item is read.
    """
    return limited(shard_items(check_source(name, spec)), spec.get("limit"))


def shard_items(shards: list[Path]) -> Iterator[Item]:
    """The items of ``shards``, one shard after the other (:func:`read_shard`)."""
    for shard in shards:
        yield from read_shard(shard)


def read_shard(shard: Path) -> Iterator[Item]:
    """The items of one shard: one per sample, then one error item if the shard is damaged.

    Yields:
        :class:`~roundtrip.core.manifest.Item` per sample (:func:`sample_item`); after the
        last sample read, an error item ``{shard}__damaged`` when the archive ended in an
        error or without its end-of-archive marker.
    """
    from webdataset.tariterators import group_by_keys, tar_file_expander

    damage, duplicates = [], []

    def stop(exn: Exception) -> bool:  # a tar stream cannot be read past a damaged block
        damage.append(exn)
        return False

    def skip(exn: Exception) -> bool:  # a repeated member name: the sample reports it
        duplicates.append(exn)
        return True

    read = 0
    try:
        with open(shard, "rb") as fh:
            files = tar_file_expander([{"url": str(shard), "stream": fh}], handler=stop)
            for sample in group_by_keys(files, handler=skip):
                # the grouper raises a repeated name while it builds the sample it yields next
                repeated = duplicates.copy()
                duplicates.clear()
                read += 1
                yield sample_item(sample, shard.name, repeated, damaged=bool(damage))
    except OSError as exc:
        damage.append(exc)
    problem = _damage(shard, damage)
    if problem:
        log.warning("%s: %s after %d samples", shard, problem, read)
        yield Item(f"{safe_item_id(shard.name)}__damaged", f"webdataset:{shard.name}",
                   reason=f"{shard.name}: {problem} after {read} samples; the rest of the "
                          "shard is not read")


def _damage(shard: Path, errors: list[Exception]) -> str:
    """What stopped the reading of a shard, or ``""`` for a shard read to its proper end."""
    if errors:
        return f"damaged tar archive ({_message(errors[0])})"
    with open(shard, "rb") as fh:
        if fh.read(6).startswith(_COMPRESSED):  # a cut stream fails in the decompressor
            return ""
        size = fh.seek(0, 2)
        if size < _END_OF_ARCHIVE or size % 512:
            return "tar archive cut short (its size is not a whole number of 512-byte blocks)"
        fh.seek(size - _END_OF_ARCHIVE)
        if fh.read(_END_OF_ARCHIVE).strip(b"\0"):
            return "tar archive cut short (no end-of-archive marker)"
    return ""


def _message(exn: Exception) -> str:
    """An exception webdataset passed to a handler, in one line: its first argument without
    the stream webdataset appends (``... @ <_io.BufferedReader ...>``)."""
    text = str(exn.args[0]) if exn.args else ""
    text = text.split(" @ ")[0]
    return one_line(f"{type(exn).__name__}: {text}" if text else type(exn).__name__)


def sample_item(sample: dict, shard_name: str, repeated: Sequence[Exception] = (),
                damaged: bool = False) -> Item:
    """One item from a webdataset sample (see the module docstring).

    Args:
        sample: ``{"__key__": key, "__url__": shard, ext: bytes, ...}`` as
            :func:`webdataset.tariterators.group_by_keys` yields it.
        shard_name: the shard's file name (the item's ``source`` is ``webdataset:shard:key``).
        repeated: the grouper's errors for member names the sample repeats.
        damaged: the shard was damaged right after this sample, which may lack members.

    Returns:
        An ok item (``(H, W, 3)`` uint8 or uint16 image; ``text``/``label`` extras), or an
        error item with the reason.
    """
    key = sample["__key__"]

    def read():
        if repeated:
            name = str(repeated[0].args[0]).split(":")[0] if repeated[0].args else key
            raise SampleError(f"{key}: two members named {name}; which one belongs to the "
                              "sample is ambiguous")
        members = [k for k in sample if not k.startswith("__")]
        image = next((m for m in members if m in IMAGE_MEMBERS), None)
        if image is None:
            raise SampleError(
                f"{key}: no image member ({', '.join(sorted(IMAGE_MEMBERS))}); it has "
                + ", ".join(f".{m}" for m in members)
                + ("; the shard is damaged right after it" if damaged else ""))
        return decode_image(sample[image], f"{key}.{image}"), sample_fields(sample, key)

    return item_from(safe_item_id(key), f"webdataset:{shard_name}:{key}", read)


def sample_fields(sample: dict, key: str) -> dict:
    """The ``text`` and ``label`` of a sample: ``.txt`` and ``.cls`` members, then a ``.json``
    object's ``caption`` (or ``text``) and ``label`` for the columns they leave empty.

    Raises:
        SampleError: a ``.txt``/``.cls`` that is not UTF-8, a ``.json`` that is not JSON.
    """
    fields = {}
    if "json" in sample:
        try:
            meta = json.loads(sample["json"])
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise SampleError(f"{key}.json: not valid JSON ({one_line(exc)})") from exc
        if isinstance(meta, dict):
            text = meta.get("caption", meta.get("text"))
            fields |= {k: cell_text(v) for k, v in (("text", text), ("label", meta.get("label")))
                       if v is not None}
    for ext, column in (("txt", "text"), ("cls", "label")):
        if ext in sample:
            try:
                fields[column] = sample[ext].decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                raise SampleError(f"{key}.{ext}: not UTF-8 text ({exc.reason} at byte "
                                  f"{exc.start})") from exc
    return fields
