"""Many items per XeLaTeX run (VISTA-Bench, Appendix B, "LaTeX-based Generation").

Each item becomes its own page (or pages, for text taller than TeX's largest dimension): the page
width is the configured width in TeX points, and a render at 72.27 DPI maps 1 pt to 1 px, so the
image is exactly ``width_px`` wide; the page height follows the content. One document per batch
amortizes XeLaTeX's start-up and font loading over many items.

Failures are isolated: when XeLaTeX stops on an item, the item is recorded with TeX's message and
the batch is run again without it, so one bad item never costs the others.
"""
from __future__ import annotations

import logging
import math
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from roundtrip.render.fonts import LANGUAGE_FONTS, UnknownFont, require_family, resolve_font
from roundtrip.render.preprocess import PreprocessError, prepare
from roundtrip.render.raster import RasterError, content_box, crop_vertical, rasterize, stack_pages

log = logging.getLogger(__name__)

#: Taller text is split into parts of at most this height (TeX's dimensions stop at 16383 pt,
#: and a part is rasterized at ``supersample`` times this height in one image).
MAX_PART_PT = 4000


class RenderError(RuntimeError):
    """XeLaTeX is not installed, or a whole batch failed for a reason no item explains."""


@dataclass(frozen=True)
class RenderSettings:
    """Layout and rasterization (defaults: VISTA-Bench Appendix B, Table 6).

    Attributes:
        width_px: image width in pixels (= page width in TeX pt; 800).
        margin_lr_px, margin_tb_px: page margins in px (60 left/right, 40 top/bottom).
        crop_margin_px: whitespace kept around the located content (protects descenders).
        supersample: rasterization factor before area downsampling (4 -> 289.08 DPI).
        ink: gray level below which a pixel counts as content (0..255).
        line_spread: baseline distance as a multiple of the font size.
        jobs: XeLaTeX/pdftoppm processes run in parallel.
        batch_size: items per XeLaTeX document.
        timeout_s: per-process time limit in seconds.
    """
    width_px: int = 800
    margin_lr_px: int = 60
    margin_tb_px: int = 40
    crop_margin_px: int = 12
    supersample: int = 4
    ink: int = 250
    line_spread: float = 1.2
    jobs: int = 2
    batch_size: int = 200
    timeout_s: float = 300.0


@dataclass(frozen=True)
class RenderItem:
    """One text to render.

    Attributes:
        item_id: stable id.
        text: raw text (see :mod:`.preprocess` for the markup it may carry).
        style: font style (``arial``, ``times``, ``cambria``, ``brush``) for Latin text.
        size_pt: font size in TeX points (= px at the anchored resolution); any value > 0.
        lang: ISO 639-1 language; non-Latin scripts use their Noto face from ``LANGUAGE_FONTS``.
        bold: bold face.
        align: ``left`` (ragged right, the default) or ``center``.
        width_px: page width for this item (default: the settings' width).
    """
    item_id: str
    text: str
    style: str = "arial"
    size_pt: float = 16
    lang: str = "en"
    bold: bool = False
    align: str = "left"
    width_px: int | None = None


@dataclass
class RenderResult:
    """Outcome of one item: ``image`` ``(H, W)`` uint8 grayscale (white 255 background) or None
    with ``error``; ``text`` is the ground truth; ``box`` the content ``(x0, y0, x1, y1)``."""
    item_id: str
    text: str = ""
    image: np.ndarray | None = None
    error: str = ""
    pages: int = 0
    box: tuple[int, int, int, int] | None = None
    family: str = ""


@dataclass
class _Job:
    index: int
    item: RenderItem
    body: str
    family: str
    script: str
    locale: str
    width: int
    result: RenderResult = field(default=None)


def _tex_num(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".")


def _family_of(item: RenderItem) -> tuple[str, str, str]:
    """(family, fontspec script, line-break locale) of an item; raises UnknownFont."""
    if item.lang not in LANGUAGE_FONTS:
        raise UnknownFont(f"unsupported language '{item.lang}'; supported: "
                          f"{', '.join(LANGUAGE_FONTS)}")
    family, script, locale, _ = LANGUAGE_FONTS[item.lang]
    package = "fonts-noto-cjk" if script == "CJK" else "fonts-noto-core"
    if not family:
        style = resolve_font(item.style)
        family, package = style.family, style.package
    require_family(family, package)
    return family, script, locale


def document(jobs: list[_Job], s: RenderSettings) -> str:
    """The XeLaTeX source of one batch (one or more pages per job)."""
    families = sorted({(j.family, j.script) for j in jobs})
    font_cmd = {fs: f"\\rtfont{chr(65 + i // 26)}{chr(65 + i % 26)}"
                for i, fs in enumerate(families)}
    pre = [r"\documentclass{article}",
           r"\usepackage{fontspec}", r"\usepackage{amsmath,amssymb}", r"\usepackage{listings}",
           # No TeX ligatures (`` -- ''): the image shows the characters the text has.
           r"\defaultfontfeatures{}", r"\defaultfontfeatures[\rmfamily,\sffamily]{}",
           r"\setmainfont{Liberation Sans}", r"\setmonofont{Liberation Mono}"]
    for (family, script), cmd in font_cmd.items():
        opts = "Script=CJK" if script == "CJK" else f"Script={script}"
        pre.append(f"\\newfontfamily{cmd}{{{family}}}[{opts}]")
    pre += [r"\lstset{basicstyle=\ttfamily,breaklines=true,columns=fullflexible,"
            r"keepspaces=true,showstringspaces=false,aboveskip=0.4em,belowskip=0.4em}",
            r"\tracinglostchars=3 \hoffset=-1in \voffset=-1in \parindent=0pt",
            r"\emergencystretch=4em \hbadness=10000 \vbadness=10000 \hfuzz=1pt",
            r"\newbox\rtpart \newcount\rtn \newwrite\rtpages",
            r"\immediate\openout\rtpages=\jobname.pages",
            f"\\newdimen\\rtmtb \\rtmtb={s.margin_tb_px}pt",
            f"\\newdimen\\rtmlr \\rtmlr={s.margin_lr_px}pt",
            # Each part of an item is shipped at its natural height plus the margins.
            r"\def\rtshippart{\pdfpageheight=\dimexpr\ht\rtpart+\dp\rtpart+2\rtmtb\relax"
            r"\shipout\vbox{\vskip\rtmtb\moveright\rtmlr\box\rtpart}\global\advance\rtn 1 }",
            r"\begin{document}",
            # TeX's page builder breaks tall items into parts (TeX dimensions stop at 16383 pt);
            # our output routine ships each part at its natural height.
            f"\\global\\vsize={MAX_PART_PT}pt \\global\\maxdepth=\\maxdimen"
            r"\global\output={\global\setbox\rtpart="
            r"\vbox{\unvbox255 \unskip}\rtshippart}"]
    body = []
    for j in jobs:
        it = j.item
        size = _tex_num(it.size_pt)
        inner = j.width - 2 * s.margin_lr_px
        setup = [f"\\hsize={inner}pt\\linewidth=\\hsize\\textwidth=\\hsize\\columnwidth=\\hsize",
                 font_cmd[(j.family, j.script)],
                 f"\\fontsize{{{size}}}{{{_tex_num(it.size_pt * s.line_spread)}}}\\selectfont",
                 # Each part starts one baseline down: the line gap at a part seam is a normal
                 # baseline distance plus at most the previous line's depth.
                 f"\\topskip={_tex_num(it.size_pt * s.line_spread)}pt plus 1fil",
                 r"\parskip=0.5\baselineskip"]
        if it.bold:
            setup.append(r"\bfseries")
        setup.append(r"\centering" if it.align == "center" else r"\raggedright")
        if j.locale:
            setup.append(f'\\XeTeXlinebreaklocale "{j.locale}"\\XeTeXlinebreakskip=0pt plus 1pt')
        body += [f"\\typeout{{RT-ITEM {j.index}}}\\global\\rtn=0 \\pdfpagewidth={j.width}pt",
                 "\\begingroup" + "".join(setup), j.body,
                 r"\par\penalty-10000\endgroup",
                 f"\\immediate\\write\\rtpages{{{j.index} \\the\\rtn}}"]
    return "\n".join(pre + body + [r"\end{document}", ""])


def _failed_item(logtext: str) -> tuple[int | None, str]:
    """The index of the item XeLaTeX stopped on and TeX's message, from the log."""
    err = re.search(r"^! (.*?)$(.*?)^l\.\d+ ?(.*?)$", logtext, re.M | re.S)
    message = "XeLaTeX stopped without an error message"
    if err:
        message = " ".join((err.group(1) + " " + err.group(3)).split())[:300]
        before = logtext[:err.start()]
    else:
        before = logtext
    marks = re.findall(r"^RT-ITEM (\d+)$", before, re.M)
    return (int(marks[-1]) if marks else None), message


def _run_xelatex(jobs: list[_Job], s: RenderSettings, workdir: Path) -> tuple[Path, dict]:
    """Compile ``jobs``; failed items are removed (and recorded) until the rest compiles.

    Returns:
        The PDF and ``index -> number of pages`` of the items that compiled.
    """
    live = list(jobs)
    while live:
        tex = workdir / "batch.tex"
        tex.write_text(document(live, s), encoding="utf-8")
        try:
            proc = subprocess.run(
                ["xelatex", "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape",
                 tex.name], cwd=workdir, capture_output=True, timeout=s.timeout_s)
        except subprocess.TimeoutExpired:
            for j in live:
                j.result.error = f"XeLaTeX timed out after {s.timeout_s:.0f} s on this batch"
            return workdir / "batch.pdf", {}
        if proc.returncode == 0:
            pages = {}
            for line in (workdir / "batch.pages").read_text().split("\n"):
                if line.strip():
                    idx, n = line.split()
                    pages[int(idx)] = int(n)
            return workdir / "batch.pdf", pages
        logtext = (workdir / "batch.log").read_text(encoding="utf-8", errors="replace")
        idx, message = _failed_item(logtext)
        bad = [j for j in live if j.index == idx]
        if not bad:  # preamble or engine failure: nothing to isolate
            raise RenderError(f"XeLaTeX failed outside any item: {message}")
        bad[0].result.error = f"LaTeX error: {message}"
        live = [j for j in live if j.index != idx]
    return workdir / "batch.pdf", {}


def _raster_batch(jobs: list[_Job], pdf: Path, pages: dict, s: RenderSettings,
                  workdir: Path) -> None:
    """Rasterize the compiled items' pages and fill their results (image, box).

    One pdftoppm process per run of consecutive items of the same page width (usually the
    whole batch), not one per item.
    """
    page_no, runs = 1, []  # runs: [width, first page, [(job, first, last), ...]]
    for j in sorted(jobs, key=lambda j: j.index):
        if j.index not in pages:
            continue
        span = (j, page_no, page_no + pages[j.index] - 1)
        if runs and runs[-1][0] == j.width:
            runs[-1][2].append(span)
        else:
            runs.append([j.width, page_no, [span]])
        page_no += pages[j.index]
    for n, (width, first, spans) in enumerate(runs):
        try:
            imgs = rasterize(pdf, first, spans[-1][2], width, s.supersample, workdir / f"p{n}",
                             s.timeout_s)
        except (RasterError, OSError, ValueError) as exc:
            for j, _, _ in spans:
                j.result.error = f"rasterization failed: {exc}"
            continue
        for j, lo, hi in spans:
            gray = stack_pages(imgs[lo - first:hi - first + 1], s.margin_tb_px)
            box = content_box(gray, s.ink)
            if box is None:
                j.result.error = "the render is blank (no glyph drawn)"
                continue
            j.result.image, j.result.box = crop_vertical(gray, box, s.crop_margin_px)
            j.result.pages = hi - lo + 1


def _render_batch(jobs: list[_Job], s: RenderSettings) -> None:
    with tempfile.TemporaryDirectory(prefix="roundtrip-render-") as tmp:
        workdir = Path(tmp)
        pdf, pages = _run_xelatex(jobs, s, workdir)
        if pages:
            _raster_batch([j for j in jobs if not j.result.error], pdf, pages, s, workdir)


def require_xelatex() -> None:
    """Raise :class:`RenderError` with the install command when XeLaTeX or pdftoppm is missing."""
    missing = {p: pkg for p, pkg in (("xelatex", "texlive-xetex"), ("pdftoppm", "poppler-utils"))
               if shutil.which(p) is None}
    if missing:
        raise RenderError(f"{', '.join(missing)} not installed: apt-get install "
                          f"{' '.join(missing.values())}")


def render_items(items: list[RenderItem], settings: RenderSettings | None = None
                 ) -> list[RenderResult]:
    """Render texts to images, many per XeLaTeX run.

    Args:
        items: texts with their font, size and language.
        settings: layout and rasterization (:class:`RenderSettings`).

    Returns:
        One :class:`RenderResult` per item, in order. An item that cannot be rendered (empty
        text, unbalanced braces, unknown font, a LaTeX error, a glyph missing from the font)
        has ``image=None`` and ``error`` saying why; the others are unaffected.

    Raises:
        RenderError: XeLaTeX/pdftoppm missing, or a failure no item explains.
    """
    s = settings or RenderSettings()
    require_xelatex()
    jobs, results = [], []
    for i, it in enumerate(items):
        res = RenderResult(it.item_id)
        results.append(res)
        try:
            if not (it.size_pt > 0 and math.isfinite(it.size_pt)):
                raise PreprocessError(f"font size must be a positive number, got {it.size_pt}")
            width = it.width_px or s.width_px
            if width <= 2 * s.margin_lr_px + it.size_pt:
                raise PreprocessError(f"width {width} px leaves no room inside the margins")
            prep = prepare(it.text)
            family, script, locale = _family_of(it)
        except (PreprocessError, UnknownFont) as exc:
            res.error = str(exc)
            continue
        res.text, res.family = prep.text, family
        jobs.append(_Job(i, it, prep.latex, family, script, locale, width, res))
    batches = [jobs[k:k + s.batch_size] for k in range(0, len(jobs), s.batch_size)]
    # Split so that every process has work: 2 processes for 40 items -> 2 batches of 20.
    if batches and len(batches) < s.jobs:
        per = math.ceil(len(jobs) / s.jobs)
        batches = [jobs[k:k + per] for k in range(0, len(jobs), per)]
    with ThreadPoolExecutor(max_workers=max(1, s.jobs)) as pool:
        list(pool.map(lambda b: _render_batch(b, s), batches))
    for r in results:
        if r.image is None and not r.error:
            r.error = "not rendered (no page produced)"
    return results
