"""Dataset type ``hf_dataset``: a Hugging Face ``datasets`` set on disk, read one row at a time.

``path`` is one of

- a folder written by ``Dataset.save_to_disk`` (``state.json`` beside the Arrow files);
- a folder written by ``DatasetDict.save_to_disk`` (``dataset_dict.json``): ``split`` chooses
  the split (it may be left out when there is only one);
- parquet: a ``.parquet`` file, a folder of them (recursive, sorted, hidden files skipped), or a
  brace pattern or glob (``data/train-*.parquet``; :mod:`roundtrip.core.paths`).

Saved folders are memory-mapped, parquet files streamed (``load_dataset(..., streaming=True)``,
with a throw-away cache folder, so nothing is converted or written under ``~/.cache``). Each
row becomes one item, ``{row:06d}``:

- image: ``image_column`` (default ``image``): an ``Image`` feature, a ``{bytes, path}``
  dict, raw bytes or a path (relative paths are read from the folder of ``path``). The column is
  read undecoded and decoded by :func:`roundtrip.core.imaging.decode_image`, as every image of
  roundtrip is: ``limits.max_pixels`` is checked before decoding and 16-bit PNGs keep their depth
  (the ``datasets`` PIL decoding does neither);
- ``text``: ``text_column``, ``label``: ``label_column`` (a ``ClassLabel`` gives its class name).

A row whose image is missing or does not decode is an error item with the reason. A file that
breaks while its rows are read (a damaged parquet file) keeps the rows read before the damage
and adds one error item ``{file stem}__unread`` with the reason; the next file is read.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

from roundtrip.core.imaging import decode_image, one_line
from roundtrip.core.manifest import Item, safe_item_id
from roundtrip.core.paths import expand_pattern, is_pattern, some_of
from roundtrip.core.hashing import files_fingerprint
from roundtrip.datasets.streamed import SampleError, cell_text, item_from, limited

log = logging.getLogger(__name__)

#: Default of ``image_column``.
IMAGE_COLUMN = "image"


@dataclass(frozen=True)
class Source:
    """Where the rows of an ``hf_dataset`` set are.

    Attributes:
        kind: ``saved`` (``Dataset.save_to_disk``), ``saved_dict`` (``DatasetDict``) or
            ``parquet``.
        files: the saved folder (one path), or the parquet files in reading order.
        split: the split of a ``saved_dict`` folder, else None.
    """
    kind: str
    files: tuple[Path, ...]
    split: str | None = None


def resolve_source(name: str, spec: dict) -> Source:
    """What ``datasets.<name>`` points at, read from the file names and ``dataset_dict.json``
    only (no ``datasets`` import: the config check runs this before any job).

    Raises:
        FileNotFoundError: nothing at ``path``, no parquet file there, or a pattern naming a
            missing file.
        ValueError: a ``split`` the folder does not have, a ``DatasetDict`` with several splits
            and no ``split``, a ``split`` for a source without splits, a file that is not
            parquet. Every message starts with the key to fix (``datasets.<name>.path:``,
            ``datasets.<name>.split:``).
    """
    path, split = spec["path"], spec.get("split")
    p = Path(path)
    if (p / "dataset_dict.json").is_file():
        return Source("saved_dict", (p,), _choose_split(name, p, split))
    if split is not None:
        raise ValueError(f"datasets.{name}.split: {path} has no splits (not a folder written "
                         "by DatasetDict.save_to_disk); remove split, or point path at the "
                         "split's own files, e.g. data/train-*.parquet")
    if (p / "state.json").is_file():
        return Source("saved", (p,))
    return Source("parquet", tuple(_parquet_files(name, path)))


def _choose_split(name: str, folder: Path, split: str | None) -> str:
    """The split of a ``DatasetDict`` folder that ``split`` names (the only one when unset)."""
    try:
        splits = list(json.loads((folder / "dataset_dict.json").read_text())["splits"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"datasets.{name}.path: {folder / 'dataset_dict.json'} does not list "
                         f"the splits ({type(exc).__name__}: {one_line(exc)})") from exc
    if split is None and len(splits) == 1:
        return splits[0]
    if split is None:
        raise ValueError(f"datasets.{name}.split: {folder} holds the splits {splits}; set "
                         "split to one of them")
    if split not in splits:
        raise ValueError(f"datasets.{name}.split: {folder} has no split {split!r}; it has "
                         f"{splits}")
    return split


def _parquet_files(name: str, path: str) -> list[Path]:
    """The parquet files of a file, folder or pattern ``path`` (see the module docstring)."""
    p, key = Path(path), f"datasets.{name}.path"
    if p.is_dir():
        files = sorted(f for f in p.rglob("*.parquet") if f.is_file()
                       and not any(part.startswith(".") for part in f.relative_to(p).parts))
        if not files:
            raise FileNotFoundError(f"{key}: {path} holds no .parquet files and is not a "
                                    "save_to_disk folder (no dataset_dict.json or state.json)")
        return files
    if p.is_file():
        if p.suffix.lower() != ".parquet":
            raise ValueError(f"{key}: {path} is not a .parquet file (a saved dataset is the "
                             "folder save_to_disk wrote)")
        return [p]
    if not is_pattern(path):
        raise FileNotFoundError(f"{key}: {path} does not exist")
    try:
        files, missing = expand_pattern(path)
    except ValueError as exc:  # unbalanced braces
        raise ValueError(f"{key}: {exc}") from exc
    files = [f for f in files if f.is_file() and f.suffix.lower() == ".parquet"]
    if not files:
        raise FileNotFoundError(f"{key}: {path} names no .parquet file")
    if missing:
        raise FileNotFoundError(f"{key}: {path} names files that do not exist: "
                                f"{some_of(missing)}")
    return files


def fingerprint(spec: dict) -> str:
    """Digest of the paths, sizes and mtimes of the set's files (dataset registry): the
    parquet files, or every file of the saved folder; ``missing`` when the spec names none."""
    try:
        source = resolve_source("", spec)
    except (FileNotFoundError, ValueError):
        return "missing"
    if source.kind == "parquet":
        return files_fingerprint(list(source.files))
    folder = source.files[0]
    return files_fingerprint(sorted(f for f in folder.rglob("*") if f.is_file()))


def check_source(name: str, spec: dict) -> Source:
    """:func:`resolve_source`, for the config check (same errors)."""
    return resolve_source(name, spec)


def build(name: str, spec: dict, out_dir: str | Path) -> Iterator[Item]:
    """Builder of the dataset registry: an iterator over the set's rows as items.

    Args:
        spec: ``path``, optional ``split``, ``image_column``, ``text_column``,
            ``label_column``, ``limit`` (the first N rows; the rest are not read).

    Returns:
        A lazy iterator of :class:`~roundtrip.core.manifest.Item`: each row is read, decoded
        and handed on before the next is read.

    Raises:
        FileNotFoundError, ValueError: no readable source (:func:`resolve_source`), or a column
            key naming a column the set does not have (the message names the key and lists the
            columns); raised here, before any item is read.
    """
    source = resolve_source(name, spec)
    rows = RowReader(name, spec, source)
    return limited(rows.items(), spec.get("limit"))


class RowReader:
    """The rows of one ``hf_dataset`` set, opened with ``datasets`` and read as items.

    A saved folder is one part; each parquet file is a part of its own, so a damaged file costs
    its own rows, not the files after it. Opening reads the first part's columns and checks the
    column keys against them; :meth:`items` reads the rows. A parquet set's throw-away cache
    folder is removed when :meth:`items` ends, is closed (a ``limit`` reached) or is collected.

    Raises:
        ValueError: a column key names a column the first part does not have.
    """

    def __init__(self, name: str, spec: dict, source: Source):
        import tempfile

        self.name, self.source = name, source
        self.columns = {"image": spec.get("image_column") or IMAGE_COLUMN,
                        "text": spec.get("text_column"), "label": spec.get("label_column")}
        # load_dataset keeps a lock file in its cache folder even when it streams
        self._cache = (tempfile.TemporaryDirectory(prefix="roundtrip-hf-")
                       if source.kind == "parquet" else None)
        self.features: dict = {}
        try:
            self._first = self._open(source.files[0])
        except BaseException:
            self._close()
            raise

    def _close(self) -> None:
        if self._cache is not None:
            self._cache.cleanup()

    def _label(self, part: Path) -> str:
        """A part's name in sources and reasons: the split, or the folder's or file's name."""
        return self.source.split or part.name

    def _open(self, part: Path):
        """The ``datasets`` object of one part: its used columns, the image undecoded."""
        import datasets

        if self.source.kind == "parquet":
            ds = datasets.load_dataset("parquet", data_files=[str(part)], split="train",
                                       streaming=True, cache_dir=self._cache.name)
        else:
            ds = datasets.load_from_disk(str(part))
            ds = ds[self.source.split] if self.source.kind == "saved_dict" else ds
        self._check_columns(ds.column_names)
        ds = ds.select_columns([c for c in self.columns.values() if c])
        feature = (ds.features or {}).get(self.columns["image"])
        if isinstance(feature, datasets.Image):  # read the bytes; decode_image decodes them
            ds = ds.cast_column(self.columns["image"], datasets.Image(decode=False))
        self.features = {role: (ds.features or {}).get(column)
                         for role, column in self.columns.items() if column}
        return ds

    def _check_columns(self, present: list[str] | None) -> None:
        if present is None:  # a streamed source that does not declare its columns
            return
        for role, column in self.columns.items():
            if column and column not in present:
                raise ValueError(f"datasets.{self.name}.{role}_column: the set has no column "
                                 f"{column!r}; its columns are {present}")

    def items(self) -> Iterator[Item]:
        """One item per row, part after part; ids count the rows of the whole set."""
        from pyarrow import ArrowException

        index = 0
        try:
            for k, part in enumerate(self.source.files):
                try:
                    ds = self._first if k == 0 else self._open(part)
                except (ArrowException, OSError, ValueError) as exc:
                    yield self._unread(part, 0, exc)
                    continue
                index += yield from self._part_items(part, ds, index)
        finally:
            self._close()

    def _part_items(self, part: Path, ds, start: int) -> Generator[Item, None, int]:
        """The items of one part, ids counting on from ``start``, and an error item
        ``{part stem}__unread`` where the part breaks mid-way; returns the number of rows read."""
        from pyarrow import ArrowException

        base = part if self.source.kind != "parquet" else part.parent
        rows, row = iter(ds), 0
        while True:
            try:
                values = next(rows)
            except StopIteration:
                return row
            except (ArrowException, OSError, ValueError) as exc:
                yield self._unread(part, row, exc)
                return row
            yield item_from(f"{start + row:06d}", f"hf_dataset:{self._label(part)}#{row}",
                            lambda: self.read_row(values, row, base))
            row += 1

    def _unread(self, part: Path, rows: int, exc: Exception) -> Item:
        label = self._label(part)
        reason = (f"{label}: unreadable after {rows} rows ({type(exc).__name__}: "
                  f"{one_line(exc)}); the rest of it is not read")
        log.warning("%s", reason)
        return Item(f"{safe_item_id(label)}__unread", f"hf_dataset:{label}",
                    reason=one_line(reason))

    def read_row(self, values: dict, row: int, base: Path) -> tuple:
        """``(image, extras)`` of one row (the ``read`` of :func:`~.streamed.item_from`).

        Args:
            values: the row's used columns, the image undecoded.
            row: the row's index in its part (for reasons).
            base: the folder relative image paths are read from.

        Returns:
            ``(H, W, 3)`` uint8 or uint16 image, and ``text``/``label`` where configured.

        Raises:
            SampleError: no image in the row, or a value that is not one.
            roundtrip.core.imaging.ImageReadError: image bytes that do not decode.
        """
        what = f"row {row} {self.columns['image']}"
        if self.columns["image"] not in values:  # a streamed part that declares no columns
            raise SampleError(f"row {row}: no column {self.columns['image']!r} "
                              f"(datasets.{self.name}.image_column); it has {sorted(values)}")
        image = decode_image(image_bytes(values[self.columns["image"]], base, what), what)
        extras = {role: self._cell(role, values.get(column))
                  for role, column in self.columns.items() if column and role != "image"}
        return image, extras

    def _cell(self, role: str, value) -> str:
        """A text or label value as its manifest cell; a ClassLabel index as its class name."""
        import datasets

        feature = self.features.get(role)
        if isinstance(feature, datasets.ClassLabel) and isinstance(value, int):
            return feature.int2str(value) if 0 <= value < feature.num_classes else ""
        return cell_text(value)


def image_bytes(value, base: Path, what: str) -> bytes:
    """The encoded image a cell holds.

    Args:
        value: ``{"bytes": ..., "path": ...}`` (an undecoded ``Image`` feature), ``bytes``, or
            a path string; a relative path is read under ``base``.
        what: the cell, for the reason (``row 3 image``).

    Raises:
        SampleError: a null cell, a dict with neither bytes nor path, an unreadable path, a
            value of another type.
    """
    if isinstance(value, dict):
        if value.get("bytes"):
            return value["bytes"]
        if not value.get("path"):
            raise SampleError(f"{what}: no image (neither bytes nor path)")
        value = value["path"]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        try:
            return (base / value).read_bytes()  # an absolute path stays absolute
        except OSError as exc:
            raise SampleError(f"{what}: cannot read {value}: {exc.strerror or exc}") from exc
    if value is None:
        raise SampleError(f"{what}: no image (null)")
    raise SampleError(f"{what}: a {type(value).__name__} is not an image (expected an Image "
                      "feature, bytes or a path)")
