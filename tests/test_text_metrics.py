"""CER and WER against jiwer, and the normalization rules."""
import math

import jiwer
import pytest

from roundtrip.metrics.text import Normalization, cer, normalize_text, text_errors, wer

PAIRS = [
    ("the quick brown fox jumps over the lazy dog", "the quick brwn fox jumped over a lazy dog"),
    ("Region-based segmentation determine markers", "Region based segmentaton determine markers of"),
    ("abc def", "xyz"),
    ("one two three four", ""),
    ("short", "a much longer hypothesis than the reference text"),
]


@pytest.mark.parametrize("ref,hyp", PAIRS)
def test_cer_wer_match_jiwer(ref, hyp):
    assert cer(ref, hyp) == pytest.approx(jiwer.cer(ref, hyp), abs=1e-12)
    assert wer(ref, hyp) == pytest.approx(jiwer.wer(ref, hyp), abs=1e-12)


def test_wer_is_over_words_not_characters():
    # one wrong character in one of four words: CER small, WER exactly 1/4
    assert wer("alpha beta gamma delta", "alpha beta gamma delte") == 0.25
    assert cer("alpha beta gamma delta", "alpha beta gamma delte") == pytest.approx(1 / 22)


def test_rates_can_exceed_one():
    assert cer("ab", "abcdef") == 2.0
    assert wer("a", "a b c") == 2.0


def test_normalization_defaults_and_options():
    raw = "  Ｈello,\n\n  World!  "
    assert normalize_text(raw) == "Hello, World!"  # NFKC folds the full-width H
    n = Normalization(lowercase=True, strip_punctuation=True)
    assert normalize_text(raw, n) == "hello world"
    assert normalize_text("a\n b", Normalization(collapse_whitespace=False)) == "a\n b"


def test_layout_only_differences_are_free_by_default():
    c, w, why = text_errors("line one\nline two", "line one line two")
    assert (c, w, why) == (0.0, 0.0, "")


def test_empty_reference_is_undefined_with_reason():
    c, w, why = text_errors("  \n", "anything")
    assert math.isnan(c) and math.isnan(w) and "empty" in why
    with pytest.raises(ValueError):
        cer("", "x")
