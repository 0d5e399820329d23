"""The XeLaTeX renderer: width anchoring, determinism, preprocessing, per-item failures."""
import numpy as np
import pytest

from roundtrip.render import RenderItem, RenderSettings, prepare, render_items
from roundtrip.render.preprocess import PreprocessError, math_to_text, normalize_typography

SETTINGS = RenderSettings()


def q(i, n_words):
    return RenderItem(f"q{i}", "Question: " + " ".join(["tokenizer"] * n_words)
                      + "\nA. yes\nB. no", size_pt=16)


def test_width_is_exact_and_height_follows_the_text():
    results = render_items([q(0, 3), q(1, 60), q(2, 300)], SETTINGS)
    assert all(r.error == "" for r in results)
    assert {r.image.shape[1] for r in results} == {800}
    heights = [r.image.shape[0] for r in results]
    assert heights[0] < heights[1] < heights[2]
    # Content starts at the left margin (60 px) and stays inside the right margin.
    for r in results:
        x0, y0, x1, y1 = r.box
        assert 58 <= x0 <= 64 and x1 <= 800 - 60 + 2
        assert y0 == SETTINGS.crop_margin_px  # cropped with the protective margin
        assert r.image.shape[0] - y1 == SETTINGS.crop_margin_px


def test_other_widths_are_exact_too():
    s = RenderSettings(width_px=640, margin_lr_px=30)
    (r,) = render_items([RenderItem("a", "A shorter page anchored at 640 px.")], s)
    assert r.image.shape[1] == 640


def test_rendering_is_deterministic():
    items = [q(0, 20), RenderItem("m", "Energy $E = mc^2$ at 25°C", style="times"),
             RenderItem("zh", "视觉分词器把图像压缩成离散的标记序列。", lang="zh")]
    a, b = render_items(items, SETTINGS), render_items(items, SETTINGS)
    for ra, rb in zip(a, b):
        assert ra.image is not None and np.array_equal(ra.image, rb.image)


def test_bad_items_get_their_own_error_and_the_rest_render():
    long_question = " ".join(["word"] * 5000)
    items = [RenderItem("braces", "solve $x^{2$ now"),
             RenderItem("font", "text", style="Comic Sans MS"),
             RenderItem("empty", "   "),
             RenderItem("macro", r"an $\undefinedmacro x$ here"),
             RenderItem("glyph", "a Tibetan \u0f00 sign in a Latin font"),
             RenderItem("long", long_question, size_pt=16),
             RenderItem("ok", "An ordinary question?")]
    res = {r.item_id: r for r in render_items(items, SETTINGS)}
    assert "unbalanced braces" in res["braces"].error
    assert "unknown font style 'Comic Sans MS'" in res["font"].error
    assert "empty text" in res["empty"].error
    assert "Undefined control sequence" in res["macro"].error
    assert "Missing character" in res["glyph"].error
    for key in ("braces", "font", "empty", "macro", "glyph"):
        assert res[key].image is None
    # 5,000 words: taller than one TeX page part, rendered in parts and stacked.
    assert res["long"].error == "" and res["long"].pages >= 2
    assert res["long"].image.shape == (res["long"].image.shape[0], 800)
    assert res["long"].image.shape[0] > 4000
    assert res["ok"].image is not None


def test_preprocessing_escapes_prose_and_keeps_code_and_math():
    p = prepare("Costs \\$5 & 10% of #items_a ~ {x}")
    assert r"\&" in p.latex and r"\%" in p.latex and r"\#" in p.latex and r"\_" in p.latex
    assert p.text == "Costs $5 & 10% of #items_a ~ {x}"
    p = prepare("Run:\n```python\ndef f(x):\n    return x\n```\nthen `a_b`.")
    assert "\\begin{lstlisting}\ndef f(x):\n    return x\n\\end{lstlisting}" in p.latex
    assert "def f(x):\n    return x" in p.text and p.has_code
    p = prepare(r"Let $\alpha \leq x_1^{2}$ hold; α≥β at 30 °C")
    assert r"$\alpha \leq x_1^{2}$" in p.latex and r"\ensuremath{\geq}" in p.latex
    assert r"\ensuremath{^{\circ}}C" in p.latex
    assert p.text == "Let α ≤ x12 hold; α≥β at 30 °C"
    with pytest.raises(PreprocessError, match="unbalanced '\\$'"):
        prepare("a lone $ sign")


def test_typographic_normalization():
    assert normalize_typography("\u201cquoted\u201d \u2018x\u2019 a\u2014b c\u2013d e\u2026") == \
        '"quoted" \'x\' a--b c-d e...'
    assert math_to_text(r"\frac{a}{b} \times \beta") == "ab × β"


def test_devanagari_is_shaped():
    # A conjunct (क + ् + ष = क्ष) is one glyph, narrower than the same letters with the virama
    # kept visible (ZWNJ blocks the conjunct), and the i-matra (ि) is drawn before its consonant.
    conj, broken, ki, k = render_items(
        [RenderItem("a", "क्ष", lang="hi", size_pt=48),
         RenderItem("b", "क्\u200cष", lang="hi", size_pt=48),
         RenderItem("c", "कि", lang="hi", size_pt=48),
         RenderItem("d", "क", lang="hi", size_pt=48)], SETTINGS)
    width = lambda r: r.box[2] - r.box[0]  # noqa: E731
    assert width(conj) < width(broken)
    # Same left margin; the matra's stem extends the cluster (it is not appended after क).
    assert width(ki) > width(k)
    assert not np.array_equal(ki.image[:, :ki.box[0] + width(k)], k.image[:, :ki.box[0] + width(k)])
