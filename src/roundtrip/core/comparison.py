"""What an evaluation offers for a paired comparison of two checkpoints (models, readers, model
pairs): its per-item files, the metrics in them, their direction, the item and cluster keys,
and how a set-level number is recomputed from items.

An evaluation lists these in :attr:`roundtrip.core.evaluation.Evaluation.comparisons`; the
comparison layer (:mod:`roundtrip.tables.compare`) reads them and names no evaluation. The
statistics are :mod:`roundtrip.metrics.paired`'s.

Each declaration names its metric's *definition* (``definition``: what the numbers mean and the
version of their computation, with the config settings that change them); the provenance record
of every table the declaration names holds it (``definitions``, :func:`recorded_definitions`),
so that two finished runs can tell whether they measured a metric alike.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

#: The wildcard of a file pattern that holds the compared name (a model, a VISTA reader, a
#: Telephone pair).
NAME = "name"
#: The wildcard of the dataset.
DATASET = "dataset"


class NotMeasured(LookupError):
    """Raised by a ``set_value`` function where the run did not measure the metric at all (FID
    without the Inception weights): the comparison makes no row of it."""


@dataclass(frozen=True)
class ComparedMetric:
    """One metric an evaluation compares between a baseline and a candidate.

    Attributes:
        metric: its key in :data:`roundtrip.metrics.METRICS` (direction, printed precision,
            label), or a name of the evaluation's own with ``higher_is_better`` and ``digits``.
        files: the per-item (or set-level) file pattern under the results folder, with
            ``{name}`` where the compared name goes, ``{dataset}``, and any other wildcard
            (``{ocr}``, ``{model}``, ``{reader}``), which becomes a dimension of the row (the
            same value on both sides).
        kind: ``continuous`` (a per-item number), ``binary`` (a per-item 0/1 outcome) or
            ``set`` (a set-level number recomputed from the items, ``set_value``).
        column: the per-item column (continuous and binary); for ``set``, the column of the
            per-item rows that must be a number for an item to count (or None: every ``ok``
            row).
        tables: table names (a name ending in ``_`` is a prefix) whose provenance records list
            the files: only files some of these tables read are compared, so a file pattern
            shared by two evaluations (``image_quality.csv``) is read by each for its own
            datasets only.
        item: the columns that identify an item in both runs (joined with ``/``).
        cluster: the columns whose values group nested items, resampled together (a volume's
            slices, a chain's generations, a question's renders); empty: items are
            independent.
        where: row filters, column -> the value (as text) a row must have (e.g. ``mode: vt``).
        headline: one of the evaluation's headline metrics (the family Holm's correction runs
            over).
        scale: factor applied to the values before comparing (100 for an accuracy in %).
        label: the printed name (default: the metric's label in METRICS).
        higher_is_better, digits: for a metric outside METRICS.
        set_value: for ``set``: ``"module:function"``, a function ``(baseline, candidate) ->
            statistic`` taking the two sides' aligned per-item rows
            (:class:`roundtrip.tables.compare.Side`) and returning a vectorized function of item
            weights ``[B, n] -> [B, 2]`` (the two set numbers under each weighting).
        references: patterns (same wildcards, without ``{name}``) of files that define the
            metric, which must hold the same bytes in both runs (the OCR of the originals a CER
            is measured against, a reference tokenizer's checkpoint): a changed one is named
            and the row is left out.
        images: a pattern of an item's image (``{item}`` for its id) on each side, for the
            galleries of the items that changed most (e.g. ``recon/{name}/{dataset}/{item}.png``),
            or several tried in order (the first that is a file on both sides);
            ``original`` the pattern of the item's original. A declaration with ``text`` goes to
            the gallery of the OCR and VISTA items that flipped
            (:func:`roundtrip.report.compare.flipped_gallery`), the others to that of the items
            that changed most (:func:`roundtrip.report.compare.changed_gallery`).
        image_item: the per-item column whose value is ``{item}`` in ``images`` and
            ``original`` where the item key is another (a question's Table 1 render, keyed by
            ``question_id``, is the image ``item_id``); empty: the item key.
        text: what a side read or answered per item, shown beside the items that changed
            (an OCR line, an extracted answer): a column of the per-item file, or
            ``"pattern:column"`` of another file of the side (``ocr/{ocr}/{name}/{dataset}.csv:text``).
        note: a sentence every row of the metric carries (how its set number is recomputed,
            where that differs from the table's number).
        wildcards: a regular expression per wildcard of ``files`` (as Snakemake's wildcard
            constraints), where a pattern would also match other files (``text_{ocr}.csv`` and
            ``text_set_{ocr}.csv``); default ``[^/]+``.
        rows: ``"module:function"`` turning the file as read into per-item rows (item keys,
            ``status``, ``reason``, ``column``) where the file is not one row per item (a chain's
            similarities per generation and experiment -> its MCD); None: the file's rows.
        definition: what the metric's numbers are, in a few words ending in a version
            (``v1``) bumped whenever roundtrip computes them otherwise (a change of
            convention, or of implementation that moves a value even by 1e-6); ``{a.b}`` is
            the run's config setting ``a.b`` that changes them (``{metrics.lpips.net}``).
            Written into the provenance record of each table it names
            (:func:`recorded_definitions`); between two runs a row whose definitions differ,
            or that a run did not record, is named and left out. Empty: the metric key.
    """
    metric: str
    files: str
    kind: str = "continuous"
    column: str | None = None
    tables: tuple[str, ...] = ()
    item: tuple[str, ...] = ("item_id",)
    cluster: tuple[str, ...] = ()
    where: dict[str, str] = field(default_factory=dict)
    headline: bool = False
    scale: float = 1.0
    label: str = ""
    higher_is_better: bool | None = None
    digits: int | None = None
    set_value: str | None = None
    references: tuple[str, ...] = ()
    images: str | tuple[str, ...] = ""
    original: str = ""
    text: str = ""
    image_item: str = ""
    note: str = ""
    rows: str | None = None
    wildcards: dict[str, str] = field(default_factory=dict)
    definition: str = ""

    def __hash__(self) -> int:  # ``where`` is a dict
        return hash((self.metric, self.files, self.kind, self.column, self.tables,
                     tuple(sorted(self.where.items()))))


def names_table(tables, table: str) -> bool:
    """Whether ``table`` is one of a declaration's ``tables`` (a name ending in ``_`` is a
    prefix); a declaration with no tables names every table."""
    return not tables or any(table == t or (t.endswith("_") and table.startswith(t))
                             for t in tables)


_SETTING = re.compile(r"{([A-Za-z_][\w-]*(?:\.[\w-]+)*)}")


def definition_text(cm: ComparedMetric, config: dict | None = None) -> str:
    """A declaration's ``definition`` with each ``{a.b}`` replaced by the config's setting
    (text as it is, any other value as compact JSON, ``unset`` where the config lacks it), or
    the metric key where it declares none."""
    def setting(m: re.Match) -> str:
        value = config or {}
        for part in m.group(1).split("."):
            if not isinstance(value, dict) or part not in value:
                return "unset"
            value = value[part]
        return value if isinstance(value, str) else json.dumps(
            value, sort_keys=True, separators=(",", ":"), default=str)

    return _SETTING.sub(setting, cm.definition) if cm.definition else cm.metric


def table_definitions(table: str, evaluations, config: dict | None = None
                      ) -> dict[str, dict[str, str]]:
    """``evaluation key -> metric -> definition`` (:func:`definition_text`) of the
    declarations that name ``table``; evaluations with none are left out."""
    out: dict[str, dict[str, str]] = {}
    for ev in evaluations.values():
        for cm in ev.comparisons:
            if names_table(cm.tables, table):
                out.setdefault(ev.key, {})[cm.metric] = definition_text(cm, config)
    return out


def recorded_definitions(table: str, config: dict | None = None) -> dict[str, dict[str, str]]:
    """The ``definitions`` of a table's provenance record: :func:`table_definitions` over the
    registered evaluations (with the config's ``evaluations.plugins`` and ``paths``); empty
    where none names the table, or where they do not load (a comparison between two runs then
    leaves the rows out as not recorded)."""
    from roundtrip.core.evaluation import RegistryError, load_evaluations

    section = (config or {}).get("evaluations") or {}
    try:
        evaluations = load_evaluations(section.get("plugins") or (), section.get("paths") or ())
    except RegistryError:
        return {}
    return table_definitions(table, evaluations, config)
