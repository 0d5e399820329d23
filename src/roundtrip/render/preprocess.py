"""Text preprocessing for LaTeX rendering (VISTA-Bench, Appendix B, "Text Preprocessing").

Input text is plain prose with three optional markups, as questions in benchmark JSONL files
carry them: fenced code blocks (```` ``` ````), inline code (`` `x` ``) and inline math
(``$...$`` or ``\\(...\\)``). :func:`prepare` returns

- ``latex``: a LaTeX body in which prose has its special characters escaped, Greek letters,
  operators and degree/temperature units are typeset as math macros, code is kept verbatim
  (indentation included) and math is passed through after a brace check;
- ``text``: the ground truth, i.e. what a reader sees: the normalized prose, the code verbatim,
  the math with macros turned back into their Unicode symbols and TeX syntax (``^ _ { }``)
  dropped (an approximation: a rendered fraction has no linear form).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


class PreprocessError(ValueError):
    """Input that cannot be rendered faithfully (empty text, unbalanced braces in a formula...)."""


#: Typographic normalization: smart quotes, dashes, ellipses and odd spaces to stable ASCII.
TYPOGRAPHY = {
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u00ab": '"',
    "\u00bb": '"', "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u2013": "-", "\u2014": "--", "\u2015": "--", "\u2212": "-", "\u2010": "-", "\u2011": "-",
    "\u2026": "...", "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2007": " ", "\u3000": " ",
    "\u200b": "", "\u200c": "\u200c", "\u200d": "\u200d", "\ufeff": "",
}

#: Unicode symbol -> math macro (Greek letters and operators found in prose).
SYMBOLS = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\epsilon",
    "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ι": r"\iota", "κ": r"\kappa",
    "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ρ": r"\rho",
    "σ": r"\sigma", "τ": r"\tau", "υ": r"\upsilon", "φ": r"\phi", "χ": r"\chi", "ψ": r"\psi",
    "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta", "Θ": r"\Theta", "Λ": r"\Lambda",
    "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma", "Φ": r"\Phi", "Ψ": r"\Psi", "Ω": r"\Omega",
    "≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx", "±": r"\pm", "×": r"\times",
    "÷": r"\div", "→": r"\rightarrow", "←": r"\leftarrow", "⇒": r"\Rightarrow",
    "⇔": r"\Leftrightarrow", "↔": r"\leftrightarrow", "∞": r"\infty", "∑": r"\sum",
    "∏": r"\prod", "∫": r"\int", "∂": r"\partial", "∇": r"\nabla", "√": r"\surd",
    "∈": r"\in", "∉": r"\notin", "⊂": r"\subset", "⊆": r"\subseteq", "∪": r"\cup",
    "∩": r"\cap", "∀": r"\forall", "∃": r"\exists", "¬": r"\neg", "∧": r"\wedge",
    "∨": r"\vee", "·": r"\cdot", "∘": r"\circ", "≡": r"\equiv", "∝": r"\propto",
    "∅": r"\emptyset", "⊕": r"\oplus",
}
MACRO_TO_SYMBOL = {v[1:]: k for k, v in SYMBOLS.items()} | {
    "le": "≤", "ge": "≥", "ne": "≠", "to": "→", "cdots": "...", "ldots": "...", "dots": "...",
    "circ": "°", "quad": " ", "qquad": " ", "varepsilon": "ε", "varphi": "φ", "mid": "|",
    "lvert": "|", "rvert": "|", "langle": "<", "rangle": ">", "prime": "'"}

#: LaTeX special characters in prose.
ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&",
           "#": r"\#", "%": r"\%", "_": r"\_", "~": r"\textasciitilde{}",
           "^": r"\textasciicircum{}"}

_SEGMENT = re.compile(
    r"(?P<fence>```[^\n]*\n(?P<code>.*?)```)"      # fenced code block (language tag ignored)
    r"|`(?P<inline>[^`\n]+)`"                      # inline code
    r"|(?<!\\)\$(?P<math>[^$]+?)(?<!\\)\$"         # $...$ (not \$)
    r"|\\\((?P<math2>.+?)\\\)",                    # \( ... \)
    re.S)
_DEGREE = re.compile(r"°\s?([CFK])\b|°")


@dataclass(frozen=True)
class Prepared:
    """A preprocessed item: ``latex`` body and ``text`` ground truth (see module docstring)."""
    latex: str
    text: str
    has_code: bool
    has_math: bool


def normalize_typography(text: str) -> str:
    """NFC, then smart quotes/dashes/ellipses/odd spaces to ASCII (:data:`TYPOGRAPHY`), CRLF to LF,
    tabs to 4 spaces (code indentation survives)."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    return "".join(TYPOGRAPHY.get(ch, ch) for ch in text).replace("\t", "    ")


def escape_prose(text: str) -> str:
    """Escape LaTeX specials; typeset symbols and degree units as math; keep line breaks.

    ``--`` is split (``-{}-``) because the renderer turns TeX ligatures off anyway and a
    reader expects two hyphens where the text has two.
    """
    out = []
    for ch in _DEGREE.sub(lambda m: "\x00" + (m.group(1) or ""), text):
        if ch == "\x00":
            out.append(r"\ensuremath{^{\circ}}")
        elif ch in ESCAPES:
            out.append(ESCAPES[ch])
        elif ch in SYMBOLS:
            out.append(r"\ensuremath{" + SYMBOLS[ch] + "}")
        else:
            out.append(ch)
    body = "".join(out).replace("--", "-{}-")
    # A blank line starts a paragraph; a single newline is a line break (options of a
    # multiple-choice question stay on their own lines).
    paragraphs = re.split(r"\n\s*\n", body)
    return "\n\n".join("\\newline ".join(ln for ln in p.split("\n") if ln.strip())
                         for p in paragraphs)


def check_math(math: str, where: int) -> None:
    """Raise :class:`PreprocessError` if braces in a formula are unbalanced."""
    depth = 0
    for i, ch in enumerate(math):
        if ch == "{" and (i == 0 or math[i - 1] != "\\"):
            depth += 1
        elif ch == "}" and (i == 0 or math[i - 1] != "\\"):
            depth -= 1
            if depth < 0:
                raise PreprocessError(f"unbalanced braces in formula at character {where}: "
                                      f"'}}' without '{{' in ${math}$")
    if depth:
        raise PreprocessError(f"unbalanced braces in formula at character {where}: "
                              f"{depth} '{{' not closed in ${math}$")


def math_to_text(math: str) -> str:
    """Approximate visible text of a formula: macros -> symbols, TeX syntax dropped."""
    def macro(m: re.Match) -> str:
        name = m.group(1)
        return MACRO_TO_SYMBOL.get(name, "" if name in ("left", "right", "mathrm", "text",
                                                        "mathbf", "frac", "sqrt") else name)
    text = re.sub(r"\\([A-Za-z]+)", macro, math)
    text = re.sub(r"\\(.)", r"\1", text)
    return re.sub(r"[{}^_]", "", text).strip()


def code_block(code: str) -> str:
    """A listings environment: verbatim, indentation kept, long lines broken (not clipped)."""
    if "\\end{lstlisting}" in code:
        raise PreprocessError("code block contains \\end{lstlisting}, which cannot be typeset "
                              "verbatim")
    return "\n\\begin{lstlisting}\n" + code.rstrip("\n") + "\n\\end{lstlisting}\n"


def inline_code(code: str) -> str:
    """Inline code in monospace, LaTeX specials escaped (``a_b`` -> ``\\texttt{a\\_b}``)."""
    return r"\texttt{" + "".join(ESCAPES.get(c, c) for c in code).replace("--", "-{}-") + "}"


def prepare(text: str) -> Prepared:
    """Preprocess one item's text (see module docstring).

    Args:
        text: the item's text; str.

    Raises:
        PreprocessError: empty text, or a formula with unbalanced braces.
    """
    if not isinstance(text, str) or not text.strip():
        raise PreprocessError("empty text: nothing to render")
    text = normalize_typography(text).strip("\n")
    latex, plain, pos = [], [], 0
    has_code = has_math = False

    def prose(segment: str, start: int) -> None:
        if re.search(r"(?<!\\)\$", segment):
            raise PreprocessError(f"unbalanced '$' at character {start + segment.index('$')}: "
                                  "a formula is opened and never closed (write \\$ for a "
                                  "dollar sign)")
        latex.append(escape_prose(segment.replace("\\$", "\x01")).replace("\x01", r"\$"))
        plain.append(segment.replace("\\$", "$"))

    for m in _SEGMENT.finditer(text):
        prose(text[pos:m.start()], pos)
        if m.group("fence") is not None:
            latex.append(code_block(m.group("code")))
            plain.append("\n" + m.group("code").rstrip("\n") + "\n")
            has_code = True
        elif m.group("inline") is not None:
            latex.append(inline_code(m.group("inline")))
            plain.append(m.group("inline"))
            has_code = True
        else:
            math = m.group("math") if m.group("math") is not None else m.group("math2")
            check_math(math, m.start())
            latex.append("$" + math + "$")
            plain.append(math_to_text(math))
            has_math = True
        pos = m.end()
    prose(text[pos:], pos)
    return Prepared("".join(latex), "".join(plain).strip(), has_code, has_math)
