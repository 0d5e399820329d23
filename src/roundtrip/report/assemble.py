"""What the report job asks of each evaluation: its findings, its headline figure, its papers'
published tables. An evaluation's failure here costs only its own part: the report says what
went wrong in its place and goes on."""
from __future__ import annotations

import logging
from pathlib import Path

from roundtrip.report.findings import RunResults
from roundtrip.report.tables import MdTable, published_table

log = logging.getLogger(__name__)


def findings_of(evaluation, results: RunResults) -> list[str]:
    """The evaluation's sentences (:meth:`~roundtrip.core.evaluation.Evaluation.findings`);
    an error becomes one sentence that names it."""
    try:
        return [str(x) for x in evaluation.findings(results)]
    except Exception as exc:  # a plugin's bug must not cost the whole report
        log.exception("findings of %s failed", evaluation.key)
        return [f"The findings could not be computed: {type(exc).__name__}: {exc}"]


def headline_of(evaluation, results: RunResults, path: Path) -> str:
    """Draw the evaluation's headline figure into ``path`` and return its caption. Where it
    draws nothing (or fails), ``path`` holds a figure that says why, so the file always exists
    (it is a declared output of the report job)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        caption = evaluation.headline_figure(results, path)
        why = None if caption else "this run's tables hold nothing to draw"
    except Exception as exc:
        log.exception("headline figure of %s failed", evaluation.key)
        caption, why = None, f"the figure could not be drawn: {type(exc).__name__}: {exc}"
    if why is None and path.is_file():
        return caption
    _placeholder(path, f"{evaluation.label}: no headline figure ({why})")
    return f"No headline figure: {why}."


def _placeholder(path: Path, text: str) -> None:
    from roundtrip.report.style import figure, save

    fig, axes = figure(1, 1, height_in=0.8)
    ax = axes[0, 0]
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    save(fig, path)


def published_of(evaluation, results: RunResults) -> list[MdTable]:
    """The evaluation's papers' published tables (its package's ``published/`` CSVs), with this
    run's rows in the same table where it ran the paper's data
    (:meth:`~roundtrip.core.evaluation.Evaluation.published_cells`); none where the config
    says ``report.published: false`` or the package ships none.

    A table on other data keeps only the rows of models this run has results for
    (:func:`run_names`, :func:`same_model`): the paper's numbers for the model the reader
    compares, not pages of models the run never saw. A table left with no row comes back with
    no rows, its models counted in ``notes`` (the appendix names it in one line)."""
    from roundtrip.tables.published import PublishedError, read_published

    if not results.published:
        return []
    try:
        cells = read_published(evaluation.package)
    except (PublishedError, ModuleNotFoundError):
        return []
    try:
        mine = evaluation.published_cells(results)
    except Exception:
        log.exception("published_cells of %s failed", evaluation.key)
        mine = None
    out = []
    names = run_names(results)
    for table, group in cells.groupby("table", sort=False):
        source = group["source"].iat[0]
        run = None if mine is None else mine[mine["table"] == table]
        if run is not None and len(run):
            title = (f"{table} of the paper, this run's rows beside the published ones "
                     f"(published rows grey; source: {source})")
            out.append(published_table(group, title, run))
            continue
        ours = group[group["model"].fillna("").map(lambda m: any(same_model(m, n)
                                                                 for n in names))]
        if ours.empty:
            models = group["model"].fillna("")
            out.append(MdTable(table, [], [], [f"{models[models != ''].nunique()} models"]))
            continue
        title = (f"Published results, other data: {table} of the paper, the rows of this run's "
                 f"models (source: {source}); not measured on this run's data")
        out.append(published_table(ours, title))
    return out


def run_names(results: RunResults) -> set[str]:
    """What this run has results for, by name: the config's models and the row labels (first
    column) of the run's tables (readers, model pairs, ...)."""
    import pandas as pd

    names = {str(m) for m in results.models}
    for name in results.tables:
        try:
            frame = results.table(name)
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        if frame is not None and len(frame.columns):
            names |= {v for v in frame.iloc[:, 0] if isinstance(v, str)}
    return names


def _prefixes(name: str) -> set[str]:
    """The name in lower-case letters and digits, cut after each of its words: ``SD3.5L`` ->
    ``{"sd3", "sd35l"}``, ``sdxl_vae`` -> ``{"sdxl", "sdxlvae"}``."""
    import re

    words = [w.lower() for w in re.split(r"[^0-9A-Za-z]+", name) if w]
    return {"".join(words[:k]) for k in range(1, len(words) + 1)}


def same_model(published: str, ran: str) -> bool:
    """Whether a published row's model and a name of this run are the same model: equal in
    lower-case letters and digits, or one is the other up to a word boundary (``SDXL`` and
    ``sdxl_vae``, ``FLUX.1-dev`` and ``flux1_dev``, ``Qwen2.5-VL-7B`` and
    ``Qwen/Qwen2.5-VL-7B-Instruct``'s last part)."""
    if not published or not ran:
        return False
    a, b = _prefixes(published), _prefixes(ran.rsplit("/", 1)[-1])
    return bool(a and b) and (max(a, key=len) in b or max(b, key=len) in a)


def what_changed_inputs(files) -> dict:
    """What the report shows of the run's comparison (config ``compare:``; rule ``compare``):
    ``lines`` (page 1's "What changed", :func:`roundtrip.report.compare.summary_text`),
    ``figures`` (``[(png, caption)]``: the differences, the gallery of the items that changed
    most and, where some flipped, that of the OCR and VISTA items that flipped) and ``table``
    (the ``compare`` Markdown, whole in the appendix); empty where the run compares nothing.

    Args:
        files: the comparison's files (``Plan.compare_files``: the tables' CSV, Markdown and
            LaTeX and the three figures).
    """
    from roundtrip.report.compare import DIFFERENCES, FLIPPED, GALLERY, read_rows, summary_text

    files = [Path(f) for f in files]
    by_name = {f.name: f for f in files}
    if "compare.csv" not in by_name:
        return {}
    rows = read_rows(by_name["compare.csv"])
    items = read_rows(by_name["compare_items.csv"]) if "compare_items.csv" in by_name else None
    captions = {}
    figures = [by_name[n] for n in (DIFFERENCES, GALLERY, FLIPPED) if n in by_name]
    if figures and (figures[0].parent / "captions.txt").is_file():
        for line in (figures[0].parent / "captions.txt").read_text().splitlines():
            name, _, caption = line.partition("\t")
            captions[name] = caption
    # the flipped items' gallery only where some flipped (captions.txt has its line)
    figures = [f for f in figures if f.name != FLIPPED or f.name in captions]
    return {"lines": summary_text(rows, items) or ["No row was compared."],
            "figures": [(f, captions.get(f.name, "")) for f in figures],
            "table": by_name.get("compare.md")}


def summary_rst(inputs) -> str:
    """The front page as reStructuredText (``results/summary.rst``): what ran and what each
    evaluation found, for the front page of Snakemake's HTML report (``report/workflow.rst``
    includes it) and for anyone who reads the run without a PDF viewer.

    Args:
        inputs: the report's :class:`roundtrip.report.document.ReportInputs`.
    """
    c = inputs.cover

    def esc(text) -> str:  # reST inline markup characters, so numbers and names read as text
        return "".join("\\" + ch if ch in "*`_|\\" else ch for ch in str(text))

    lines = ["What this run found", "-" * 19, ""]
    lines += [f"- **{label}**: {esc(value)}" for label, value in
              inputs.facts(("config_name", "models", "datasets", "commit"))]
    lines.append("")
    for label, what, sentences in inputs.ran_findings():
        lines += [f"**{esc(label)}** ({esc(what)})" if what else f"**{esc(label)}**", ""]
        lines += [f"- {esc(x)}" for x in sentences] + [""]
    if inputs.changes.get("lines"):
        lines += ["**What changed**", ""]
        lines += [f"- {esc(x)}" for x in inputs.changes["lines"]] + [""]
    if c.get("not_ran"):
        lines += ["**Not run**", ""]
        lines += [f"- {esc(name)}: {esc(why)}" for name, why in c["not_ran"]]
        lines.append("")
    if c.get("failures"):
        lines += ["**Items that failed**", ""]
        lines += [f"- {esc(line)}" for line in c["failures"]]
        lines.append("")
    if c.get("slow"):
        lines += ["**Items far slower at one size**", ""]
        lines += [f"- {esc(line)}" for line in c["slow"]]
        lines.append("")
    lines.append("The PDF report (results/report.pdf) has the headline figures, every table and "
                 "the provenance of each number.")
    return "\n".join(lines) + "\n"
