"""The report's look, defined once: page geometry, type sizes, paragraph styles, and the
colour of each model in every figure.

Figures are drawn at the width they are printed (:data:`FIGURE_WIDTH_IN`) so that no text is
smaller than :data:`MIN_FIGURE_PT` on paper; the PDF places them at that width.
"""
from __future__ import annotations

#: A4 with 1.5 cm margins: the text width in points and inches.
MARGIN_CM = 1.5
TEXT_WIDTH_PT = 595.2756 - 2 * MARGIN_CM * 72 / 2.54
FIGURE_WIDTH_IN = TEXT_WIDTH_PT / 72
#: Smallest type in a printed figure (points), and the table cells' size.
MIN_FIGURE_PT = 7.5
CELL_PT = 6.5

#: Model colours, in the order of the config's ``models`` (then readers, model pairs): the
#: colour-blind-safe qualitative palette of Okabe & Ito (2008), then Tableau's 10.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF", "#9467BD", "#1F77B4",
           "#FF7F0E", "#2CA02C")
#: Published rows: grey, so the reader's own rows stand out.
PUBLISHED_GREY = "#8a8a8a"


def colours(names) -> dict[str, str]:
    """``name -> hex colour`` for ``names`` in order (the palette repeats after 16)."""
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(dict.fromkeys(names))}


def figure(rows: int = 1, cols: int = 2, height_in: float = 2.6):
    """A matplotlib figure and its axes (an array of ``rows x cols``) at the printed width,
    with every text at least :data:`MIN_FIGURE_PT`.

    Raises:
        ImportError: matplotlib is not installed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8,
                         "xtick.labelsize": MIN_FIGURE_PT, "ytick.labelsize": MIN_FIGURE_PT,
                         "legend.fontsize": MIN_FIGURE_PT, "svg.hashsalt": "roundtrip",
                         "axes.spines.top": False, "axes.spines.right": False})
    fig, axes = plt.subplots(rows, cols, figsize=(FIGURE_WIDTH_IN, height_in), squeeze=False)
    return fig, axes


def save(fig, path) -> None:
    """Write ``fig`` as PNG (200 dpi, no timestamp in the file) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=200, metadata={"Software": None})
    plt.close(fig)


def paragraph_styles() -> dict:
    """reportlab paragraph styles by role: ``title``, ``h1``, ``h2``, ``body``, ``small``,
    ``cell``, ``head``, ``mono``, ``finding``, ``published`` (grey italic cells)."""
    from reportlab.lib import colors
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet

    from roundtrip.report.fonts import register

    faces, _ = register()
    base = getSampleStyleSheet()
    st = {
        "title": ParagraphStyle("t", parent=base["Title"], fontName=faces["bold"], fontSize=17,
                                spaceAfter=4),
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
        "finding": ParagraphStyle("f", parent=base["BodyText"], fontName=faces["latin"],
                                  fontSize=7.5, leading=8.6, leftIndent=8, spaceAfter=0),
    }
    st["h3"] = ParagraphStyle("h3", parent=st["h2"], fontSize=9, spaceBefore=3, spaceAfter=1)
    st["published"] = ParagraphStyle("p", parent=st["cell"],
                                     textColor=colors.HexColor(PUBLISHED_GREY))
    return st
