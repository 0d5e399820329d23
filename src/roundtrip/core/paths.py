"""Paths that name many files: brace patterns (``shard-{000000..000009}.tar``) and globs
(``data/train-*.parquet``), as large image sets are usually stored.

Braces are expanded with ``braceexpand``, the expander webdataset uses for its shard lists, so a
pattern names the same shards here as it would in a webdataset pipeline; importing webdataset
itself would import torch into every process that plans a run.
"""
from __future__ import annotations

import glob
from pathlib import Path

_GLOB_CHARS = frozenset("*?[")


def is_pattern(path: str | Path) -> bool:
    """Whether ``path`` holds braces (``{a,b}``, ``{000..009}``) or glob characters (``*?[``)."""
    text = str(path)
    return "{" in text or any(c in _GLOB_CHARS for c in text)


def expand_pattern(pattern: str | Path) -> tuple[list[Path], list[str]]:
    """The files a pattern names, and the names it spells out that do not exist.

    Braces are expanded first, in the order written (``{000..009}`` counts up); each expansion
    that still holds glob characters adds its matches, sorted. A brace expansion without glob
    characters names one file exactly, so a missing one is reported; a glob that matches nothing
    names no file and is reported too (by the glob as written).

    Args:
        pattern: a path, brace pattern or glob (``~`` is not expanded here:
            :func:`roundtrip.core.config.resolve_data_root` does that for config paths).

    Returns:
        ``(files, missing)``: existing paths in pattern order, without repeats, and the
        expansions that name nothing.

    Raises:
        ValueError: unbalanced braces (the message quotes the pattern).
    """
    from braceexpand import braceexpand

    files, missing, seen = [], [], set()
    for name in braceexpand(str(pattern)):
        found = (sorted(glob.glob(name)) if any(c in _GLOB_CHARS for c in name)
                 else [name] if Path(name).exists() else [])
        if not found:
            missing.append(name)
        for f in found:
            if f not in seen:
                seen.add(f)
                files.append(Path(f))
    return files, missing


def any_exists(path: str | Path) -> bool:
    """Whether ``path`` exists or, for a pattern, names at least one existing file."""
    if Path(path).exists():
        return True
    if not is_pattern(path):
        return False
    try:
        return bool(expand_pattern(path)[0])
    except ValueError:  # unbalanced braces: the dataset's own check names them
        return False


def some_of(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names`` for a message, ``, ...`` marking the rest."""
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")
