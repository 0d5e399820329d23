"""Compare the tables of two result folders and print every difference.

    python benchmarks/compare_results.py OLD/results NEW/results [--tables-only]

For each ``tables/*.csv`` (and, without ``--tables-only``, each per-item CSV under
``metrics/``, ``recon/*/*/status.csv`` and ``ocr/``): identical bytes, or the differences: a file
only on one side, rows or columns only on one side, and the cells that differ (old -> new). A
refactor that must not change numbers should print "identical" for every file; a change that adds
cells shows exactly those. Exit status 1 when anything differs (0 otherwise), so a script can
check it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

PATTERNS_ALL = ("tables/*.csv", "metrics/*/*/*.csv", "recon/*/*/status.csv", "ocr/*/*/*.csv")


def _frame(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _key(df: pd.DataFrame) -> str:
    """The column that names a row: the first one (model, dataset, item_id, Modality...)."""
    return df.columns[0]


def diff_csv(old: Path, new: Path, limit: int = 20) -> list[str]:
    """Differences of two CSVs: columns and rows on one side only, then differing cells
    (at most ``limit``). Empty when the bytes are identical."""
    if old.read_bytes() == new.read_bytes():
        return []
    a, b = _frame(old), _frame(new)
    out = []
    for name, cols in (("only old", [c for c in a.columns if c not in b.columns]),
                       ("only new", [c for c in b.columns if c not in a.columns])):
        if cols:
            out.append(f"columns {name}: {cols}")
    key = _key(a)
    if key != _key(b) or a[key].duplicated().any() or b[key].duplicated().any():
        a, b, key = a.reset_index(), b.reset_index(), "index"  # compare by row position
    a, b = a.set_index(key), b.set_index(key)
    for name, rows in (("only old", [r for r in a.index if r not in b.index]),
                       ("only new", [r for r in b.index if r not in a.index])):
        if rows:
            out.append(f"rows {name}: {rows}")
    cells = []
    for r in [r for r in a.index if r in b.index]:
        for c in [c for c in a.columns if c in b.columns]:
            if a.at[r, c] != b.at[r, c]:
                cells.append(f"  {r} / {c}: {a.at[r, c]!r} -> {b.at[r, c]!r}")
    if cells:
        more = f" (first {limit})" if len(cells) > limit else ""
        out.append(f"{len(cells)} cells differ{more}")
        out += cells[:limit]
    if not out:
        out.append("same values, different bytes (column or row order, formatting)")
    return out


def compare(old_root: Path, new_root: Path, patterns: tuple[str, ...]) -> int:
    """Print the comparison of every file matching ``patterns``; returns the number of files
    that differ (present on one side only included)."""
    n_diff = n_same = 0
    for pattern in patterns:
        old = {p.relative_to(old_root) for p in old_root.glob(pattern)}
        new = {p.relative_to(new_root) for p in new_root.glob(pattern)}
        for rel in sorted(old | new):
            if rel not in new or rel not in old:
                print(f"{rel}: only in {'old' if rel in old else 'new'}")
                n_diff += 1
                continue
            lines = diff_csv(old_root / rel, new_root / rel)
            if lines:
                n_diff += 1
                print(f"{rel}:")
                print("\n".join("  " + line for line in lines))
            else:
                n_same += 1
    print(f"{n_same} identical, {n_diff} different")
    return n_diff


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="results folder of the reference run")
    ap.add_argument("new", type=Path, help="results folder of the run to check")
    ap.add_argument("--tables-only", action="store_true", help="compare results/tables only")
    args = ap.parse_args()
    patterns = PATTERNS_ALL[:1] if args.tables_only else PATTERNS_ALL
    return 1 if compare(args.old, args.new, patterns) else 0


if __name__ == "__main__":
    sys.exit(main())
