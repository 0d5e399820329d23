"""LaTeX rendering of text to images (VISTA-Bench, Appendix B).

Three stages, one module each:

- :mod:`.preprocess`: typographic normalization, code isolation, formula handling; text in,
  a LaTeX body and the ground-truth text out.
- :mod:`.latex`: one XeLaTeX document for many items (one or more pages per item, page width
  anchored so that 1 TeX pt = 1 px), with per-item failures isolated and reported.
- :mod:`.raster`: pdftoppm at a multiple of the target resolution, area downsampling,
  content localization and cropping with a protective margin.

:func:`render_items` runs all three.
"""
from roundtrip.render.fonts import FONT_STYLES, LANGUAGE_FONTS, UnknownFont, resolve_font
from roundtrip.render.latex import RenderItem, RenderResult, RenderSettings, render_items
from roundtrip.render.preprocess import Prepared, PreprocessError, prepare

__all__ = ["FONT_STYLES", "LANGUAGE_FONTS", "UnknownFont", "resolve_font", "RenderSettings", "RenderItem",
           "RenderResult", "render_items", "PreprocessError", "Prepared", "prepare"]
