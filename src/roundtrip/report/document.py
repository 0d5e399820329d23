"""The PDF report (reportlab): a cover, one section per evaluation (metric definitions, its
tables with their notes, its figures, the reconstruction galleries with their OCR lines as text),
and an appendix with the provenance of the run.

Tables come from the Markdown files (formatted as the reader sees them); a table wider than the
page is split into column parts that each repeat the row labels, never cut. Every string goes
through :func:`.fonts.markup`, so CJK and Devanagari ground truth and OCR lines are in the text
layer.
"""
from __future__ import annotations

import datetime
import fnmatch
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from roundtrip.report.fonts import markup, register
from roundtrip.report.sections import Section, tables_of
from roundtrip.report.tables import column_widths, label_columns, read_markdown, split_columns

CELL_PT = 6.5  # table font size

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
            (``[(evaluation, why)]``) and ``compute`` (the provenance records' compute fields:
            ``reproducibility``, ``cpu_capability``, ``threads``, ``promise``, ``gpu``).
        appendix: ``packages`` (name -> version), ``seeds``, ``config`` (YAML text),
            ``checksums`` (``[(table, inputs, digest of the input digests)]``), ``weights``
            (``[(file, sha256)]``), ``api`` (``[(endpoint, base_url)]`` that answered). No
            time: rule times are in ``results/benchmarks/``, not in the report.
        notes: remarks printed on the cover (fonts not found, ...).
        sections: one per evaluation, in order (the registered evaluations' report parts).
    """
    tables: dict[str, Path]
    figures: list[Path]
    galleries: dict[str, tuple[Path, list[dict], dict[str, str]]]
    cover: dict
    appendix: dict
    notes: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)


def _styles():
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet

    faces, _ = register()
    base = getSampleStyleSheet()
    st = {
        "title": ParagraphStyle("t", parent=base["Title"], fontName=faces["bold"], fontSize=20),
        "h1": ParagraphStyle("h1", parent=base["Heading1"], fontName=faces["bold"], fontSize=14),
        "h2": ParagraphStyle("h2", parent=base["Heading2"], fontName=faces["bold"], fontSize=10.5),
        "body": ParagraphStyle("b", parent=base["BodyText"], fontName=faces["latin"],
                               fontSize=8.5, leading=11),
        "small": ParagraphStyle("s", parent=base["BodyText"], fontName=faces["latin"],
                                fontSize=6.5, leading=8),
        "cell": ParagraphStyle("c", parent=base["BodyText"], fontName=faces["latin"],
                               fontSize=CELL_PT, leading=CELL_PT + 1.5),
        "head": ParagraphStyle("hd", parent=base["BodyText"], fontName=faces["bold"],
                               fontSize=CELL_PT, leading=CELL_PT + 1.5),
        "mono": ParagraphStyle("m", parent=base["Code"], fontName=faces["mono"], fontSize=6,
                               leading=7.2),
    }
    return st


def _p(text, style):
    from reportlab.platypus import Paragraph

    return Paragraph(markup(text), style)


def table_flowables(name: str, md: Path, st: dict, page_width: float) -> list:
    """A table's title, its column parts (split to fit ``page_width``) and its notes."""
    from reportlab.lib import colors
    from reportlab.platypus import KeepTogether, Spacer, Table, TableStyle

    t = read_markdown(md)
    widths = column_widths(t, CELL_PT * 0.55)
    labels = label_columns(t.header)
    parts = split_columns(widths, labels, page_width)
    out = [_p(f"{t.title} ({name})", st["h2"])]
    for k, cols in enumerate(parts):
        data = [[_p(t.header[j], st["head"]) for j in cols]]
        data += [[_p(r[j], st["cell"]) for j in cols] for r in t.rows]
        scale = min(1.0, page_width / sum(widths[j] for j in cols))
        table = Table(data, colWidths=[widths[j] * scale for j in cols], repeatRows=1)
        table.setStyle(TableStyle([
            ("LINEBELOW", (0, 0), (-1, 0), 0.5, colors.black),
            ("ROWBACKGROUNDS", (0, 1), (-1, -1), [colors.white, colors.HexColor("#f2f2f2")]),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ("LEFTPADDING", (0, 0), (-1, -1), 2), ("RIGHTPADDING", (0, 0), (-1, -1), 2)]))
        if len(parts) > 1:
            shown = [j + 1 for j in cols[labels:]]
            out.append(_p(f"part {k + 1} of {len(parts)}: columns {shown[0]}-{shown[-1]} of "
                          f"{len(t.header)} (row labels repeated)", st["small"]))
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


def _cover(inputs: ReportInputs, st: dict) -> list:
    from reportlab.platypus import PageBreak, Spacer

    c = inputs.cover
    out = [Spacer(1, 40), _p(c.get("title", "roundtrip report"), st["title"]), Spacer(1, 12)]
    for label, key in (("Date", "date"), ("roundtrip version", "version"), ("Commit", "commit"),
                       ("Config SHA-256", "config_sha256")):
        out.append(_p(f"{label}: {c.get(key, 'unknown')}", st["body"]))
    compute = c.get("compute")
    if compute:
        gpu = compute.get("gpu")
        where = f"; GPU {gpu['name']}, CUDA {gpu['cuda']}, cuDNN {gpu['cudnn']}" if gpu else ""
        out.append(_p(f"Reproducibility: {compute['reproducibility']} (CPU kernels "
                      f"{compute['cpu_capability']}, threads {compute['threads']}{where}): "
                      f"{compute['promise']}", st["body"]))
    out.append(Spacer(1, 10))
    out.append(_p("What ran", st["h2"]))
    out += [_p(f"{name}: {why}", st["body"]) for name, why in c.get("ran", [])]
    out.append(_p("What did not run, and why", st["h2"]))
    out += [_p(f"{name}: {why}", st["body"]) for name, why in c.get("not_ran", [])] or \
        [_p("everything configured ran", st["body"])]
    for note in inputs.notes:
        out.append(_p(f"Note: {note}", st["small"]))
    return out + [PageBreak()]


def _appendix(inputs: ReportInputs, st: dict, width: float) -> list:
    from reportlab.platypus import PageBreak, Preformatted, Spacer, Table

    a = inputs.appendix
    out = [PageBreak(), _p("Appendix: provenance", st["h1"])]

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


def build_report(path: str | Path, inputs: ReportInputs, epoch: int | None = None) -> int:
    """Write the PDF; returns its page count.

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

    st = _styles()
    doc = SimpleDocTemplate(str(path), pagesize=A4, leftMargin=1.5 * cm, rightMargin=1.5 * cm,
                            topMargin=1.5 * cm, bottomMargin=1.5 * cm,
                            title=inputs.cover.get("title", "roundtrip report"),
                            author="roundtrip", creator="roundtrip (reportlab)",
                            invariant=int(epoch is not None))
    width = doc.width
    story = _cover(inputs, st)
    for section in inputs.sections:
        names = tables_of(section, list(inputs.tables))
        figures = _figures_of(section, inputs.figures)
        if not names and not figures:
            continue
        story += [_p(section.title, st["h1"]), _p(f"Reproduces: {section.paper}", st["body"])]
        for metric, definition, source in section.definitions:
            story.append(_p(f"{metric}: {definition} ({source}).", st["small"]))
        for name in names:
            story += table_flowables(name, inputs.tables[name], st, width)
        for fig in figures:
            if "gallery/" in fig.as_posix():
                dataset = fig.stem
                if dataset in inputs.galleries:
                    story += _gallery(dataset, inputs.galleries[dataset], st, width)
                continue
            story += [_p(fig.name, st["small"]), _image(fig, width, 420)]
        story.append(PageBreak())
    story += _appendix(inputs, st, width)
    pages = []
    if epoch is None:
        doc.build(story, onLaterPages=lambda c, d: pages.append(d.page),
                  onFirstPage=lambda c, d: pages.append(d.page))
        return len(pages)
    with _fixed_timestamp(epoch):
        doc.build(story, onLaterPages=lambda c, d: pages.append(d.page),
                  onFirstPage=lambda c, d: pages.append(d.page))
    return len(pages)
