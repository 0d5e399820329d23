"""Published numbers shipped with an evaluation: the cells of its paper's tables, in long format.

An evaluation package may hold a folder ``published/`` with one CSV per paper table (installed as
package data). :func:`read_published` reads all of them for one package; it knows no paper.

Every file has exactly these columns, in this order, one row per printed number:

``paper``
    short id of the paper, the evaluation's key (``vtbench``, ``vista``, ``telephone``, ...).
``table``
    the table as the paper names it (``Table 3``).
``row_group``
    the header of the block of rows the row sits in (``Vision-Language Models (2B)``); empty
    where the table has no such blocks.
``row``
    the row label as it reads in the paper's text, citations dropped.
``column_group``
    the header spanning the column (``Text-First``, ``ImageNet``, ``Overall``); empty if none.
``column``
    the column header as printed, arrows and emphasis dropped (``α``, ``VT``, ``PSNR``,
    ``SDXL``).
``metric``
    what the number measures, in ASCII (``alpha``, ``accuracy``, ``gap``, ``PSNR``, ``AUC``).
``model``
    the model the number belongs to: the row for most tables, the column where models are
    columns; empty for an average over models.
``value``
    the number as a float.
``printed``
    the number exactly as printed (``0.0000``, ``+0.3``), so the paper's precision is kept;
    ``float(printed) == value``.
``in_zoo``
    ``yes`` if roundtrip's model zoo (:mod:`roundtrip.models`) loads the model, ``no`` if it
    does not, empty where that does not apply (averages; models that are not reconstruction
    models).
``source``
    the paper file (``shared/papers/*.txt``) and the table, e.g. ``003_cdb6ca00445dde7d.txt
    Table 3``.

A cell is identified by (``paper``, ``table``, ``row_group``, ``row``, ``column_group``,
``column``, ``metric``); a file holds one (``paper``, ``table``). Cells the paper leaves empty or
prints unreadably are absent, and the folder's README.md says which.
"""
from __future__ import annotations

import csv
import io
import math
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import pandas as pd

#: The columns of every published CSV, in file order.
COLUMNS = ("paper", "table", "row_group", "row", "column_group", "column", "metric", "model",
           "value", "printed", "in_zoo", "source")
#: The columns that identify a cell.
KEY = ("paper", "table", "row_group", "row", "column_group", "column", "metric")
#: Columns that may be empty.
OPTIONAL = ("row_group", "column_group", "model", "in_zoo")
#: Allowed values of ``in_zoo``.
IN_ZOO = ("yes", "no", "")
#: The folder inside an evaluation package.
FOLDER = "published"
#: The column of a run's row beside the published rows that says what it is over
#: (:func:`run_coverage`); published rows leave it empty.
RUN_N_COLUMN = "n"


class PublishedError(ValueError):
    """A published CSV that does not follow the schema; the message names the file."""


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def parse_published(text: str, name: str) -> pd.DataFrame:
    """Validate and parse the text of one published CSV.

    Args:
        text: the file's content.
        name: how to name the file in errors.

    Returns:
        the rows in file order, ``value`` as float, every other column as str.

    Raises:
        PublishedError: wrong columns, an empty required field, a value that is not a finite
            number or differs from ``printed``, a bad ``in_zoo``, more than one table in the
            file, or a duplicate cell.
    """
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise PublishedError(f"{name}: empty file, expected the header {','.join(COLUMNS)}")
    if tuple(header) != COLUMNS:
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        raise PublishedError(f"{name}: header {header} is not {list(COLUMNS)} "
                             f"(missing {missing}, unexpected {extra}; order matters)")
    records, seen = [], {}
    for line, fields in enumerate(reader, start=2):
        if not fields:
            continue
        if len(fields) != len(COLUMNS):
            raise PublishedError(f"{name}, line {line}: {len(fields)} fields, "
                                 f"expected {len(COLUMNS)}")
        rec = dict(zip(COLUMNS, fields))
        empty = [c for c in COLUMNS if c not in OPTIONAL and not rec[c].strip()]
        if empty:
            raise PublishedError(f"{name}, line {line}: empty {empty}")
        value, printed = _number(rec["value"]), _number(rec["printed"])
        if value is None:
            raise PublishedError(f"{name}, line {line}: value {rec['value']!r} is not a finite "
                                 "number")
        if printed is None or printed != value:
            raise PublishedError(f"{name}, line {line}: printed {rec['printed']!r} does not read "
                                 f"as the value {rec['value']!r}")
        if rec["in_zoo"] not in IN_ZOO:
            raise PublishedError(f"{name}, line {line}: in_zoo {rec['in_zoo']!r} is not one of "
                                 f"{list(IN_ZOO)}")
        key = tuple(rec[c] for c in KEY)
        if key in seen:
            raise PublishedError(f"{name}, line {line}: the cell {dict(zip(KEY, key))} is "
                                 f"already on line {seen[key]}")
        seen[key] = line
        rec["value"] = value
        records.append(rec)
    if not records:
        raise PublishedError(f"{name}: no rows")
    tables = sorted({(r["paper"], r["table"]) for r in records})
    if len(tables) > 1:
        raise PublishedError(f"{name}: one paper table per file, found {tables}")
    frame = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    frame["value"] = frame["value"].astype(float)
    return frame


def run_coverage(n: int, benchmark: int | None = None, unit: str = "questions") -> str:
    """What a run's row set beside a paper's published rows is over, for its
    :data:`RUN_N_COLUMN` cell: the published rows are over the whole benchmark, a run may be over
    part of it.

    Args:
        n: the items the run's row is over (>= 0).
        benchmark: the items of the paper's benchmark; None where unknown.
        unit: what the items are.

    Returns:
        ``"1,500 questions (the whole benchmark)"``, ``"300 of 1,500 questions (a subset of the
        benchmark)"``, or ``"300 questions"`` where ``benchmark`` is None.
    """
    if benchmark is None:
        return f"{n:,} {unit}"
    if n >= benchmark:
        return f"{n:,} {unit} (the whole benchmark)"
    return f"{n:,} of {benchmark:,} {unit} (a subset of the benchmark)"


def read_published_file(path: str | Path | Traversable) -> pd.DataFrame:
    """Read and validate one published CSV (see :func:`parse_published`)."""
    if isinstance(path, str):
        path = Path(path)
    return parse_published(path.read_text(encoding="utf-8"), str(path))


def published_files(package: str) -> list[Traversable]:
    """The CSVs of ``<package>/published/``, sorted by name.

    Raises:
        PublishedError: the package has no ``published`` folder or no CSV in it.
    """
    folder = resources.files(package).joinpath(FOLDER)
    if not folder.is_dir():
        raise PublishedError(f"{package}: no folder {FOLDER}/ with published tables")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".csv") and f.is_file()),
                   key=lambda f: f.name)
    if not files:
        raise PublishedError(f"{package}: {FOLDER}/ holds no CSV")
    return files


def read_published(package: str, table: str | None = None) -> pd.DataFrame:
    """All published cells of an evaluation package, validated.

    Args:
        package: the package that holds ``published/`` (``"roundtrip.evals.vista"``).
        table: keep only this table (``"Table 1"``); all tables if None.

    Returns:
        the rows of its CSVs in file-name order, with the columns :data:`COLUMNS`.

    Raises:
        PublishedError: no such folder, a malformed file, a table in two files, or ``table``
            not shipped.
    """
    frames, owner = [], {}
    for f in published_files(package):
        frame = parse_published(f.read_text(encoding="utf-8"), f"{package}/{FOLDER}/{f.name}")
        key = (frame["paper"].iat[0], frame["table"].iat[0])
        if key in owner:
            raise PublishedError(f"{package}: {key} is in both {owner[key]} and {f.name}")
        owner[key] = f.name
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    if table is not None:
        out = out[out["table"] == table].reset_index(drop=True)
        if out.empty:
            raise PublishedError(f"{package}: no published {table!r}; shipped: "
                                 f"{sorted(t for _, t in owner)}")
    return out
