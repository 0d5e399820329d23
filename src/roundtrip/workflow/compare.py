"""The comparison of checkpoints run end to end, for both ways in: rule ``compare`` (the
config's ``compare:`` entries, both sides in one results folder) and ``roundtrip compare``
(two finished results folders). It pairs the names, runs :func:`roundtrip.tables.compare
.compare` over the registered evaluations and writes what a person reads
(:func:`roundtrip.report.compare.write_comparison`) with the provenance of both tables."""
from __future__ import annotations

import json
from pathlib import Path

from roundtrip.metrics.paired import PairedSettings
from roundtrip.report.compare import ITEMS_TABLE, ROWS_TABLE, summary_text, write_comparison
from roundtrip.tables.compare import (CompareError, Comparison, PairSpec, Run, common_names,
                                      compare, regressions, row_text)
from roundtrip.tables.provenance import provenance


def pairs_between(run_a: Run, run_b: Run, evaluations, baseline: str | None = None,
                  candidate: str | None = None, margins: dict | None = None) -> list[PairSpec]:
    """The pairs of ``roundtrip compare``: ``baseline`` (read in A) against ``candidate`` (read
    in B), one defaulting to the other; with neither, every name both runs hold, each against
    itself.

    Raises:
        CompareError: the two runs share no name.
    """
    if baseline or candidate:
        names = [(baseline or candidate, candidate or baseline)]
    else:
        names = [(n, n) for n in common_names(run_a, run_b, evaluations)]
    if not names:
        raise CompareError(f"{run_a.folder} and {run_b.folder} share no model, reader or pair: "
                           "name them with --baseline and --candidate")
    return [PairSpec(a, b, margins=dict(margins or {})) for a, b in names]


def run_comparison(run_a: Run, run_b: Run, pairs: list[PairSpec], evaluations,
                   settings: PairedSettings, tables_dir: str | Path, figures_dir: str | Path,
                   rule: str, command: str, params: dict, extra_inputs=(), config=None,
                   gallery_items: int = 3) -> tuple[Comparison, list[str]]:
    """Compare, write the tables ``compare`` and ``compare_items`` with their provenance
    records, the differences figure and the gallery; returns the comparison and its "What
    changed" lines.

    Args:
        rule, command: what the provenance records name as the maker and the command that
            regenerates the tables.
        params: the settings recorded (hashed) in the provenance records.
        extra_inputs: files recorded as inputs beside the per-item files read.
        config: the workflow config (its compute fields), or None.
    """
    result = compare(run_a, run_b, pairs, evaluations, settings, gallery_items=gallery_items)
    write_comparison(result, tables_dir, figures_dir, settings)
    inputs = [*map(str, extra_inputs), *map(str, result.inputs)]
    for table in (ROWS_TABLE, ITEMS_TABLE):
        record = provenance(table, rule, inputs, params, config)
        record["command"] = command
        (Path(tables_dir) / f"{table}.provenance.json").write_text(
            json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
    return result, summary_text(result.rows, result.items)


def regression_lines(result: Comparison) -> list[str]:
    """One line per row worse after correction (``--fail-on-regression``), empty where none."""
    worse = regressions(result.rows)
    return [f"{r['comparison']}, {r['evaluation']}: {row_text(r)}" for _, r in worse.iterrows()]
