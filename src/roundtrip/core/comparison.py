"""What an evaluation offers for a paired comparison of two checkpoints (models, readers, model
pairs): its per-item files, the metrics in them, their direction, the item and cluster keys,
and how a set-level number is recomputed from items.

An evaluation lists these in :attr:`roundtrip.core.evaluation.Evaluation.comparisons`; the
comparison layer (:mod:`roundtrip.tables.compare`) reads them and names no evaluation. The
statistics are :mod:`roundtrip.metrics.paired`'s.
"""
from __future__ import annotations

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

    def __hash__(self) -> int:  # ``where`` is a dict
        return hash((self.metric, self.files, self.kind, self.column, self.tables,
                     tuple(sorted(self.where.items()))))
