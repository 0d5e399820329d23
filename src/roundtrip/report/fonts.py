"""Fonts of the PDF report: a Latin face, a CJK face (Chinese, Japanese, Korean) and a
Devanagari face from the Debian font packages, registered with reportlab, and :func:`markup`,
which sets each run of a string in the face that has its glyphs.

reportlab embeds TrueType outlines only, so the CJK face is WenQuanYi Micro Hei (TrueType,
``fonts-wqy-microhei``) rather than Noto CJK (CFF outlines). Devanagari is set glyph by glyph
without shaping (reportlab does not shape): conjuncts print as their parts, the text layer keeps
the exact characters.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from xml.sax.saxutils import escape

#: role -> (reportlab name, candidate files, fontconfig family, subfont index)
FACES = {
    "latin": ("RT-Sans", ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"], "DejaVu Sans", 0),
    "bold": ("RT-Sans-Bold", ["/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"],
             "DejaVu Sans:bold", 0),
    "mono": ("RT-Mono", ["/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"],
             "DejaVu Sans Mono", 0),
    "cjk": ("RT-CJK", ["/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"], "WenQuanYi Micro Hei", 0),
    "deva": ("RT-Deva", ["/usr/share/fonts/truetype/noto/NotoSansDevanagari-Regular.ttf"],
             "Noto Sans Devanagari", 0),
}
#: reportlab's built-in faces used where a file is missing (Latin only).
FALLBACK = {"latin": "Helvetica", "bold": "Helvetica-Bold", "mono": "Courier",
            "cjk": "Helvetica", "deva": "Helvetica"}
_CJK = re.compile(r"([\u2e80-\u2fff\u3000-\u30ff\u3100-\u9fff\uac00-\ud7af\uf900-\ufaff"
                  r"\uff00-\uffef]+)")
_DEVA = re.compile(r"([\u0900-\u097f\ua8e0-\ua8ff]+)")


def _find(files: list[str], family: str) -> str | None:
    for f in files:
        if Path(f).is_file():
            return f
    if shutil.which("fc-match"):
        out = subprocess.run(["fc-match", "-f", "%{file}", family], capture_output=True, text=True)
        path = out.stdout.strip()
        if path.endswith((".ttf", ".ttc")) and Path(path).is_file():
            return path
    return None


_REGISTERED: dict[str, str] = {}


def register() -> tuple[dict[str, str], list[str]]:
    """Register the faces once; returns ``role -> font name`` and notes on faces not found (the
    report prints them: what could not be rendered)."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    notes = []
    if not _REGISTERED:
        for role, (name, files, family, index) in FACES.items():
            path = _find(files, family)
            if path is None:
                _REGISTERED[role] = FALLBACK[role]
                notes.append(f"font for {role} text not found ({family}); set in {FALLBACK[role]}")
                continue
            pdfmetrics.registerFont(TTFont(name, path, subfontIndex=index))
            _REGISTERED[role] = name
    return dict(_REGISTERED), notes


def markup(text: str, base: str = "latin") -> str:
    """``text`` escaped for reportlab paragraphs, CJK and Devanagari runs wrapped in their
    face's ``<font>`` tag."""
    faces, _ = register()
    out = []
    for part in _CJK.split(str(text)):
        if not part:
            continue
        if _CJK.fullmatch(part):
            out.append(f'<font name="{faces["cjk"]}">{escape(part)}</font>')
            continue
        for sub in _DEVA.split(part):
            if not sub:
                continue
            if _DEVA.fullmatch(sub):
                out.append(f'<font name="{faces["deva"]}">{escape(sub)}</font>')
            else:
                out.append(escape(sub))
    return "".join(out)
