"""Text preservation metrics: CER and WER (VTBench Appendix F, Eqs. 3-4).

``CER = D_char(T_ref, T_hyp) / |T_ref|`` and ``WER = D_word(W_ref, W_hyp) / |W_ref|`` where ``D`` is
the Levenshtein distance (insertions, deletions, substitutions, unit cost) over characters or
words. Both can exceed 1. In VTBench the reference is the OCR of the original image and the
hypothesis the OCR of the reconstruction; with ground truth, the reference is the true text.

Two variants are computed:

* **As written** (:func:`raw_text_errors`, the headline ``cer``/``wer``): Eq. 3 applied to the two
  OCR outputs as they are, every character counted, line breaks and repeated spaces included
  (``CER("Hello  world\n", "Hello world") = 2/13``). Words are the whitespace-separated tokens,
  the only segmentation Eq. 4 can use without a tokenizer.
* **Normalized** (:func:`text_errors`, roundtrip's ``cer_norm``/``wer_norm``): the same rates
  after the normalization below, so OCR layout differences do not count as errors.

Normalization (applied to both strings before scoring, configurable in ``config.yaml``):

1. Unicode normalization (default NFKC: full-width forms and ligatures folded);
2. optional lower-casing (default off: case errors count);
3. optional punctuation removal (Unicode category P*; default off);
4. whitespace collapse (default on): runs of whitespace, including line breaks, become one space
   and the ends are stripped, so OCR layout differences do not count as errors;
5. whitespace removal for scripts written without spaces between words (Chinese, Japanese:
   :meth:`Normalization.for_language`), where Tesseract inserts spaces between characters that
   are not in the text.

Characters include the single spaces between words, as in jiwer's ``cer``. Words are the
whitespace-separated tokens, so WER is meaningful only for scripts that separate words by spaces
(not Chinese or Japanese, where VTBench reports CER only).
"""
from __future__ import annotations

import dataclasses
import math
import re
import unicodedata
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

_WS = re.compile(r"\s+")
#: Tesseract codes of scripts written without spaces between words.
NO_SPACE_LANGS = {"chi_sim", "chi_tra", "jpn"}


@dataclass(frozen=True)
class Normalization:
    """Text normalization settings (see module docstring)."""
    unicode_form: str | None = "NFKC"
    lowercase: bool = False
    strip_punctuation: bool = False
    collapse_whitespace: bool = True
    remove_whitespace: bool = False

    def for_language(self, lang: str) -> "Normalization":
        """This normalization for Tesseract language code(s) ``lang`` (e.g. ``chi_sim``,
        ``eng+jpn``): whitespace is removed when every language is written without spaces."""
        parts = [p for p in str(lang or "").split("+") if p]
        if parts and all(p.split("_vert")[0] in NO_SPACE_LANGS for p in parts):
            return dataclasses.replace(self, remove_whitespace=True)
        return self

    @classmethod
    def from_config(cls, cfg: dict | None) -> "Normalization":
        cfg = dict(cfg or {})
        return cls(**{k: cfg[k] for k in ("unicode_form", "lowercase", "strip_punctuation",
                                          "collapse_whitespace") if k in cfg})


def normalize_text(text: str, norm: Normalization = Normalization()) -> str:
    """Apply :class:`Normalization` to ``text``."""
    if norm.unicode_form:
        text = unicodedata.normalize(norm.unicode_form, text)
    if norm.lowercase:
        text = text.lower()
    if norm.strip_punctuation:
        text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))
    if norm.remove_whitespace:
        text = _WS.sub("", text)
    elif norm.collapse_whitespace:
        text = _WS.sub(" ", text).strip()
    return text


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate of already-normalized strings.

    Raises:
        ValueError: empty reference (CER is undefined).
    """
    if not reference:
        raise ValueError("empty reference text: CER undefined")
    return Levenshtein.distance(reference, hypothesis) / len(reference)


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate of already-normalized strings (words split on whitespace).

    Raises:
        ValueError: reference without words (WER is undefined).
    """
    ref, hyp = reference.split(), hypothesis.split()
    if not ref:
        raise ValueError("reference has no words: WER undefined")
    return Levenshtein.distance(ref, hyp) / len(ref)


def raw_text_errors(reference: str, hypothesis: str) -> tuple[float, float, str]:
    """``(cer, wer, reason)`` of the strings as they are (VTBench App. F, Eqs. 3-4 as written).

    Returns:
        CER over all characters (whitespace and line breaks included) and WER over the
        whitespace-separated words, both >= 0 and unbounded above; NaN with a reason when the
        reference is empty (CER undefined) or has no words (WER undefined).
    """
    if not reference:
        return math.nan, math.nan, "reference text is empty (no text found), CER/WER undefined"
    if not reference.split():
        return cer(reference, hypothesis), math.nan, "reference has no words: WER undefined"
    return cer(reference, hypothesis), wer(reference, hypothesis), ""


def text_errors(reference: str, hypothesis: str, norm: Normalization = Normalization()
                ) -> tuple[float, float, str]:
    """``(cer, wer, reason)`` after normalization; NaN values with a reason when undefined."""
    ref, hyp = normalize_text(reference, norm), normalize_text(hypothesis, norm)
    if not ref:
        return math.nan, math.nan, "reference text is empty (no text found), CER/WER undefined"
    return cer(ref, hyp), wer(ref, hyp), ""
