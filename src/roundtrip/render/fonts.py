"""Font mapping: the style names the papers use -> fonts available from Debian packages.

VISTA-Bench (Appendix B, Table 5) renders in Arial, Times New Roman, Cambria and Brush Script MT,
which are not free. Each is mapped to a free face, metric-compatible where one exists, so that
line breaks match the originals:

=================  ===================  ===========================  =========================
style (aliases)    paper's font         free face used               Debian package
=================  ===================  ===========================  =========================
arial (sans)       Arial                Liberation Sans (metric)     fonts-liberation
times (roman)      Times New Roman      Liberation Serif (metric)    fonts-liberation
cambria            Cambria              Caladea (metric)             fonts-crosextra-caladea
brush              Brush Script MT      Dancing Script (handwritten  fonts-dancingscript
                                        script, not metric)
mono               (code)               Liberation Mono (metric to   fonts-liberation
                                        Courier New)
=================  ===================  ===========================  =========================

Scripts other than Latin use Noto (``LANGUAGE_FONTS``): Noto Sans CJK SC/JP/KR
(fonts-noto-cjk) and Noto Sans Devanagari (fonts-noto-core), shaped by XeTeX's HarfBuzz with the
script's OpenType features (conjuncts, matras).
"""
from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class FontStyle:
    """A style name resolved to a font family (``family`` is what fontspec loads)."""
    name: str
    paper_font: str
    family: str
    package: str
    metric_compatible: bool


FONT_STYLES: dict[str, FontStyle] = {
    "arial": FontStyle("arial", "Arial", "Liberation Sans", "fonts-liberation", True),
    "times": FontStyle("times", "Times New Roman", "Liberation Serif", "fonts-liberation", True),
    "cambria": FontStyle("cambria", "Cambria", "Caladea", "fonts-crosextra-caladea", True),
    "brush": FontStyle("brush", "Brush Script MT", "Dancing Script", "fonts-dancingscript", False),
    "mono": FontStyle("mono", "Courier New", "Liberation Mono", "fonts-liberation", True),
}
ALIASES = {"sans": "arial", "roman": "times", "serif": "times", "times new roman": "times",
           "brush script": "brush", "brush script mt": "brush", "handwritten": "brush"}

#: ISO 639-1 language -> (font family, fontspec script, XeTeX line-break locale, Tesseract code)
LANGUAGE_FONTS: dict[str, tuple[str, str, str, str]] = {
    "en": ("", "Latin", "", "eng"),
    "zh": ("Noto Sans CJK SC", "CJK", "zh", "chi_sim"),
    "ja": ("Noto Sans CJK JP", "CJK", "ja", "jpn"),
    "ko": ("Noto Sans CJK KR", "CJK", "ko", "kor"),
    "hi": ("Noto Sans Devanagari", "Devanagari", "", "hin"),
}


class UnknownFont(ValueError):
    """A style name that is not mapped, or a family that is not installed."""


def resolve_font(style: str) -> FontStyle:
    """The :class:`FontStyle` of a style name (case-insensitive; aliases such as ``roman``).

    Raises:
        UnknownFont: the name is not a known style (the message lists those that are).
    """
    key = ALIASES.get(style.strip().lower(), style.strip().lower())
    if key not in FONT_STYLES:
        raise UnknownFont(f"unknown font style '{style}'; known styles: "
                          f"{', '.join(FONT_STYLES)} (aliases: {', '.join(ALIASES)})")
    return FONT_STYLES[key]


@functools.lru_cache(maxsize=1)
def installed_families() -> frozenset[str]:
    """Font families fontconfig knows (every name of every family, as ``fc-list`` prints them)."""
    try:
        out = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return frozenset()
    return frozenset(name.strip() for line in out.splitlines() for name in line.split(","))


def require_family(family: str, package: str = "") -> None:
    """Raise :class:`UnknownFont` naming the Debian package when ``family`` is not installed."""
    if family not in installed_families():
        hint = f" (apt-get install {package})" if package else ""
        raise UnknownFont(f"font family '{family}' is not installed{hint}")
