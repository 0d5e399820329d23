"""The PDF report (reportlab), written for a reader first:

1. the front page: what ran and, for every evaluation, what it found (sentences with numbers
   from its tables, :meth:`roundtrip.core.evaluation.Evaluation.findings`); what did not run and
   why;
2. the headline figures, one per evaluation;
3. one section per evaluation: its tables in its paper's layout and order, the papers' published
   numbers beside them where the run used the paper's data, its figures;
4. the appendix: every table the body leaves out or shows in part, whole; the published tables
   on the papers' own data; metric definitions; the reconstruction galleries; the provenance
   of the run.

Tables come from the Markdown files (formatted as the reader sees them). A table wider than the
page has its column groups (``group: column`` headers: one per dataset or category) stacked as
blocks of rows under one header, then its long cells wrapped; only where that still does not
fit is it split into column parts that each repeat the row labels. No cell is cut. Every string goes through
:func:`.fonts.markup`, so CJK and Devanagari ground truth and OCR lines are in the text layer.
"""
from __future__ import annotations

import datetime
import fnmatch
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from roundtrip.report.fonts import markup, register
from roundtrip.report.sections import Section, appendix_tables, tables_of
from roundtrip.report.style import CELL_PT, paragraph_styles
from roundtrip.report.tables import (MdTable, column_widths, keep_columns, label_columns,
                                     read_markdown, split_columns, squeeze_widths,
                                     stack_groups)

#: The span of the dates derived from a config hash: the year 2000, which no real build has, so
#: the date inside a PDF built without ``SOURCE_DATE_EPOCH`` is never read as a build date.
DERIVED_EPOCH_START, DERIVED_EPOCH_SPAN = 946684800, 366 * 86400


def source_date(config_sha256: str, environ=None) -> tuple[int, str]:
    """The PDF's creation time (Unix seconds) and the date line of its cover.

    ``SOURCE_DATE_EPOCH`` (the reproducible-builds convention) when set: the cover shows that
    date. Otherwise a time in the year 2000 derived from the config's SHA-256 (hex), so a rebuild
    from the same config writes the same bytes; the cover then says that no date is recorded.

    Raises:
        ValueError: ``SOURCE_DATE_EPOCH`` is not an integer.
    """
    environ = os.environ if environ is None else environ
    value = environ.get("SOURCE_DATE_EPOCH", "").strip()
    if value:
        epoch = int(value)
        day = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).date().isoformat()
        return epoch, f"{day} (SOURCE_DATE_EPOCH)"
    epoch = DERIVED_EPOCH_START + int(config_sha256[:12], 16) % DERIVED_EPOCH_SPAN
    return epoch, ("not recorded (rebuilds write identical bytes; set SOURCE_DATE_EPOCH to stamp "
                   "a date)")


@contextmanager
def _fixed_timestamp(epoch: int):
    """reportlab reads its timestamp from ``SOURCE_DATE_EPOCH`` alone: set it while building."""
    old = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(int(epoch))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = old


@dataclass
class ReportInputs:
    """Everything the report shows.

    Attributes:
        tables: table name -> its Markdown file.
        figures: figure files (paths under ``results/figures/``).
        galleries: dataset -> (gallery PNG, OCR lines ``[{item_id, model, line}]``, ground truth
            ``{item_id: text}``).
        cover: ``title, date, version, commit, config_sha256``, ``ran`` / ``not_ran``
            (``[(evaluation, why)]``), ``failures`` (one line per (model, dataset) with failed
            items, :meth:`roundtrip.tables.failures.Failures.line`), ``slow`` (one line per
            (model, dataset) far slower at one input size,
            :meth:`roundtrip.tables.failures.Slowness.line`) and ``compute`` (the
            provenance records' compute fields:
            ``reproducibility``, ``cpu_capability``, ``threads``, ``promise``, ``gpu``).
        appendix: ``packages`` (name -> version), ``seeds``, ``config`` (YAML text),
            ``checksums`` (``[(table, inputs, digest of the input digests)]``), ``weights``
            (``[(file, sha256)]``), ``api`` (``[(endpoint, base_url)]`` that answered). No
            time: rule times are in ``results/benchmarks/``, not in the report.
        notes: remarks printed on the cover (fonts not found, ...).
        sections: one per evaluation, in order (the registered evaluations' report parts).
        findings: evaluation key -> its sentences for the front page.
        headlines: ``(evaluation key, figure PNG, caption)`` in section order.
        published: evaluation key -> its papers' published tables (:class:`.tables.MdTable`,
            rows from this run first where it ran the paper's data, published rows in
            ``MdTable.marked``).
        changes: the comparison of checkpoints (config ``compare:``;
            :func:`roundtrip.report.assemble.what_changed_inputs`): ``lines`` for page 1's
            "What changed", ``figures`` ``[(png, caption)]`` shown before the headline figures,
            ``table`` (the ``compare`` Markdown, whole in the appendix); empty: no section.
    """
    tables: dict[str, Path]
    figures: list[Path]
    galleries: dict[str, tuple[Path, list[dict], dict[str, str]]]
    cover: dict
    appendix: dict
    notes: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    findings: dict[str, list[str]] = field(default_factory=dict)
    headlines: list[tuple[str, Path, str]] = field(default_factory=list)
    published: dict[str, list[MdTable]] = field(default_factory=dict)
    changes: dict = field(default_factory=dict)

    #: What the front page says where an evaluation that ran states no findings.
    NO_FINDINGS = "This evaluation states no findings; its tables follow."

    def facts(self, keys=("config_name", "models", "datasets")) -> list[tuple[str, str]]:
        """``(label, value)`` of the cover's ``keys`` that are set, lists joined by commas."""
        labels = {"config_name": "Config", "models": "Models", "datasets": "Datasets",
                  "commit": "Commit"}
        out = []
        for key in keys:
            if key in self.cover:
                value = self.cover[key]
                out.append((labels[key], ", ".join(value) if isinstance(value, (list, tuple))
                            else str(value)))
        return out

    def ran_findings(self) -> list[tuple[str, str, list[str]]]:
        """``(evaluation name, what it ran on, its sentences)`` of every evaluation that ran,
        in section order; the sentences are :data:`NO_FINDINGS` where it states none."""
        ran = dict(self.cover.get("ran", []))
        return [(s.name or s.key, ran[s.name or s.key],
                 self.findings.get(s.key) or [self.NO_FINDINGS])
                for s in self.sections if (s.name or s.key) in ran]


def _p(text, style):
    from reportlab.platypus import Paragraph

    return Paragraph(markup(text), style)


def fit_table(t: MdTable, page_width: float
              ) -> tuple[MdTable, int, list[int], list[list[int]], list[float]]:
    """How a table is laid out on a page of ``page_width`` points: as it is where it fits;
    else its column groups stacked as blocks of rows (:func:`.tables.stack_groups`); else its
    long cells wrapped (:func:`.tables.squeeze_widths`); only where even the longest words do
    not fit, split into column parts that repeat the label columns.

    Returns:
        ``(table, label columns, first row of each block, column index parts, column widths)``.
    """
    char = CELL_PT * 0.55
    widths = column_widths(t, char)
    labels, starts = label_columns(t.header), []
    if sum(widths) > page_width and (stacked := stack_groups(t)) is not None:
        t, labels, starts = stacked
        widths = column_widths(t, char)
    if sum(widths) > page_width and (squeezed := squeeze_widths(t, widths, char, page_width)):
        widths = squeezed
    return t, labels, starts, split_columns(widths, labels, page_width), widths


def table_flowables(name: str, md: Path | MdTable, st: dict, page_width: float,
                    columns: tuple[str, ...] = (), title: str | None = None) -> list:
    """A table's title, the table laid out to fit ``page_width`` (:func:`fit_table`) and its
    notes. ``columns``: show only these grouped columns (:func:`.tables.keep_columns`)."""
    from reportlab.lib import colors
    from reportlab.platypus import KeepTogether, Spacer, Table, TableStyle

    t = md if isinstance(md, MdTable) else read_markdown(md)
    if columns:
        t = keep_columns(t, columns)
    shown = len(t.header)
    t, labels, starts, parts, widths = fit_table(t, page_width)
    heading = title or f"{t.title} ({name})"
    out = [_p(heading, st["h2"])]
    if columns:
        out.append(_p(f"Shown here: {shown} columns of the table; the appendix has all of them.",
                      st["small"]))
    if starts:
        out.append(_p("One block of rows per column group (the paper's per-dataset layout), "
                      "the header repeated on every page.", st["small"]))
    for k, cols in enumerate(parts):
        data = [[_p(t.header[j], st["head"]) for j in cols]]
        data += [[_p(r[j], st["published"] if i in t.marked else st["cell"]) for j in cols]
                 for i, r in enumerate(t.rows)]
        scale = min(1.0, page_width / sum(widths[j] for j in cols))
        table = Table(data, colWidths=[widths[j] * scale for j in cols], repeatRows=1)
        style = [("LINEBELOW", (0, 0), (-1, 0), 0.5, colors.black),
                 ("ROWBACKGROUNDS", (0, 1), (-1, -1), [colors.white, colors.HexColor("#f2f2f2")]),
                 ("VALIGN", (0, 0), (-1, -1), "TOP"),
                 ("LEFTPADDING", (0, 0), (-1, -1), 2), ("RIGHTPADDING", (0, 0), (-1, -1), 2)]
        style += [("LINEABOVE", (0, s0 + 1), (-1, s0 + 1), 0.4, colors.grey) for s0 in starts[1:]]
        table.setStyle(TableStyle(style))
        if len(parts) > 1:
            shown_cols = [j + 1 for j in cols[labels:]]
            out.append(_p(f"part {k + 1} of {len(parts)}: columns {shown_cols[0]}-"
                          f"{shown_cols[-1]} of {len(t.header)} (row labels repeated)",
                          st["small"]))
        out.append(table)
        out.append(Spacer(1, 4))
    notes = [_p(n, st["small"]) for n in t.notes]
    return out + ([KeepTogether(notes)] if notes else []) + [Spacer(1, 8)]


def _image(path: Path, width: float, max_height: float):
    from reportlab.lib.utils import ImageReader
    from reportlab.platypus import Image

    w, h = ImageReader(str(path)).getSize()
    scale = min(width / w, max_height / h)
    return Image(str(path), width=w * scale, height=h * scale)


def _figures_of(section, figures: list[Path]) -> list[Path]:
    out = []
    for pattern in section.figures:
        out += sorted(f for f in figures if fnmatch.fnmatch(
            f.as_posix().split("results/figures/", 1)[-1], pattern) and f not in out)
    return out


def _gallery(dataset: str, entry, st, width: float) -> list:
    from reportlab.platypus import Spacer

    png, lines, truth = entry
    out = [_p(f"Gallery: {dataset}", st["h2"]), _image(Path(png), width, 300)]
    for item in dict.fromkeys(line["item_id"] for line in lines):
        if truth.get(item):
            out.append(_p(f"{item}, ground truth: {truth[item][:200]}", st["small"]))
        for line in (x for x in lines if x["item_id"] == item):
            out.append(_p(f"{item}, {line['model']} read: {line['line'][:200]}", st["small"]))
    return out + [Spacer(1, 8)]


def _labelled(label: str, value, style):
    """A paragraph ``label: value`` with the label in bold."""
    from xml.sax.saxutils import escape

    from reportlab.platypus import Paragraph

    bold = register()[0]["bold"]
    return Paragraph(f'<font name="{bold}">{escape(label)}</font>: {markup(value)}', style)


def _front_page(inputs: ReportInputs, st: dict) -> list:
    """Page 1: the run in a few lines, then what each evaluation found, then what did not run."""
    from reportlab.platypus import PageBreak, Spacer

    c = inputs.cover
    out = [_p(c.get("title", "roundtrip report"), st["title"]), Spacer(1, 4)]
    out += [_labelled(label, value, st["body"]) for label, value in inputs.facts()]
    out.append(_labelled("Commit", f"{c.get('commit', 'unknown')} (roundtrip "
                         f"{c.get('version', 'unknown')}); config SHA-256 "
                         f"{c.get('config_sha256', 'unknown')}", st["small"]))
    out.append(_labelled("Date", f"{c.get('date', 'unknown')}. Each job's wall time and memory "
                         "are in results/benchmarks/, not in this file, so that a rebuild writes "
                         "the same bytes", st["small"]))
    out += [Spacer(1, 4), _p("Findings", st["h1"])]
    for label, what, sentences in inputs.ran_findings():
        out.append(_p(f"{label} ({what})" if what else label, st["h3"]))
        out += [_p(f"• {x}", st["finding"]) for x in sentences]
    if inputs.changes.get("lines"):  # the config's compare: entries
        out.append(_p("What changed", st["h3"]))
        out += [_p(f"• {x}", st["finding"]) for x in inputs.changes["lines"]]
    out.append(_p("What did not run, and why", st["h3"]))
    out += [_p(f"{name}: {why}", st["finding"]) for name, why in c.get("not_ran", [])] or \
        [_p("everything configured ran", st["finding"])]
    if c.get("failures"):  # items a model could not reconstruct: the tables count them apart
        out.append(_p("Items that failed", st["h3"]))
        out += [_p(line, st["finding"]) for line in c["failures"]]
    if c.get("slow"):  # a model far slower at one input size: its time is in status.csv
        out.append(_p("Items far slower at one size", st["h3"]))
        out += [_p(line, st["finding"]) for line in c["slow"]]
    compute = c.get("compute")
    if compute:
        gpu = compute.get("gpu")
        where = f"; GPU {gpu['name']}, CUDA {gpu['cuda']}, cuDNN {gpu['cudnn']}" if gpu else ""
        out.append(_p(f"Reproducibility: {compute['reproducibility']} (CPU kernels "
                      f"{compute['cpu_capability']}, threads {compute['threads']}{where}): "
                      f"{compute['promise']}", st["small"]))
    for note in inputs.notes:
        out.append(_p(f"Note: {note}", st["small"]))
    return out + [PageBreak()]


def _headline_pages(inputs: ReportInputs, st: dict, width: float) -> list:
    """The headline figures, one per evaluation, three to a page."""
    from reportlab.platypus import KeepTogether, PageBreak, Spacer

    changed = inputs.changes.get("figures") or []
    if not inputs.headlines and not changed:
        return []
    titles = {s.key: s.title for s in inputs.sections}
    out = [_p("Headline figures", st["h1"])]
    for k, (png, caption) in enumerate(changed):  # first what changed between checkpoints,
        # at print width (a page's height at most), then the headline figures flow on
        out.append(KeepTogether([_p("What changed", st["h2"]) if not k else Spacer(1, 0),
                                 _image(Path(png), width, 640 if not k else 330),
                                 _p(caption, st["small"]), Spacer(1, 6)]))
    for key, png, caption in inputs.headlines:
        out.append(KeepTogether([_p(titles.get(key, key), st["h2"]), _image(Path(png), width, 230),
                                 _p(caption, st["small"]), Spacer(1, 6)]))
    return out + [PageBreak()]


def _section(section: Section, inputs: ReportInputs, st: dict, width: float) -> list:
    """One evaluation's body: its tables (in its order, fitted to the page), the published
    tables on the run's own data, its figures. It starts on a new page only where less than a
    third of the current one is left."""
    from reportlab.lib.units import cm
    from reportlab.platypus import CondPageBreak

    names = tables_of(section, list(inputs.tables))
    figures = [f for f in _figures_of(section, inputs.figures) if "gallery/" not in f.as_posix()]
    published = inputs.published.get(section.key, [])
    if not names and not figures:
        return []
    out = [CondPageBreak(9 * cm), _p(section.title, st["h1"]),
           _p(f"Reproduces: {section.paper}. Metric definitions are in appendix C.", st["body"])]
    for name in names:
        out += table_flowables(name, inputs.tables[name], st, width,
                               columns=tuple(section.columns.get(name, ())))
    for table in (t for t in published if t.marked):
        out += table_flowables("published", table, st, width, title=table.title)
    if any(not t.marked and t.rows for t in published):
        out.append(_p("The paper's published numbers on its own data are in appendix B.",
                      st["small"]))
    if _galleries_of(section, inputs):
        out.append(_p("The reconstruction galleries, with each model's OCR lines, are in "
                      "appendix D.", st["small"]))
    for fig in figures:
        out += [_p(figure_caption(fig), st["small"]), _image(fig, width, 280)]
    return out


#: The captions of the figures (``report/{name}.rst``, as Snakemake's report shows them).
CAPTIONS = Path(__file__).resolve().parents[3] / "report"


def figure_caption(fig: Path) -> str:
    """A section figure's caption: ``report/{stem}_figure.rst`` or ``report/{stem}.rst`` (the
    caption its rule gives Snakemake's report), one paragraph; the file name where neither
    exists (an installed package without the repository's report folder)."""
    for name in (f"{fig.stem}_figure.rst", f"{fig.stem}.rst"):  # a table may share the stem
        if (CAPTIONS / name).is_file():
            return " ".join((CAPTIONS / name).read_text().split())
    return fig.name


def _galleries_of(section: Section, inputs: ReportInputs) -> list[str]:
    """The datasets of the section's gallery figures that have a gallery in this run."""
    return [f.stem for f in _figures_of(section, inputs.figures)
            if "gallery/" in f.as_posix() and f.stem in inputs.galleries]


def _appendix_tables(inputs: ReportInputs, st: dict, width: float) -> list:
    """Appendix A: every table the body leaves out or shows only in part, with all columns;
    B: the papers' published tables on their own data; C: each evaluation's metric
    definitions; D: the reconstruction galleries with their OCR lines (E, the provenance, is
    :func:`_appendix`'s)."""
    out = []
    if inputs.changes.get("table"):
        out.append(_p("What changed: every compared row", st["h2"]))
        out += table_flowables("compare", inputs.changes["table"], st, width)
    for section in inputs.sections:
        names = appendix_tables(section, list(inputs.tables))
        if names:
            out.append(_p(f"{section.title}: tables in full", st["h2"]))
            for name in names:
                out += table_flowables(name, inputs.tables[name], st, width)
    if out:
        out.insert(0, _p("Appendix A: tables in full", st["h1"]))
    out += _published_other_data(inputs, st, width)
    galleries = [(s, d) for s in inputs.sections for d in _galleries_of(s, inputs)]
    defined = [s for s in inputs.sections if s.definitions and
               (tables_of(s, list(inputs.tables)) or _figures_of(s, inputs.figures))]
    if defined:
        out.append(_p("Appendix C: metric definitions", st["h1"]))
        for section in defined:
            out.append(_p(section.title, st["h2"]))
            out += [_p(f"{metric}: {definition} ({source}).", st["small"])
                    for metric, definition, source in section.definitions]
    if galleries:
        out.append(_p("Appendix D: reconstruction galleries", st["h1"]))
        for _, dataset in galleries:
            out += _gallery(dataset, inputs.galleries[dataset], st, width)
    return out


def _published_other_data(inputs: ReportInputs, st: dict, width: float) -> list:
    """Appendix B: the papers' published tables on their own data, only the rows of models
    this run has results for (:func:`roundtrip.report.assemble.published_of`); a table left
    with none is named in one line, with where all published numbers are."""
    others = [(s, t) for s in inputs.sections for t in inputs.published.get(s.key, [])
              if not t.marked]
    if not others:
        return []
    out = [_p("Appendix B: published results, other data", st["h1"]),
           _p("The papers' numbers as printed, for reference: measured on the papers' data, not "
              "on this run's; this run did not use the paper's data and protocol for these "
              "tables. Only the rows of models this run evaluated are printed.", st["body"])]
    for section, table in others:
        if table.rows:
            out += table_flowables("published", table, st, width,
                                   title=f"{section.title}: {table.title}")
    left = {}
    for section, table in others:
        if not table.rows:
            left.setdefault(section.title, []).append(f"{table.title} ({'; '.join(table.notes)})")
    out += [_p(f"{title}: not printed, as none of their models ran here: {', '.join(tables)}.",
               st["small"]) for title, tables in left.items()]
    if left:
        out.append(_p("Every published number is in docs/published-results.md "
                      "(roundtrip.tables.published.read_published).", st["small"]))
    return out


def _appendix(inputs: ReportInputs, st: dict, width: float) -> list:
    from reportlab.platypus import PageBreak, Preformatted, Spacer, Table

    a = inputs.appendix
    out = [PageBreak(), _p("Appendix E: provenance", st["h1"])]

    def grid(rows, header):
        data = [[_p(h, st["head"]) for h in header]] + [[_p(str(v), st["cell"]) for v in r]
                                                        for r in rows]
        return Table(data, repeatRows=1, hAlign="LEFT")

    out += [_p("Package versions", st["h2"]),
            grid(sorted(a.get("packages", {}).items()), ["package", "version"])]
    out += [_p("Seeds", st["h2"]), grid(sorted(a.get("seeds", {}).items()), ["parameter", "seed"])
            if a.get("seeds") else _p("no seeds in the table jobs' parameters", st["body"])]
    out += [_p("Inputs of each table (SHA-256 of the list of input digests)", st["h2"]),
            grid(a.get("checksums", []), ["table", "input files", "digest"])]
    out += [_p("Weights used (metric weights, trained checkpoints; SHA-256 prefix)", st["h2"]),
            grid(a["weights"], ["file", "sha256"]) if a.get("weights")
            else _p("no weight file (metric weights missing: LPIPS and FID read n/a; no "
                    "trained model)", st["body"])]
    out += [_p("API endpoints that answered (counts: results/api/usage_summary.csv)", st["h2"]),
            grid(a["api"], ["endpoint", "base_url"]) if a.get("api")
            else _p("no API was used", st["body"])]
    out += [Spacer(1, 6), _p("The configuration", st["h2"]),
            Preformatted(a.get("config", ""), st["mono"])]
    return out


class PageCount(int):
    """The PDF's page count, with ``body`` (front page to the last evaluation section) and
    ``appendix`` pages."""
    body: int
    appendix: int


def _page_mark(marks: list):
    """A flowable that records the page it lands on in ``marks``."""
    from reportlab.platypus import Flowable

    class Mark(Flowable):
        def wrap(self, *args):
            return 0, 0

        def draw(self):
            marks.append(self.canv.getPageNumber())

    return Mark()


def build_report(path: str | Path, inputs: ReportInputs, epoch: int | None = None) -> PageCount:
    """Write the PDF; returns its page count (:class:`PageCount`: also the body's and the
    appendix's).

    Args:
        epoch: the PDF's creation time in Unix seconds (:func:`source_date`); with it the file
            is byte-identical for identical inputs (reportlab's invariant mode: no random ids,
            sorted dictionaries). None: the current time (a new file each build).

    Raises:
        ImportError: reportlab is not installed.
    """
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import cm
    from reportlab.platypus import PageBreak, SimpleDocTemplate

    st = paragraph_styles()
    doc = SimpleDocTemplate(str(path), pagesize=A4, leftMargin=1.5 * cm, rightMargin=1.5 * cm,
                            topMargin=1.5 * cm, bottomMargin=1.5 * cm,
                            title=inputs.cover.get("title", "roundtrip report"),
                            author="roundtrip", creator="roundtrip (reportlab)",
                            invariant=int(epoch is not None))
    width = doc.width
    story = _front_page(inputs, st) + _headline_pages(inputs, st, width)
    for section in inputs.sections:
        story += _section(section, inputs, st, width)
    marks: list[int] = []
    story += [PageBreak(), _page_mark(marks)]
    story += _appendix_tables(inputs, st, width)
    story += _appendix(inputs, st, width)
    pages: list[int] = []
    if epoch is None:
        doc.build(story, onLaterPages=lambda c, d: pages.append(d.page),
                  onFirstPage=lambda c, d: pages.append(d.page))
    else:
        with _fixed_timestamp(epoch):
            doc.build(story, onLaterPages=lambda c, d: pages.append(d.page),
                      onFirstPage=lambda c, d: pages.append(d.page))
    count = PageCount(len(pages))
    # the mark sits after the last section's page break: the appendix starts on its page
    count.body = (marks[0] - 1) if marks else len(pages)
    count.appendix = len(pages) - count.body
    return count
