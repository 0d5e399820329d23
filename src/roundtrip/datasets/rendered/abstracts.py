"""Dense academic paragraphs on a square canvas (VTBench Task 3, dense text; our own corpus).

Each item is a page of abstract blocks (a title paragraph, then an abstract paragraph) rendered
with :mod:`roundtrip.render` at the canvas width and filled to the canvas height: the text is
shortened at a sentence boundary until the render fits, so the ground truth is exactly the text
shown. English text comes from the seeded grammar (:mod:`.grammar`); Chinese, Japanese, Korean and
Hindi from the hand-written corpora in ``corpora/``.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from importlib import resources

import numpy as np

from roundtrip.datasets.rendered import grammar
from roundtrip.render import LANGUAGE_FONTS, RenderItem, RenderSettings, render_items

#: Rough average glyph advance in em, only to size the first attempt (the fit loop corrects it).
_ADVANCE_EM = {"en": 0.47, "zh": 1.0, "ja": 1.0, "ko": 0.9, "hi": 0.55}
#: Separator between sentences: scripts without word spaces join them directly.
_JOIN = {"zh": "", "ja": ""}


@dataclass(frozen=True)
class AbstractsSpec:
    """Config of an abstracts dataset (``datasets.<name>`` with ``type: abstracts``).

    Attributes:
        language: ISO 639-1 code: en, zh, ja, ko or hi.
        count: number of canvases.
        seed: seed of the text generator (item i uses ``seed * 1000 + i``).
        canvas_px: side of the square canvas.
        font: font style for Latin text (:data:`roundtrip.render.fonts.FONT_STYLES`).
        size_pt: font size (pt = px).
        translate: for a non-English set, translate the English grammar text through an API
            (resolved ``endpoint``, ``model``, ``prompt``; :func:`roundtrip.api.synthesis.
            translate_blocks`) instead of drawing from the hand-written corpus.
    """
    language: str = "en"
    count: int = 4
    seed: int = 0
    canvas_px: int = 1024
    font: str = "times"
    size_pt: float = 12
    translate: dict | None = None


def load_corpus(language: str) -> tuple[list[str], list[str]]:
    """Titles and sentences of a hand-written corpus (``corpora/{language}.txt``).

    Raises:
        FileNotFoundError: no corpus for the language.
    """
    path = resources.files(__package__).joinpath("corpora", f"{language}.txt")
    if not path.is_file():
        raise FileNotFoundError(f"no corpus for language '{language}' (corpora/{language}.txt)")
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    titles = [ln[2:].strip() for ln in lines if ln.startswith("T:")]
    sentences = [ln for ln in lines if ln and not ln.startswith(("T:", "#"))]
    return titles, sentences


def blocks(language: str, rng: random.Random, n_sentences: int) -> list[list[str]]:
    """Abstract blocks (``[title, sentence, ...]``) holding ``n_sentences`` sentences in all."""
    out, left = [], n_sentences
    titles, sents = load_corpus(language) if language != "en" else ([], [])
    while left > 0:
        n = min(left, rng.randint(6, 10))
        if language == "en":
            out.append([grammar.title(rng)] + grammar.sentences(rng, n))
        else:
            out.append([rng.choice(titles)] + rng.sample(sents, min(n, len(sents))))
        left -= len(out[-1]) - 1
    return out


def page_text(language: str, page: list[list[str]], n_sentences: int) -> str:
    """The first ``n_sentences`` sentences of ``page`` with their titles, as renderer input."""
    join, paras, left = _JOIN.get(language, " "), [], n_sentences
    for title, *sents in page:
        if left <= 0:
            break
        paras += [title, join.join(sents[:left])]
        left -= len(sents)
    return "\n\n".join(paras)


def _translated_pages(spec: AbstractsSpec, n_sentences: int) -> list[list[list[str]]]:
    """English grammar pages (same seeds as the English set) translated block by block."""
    from roundtrip.datasets.generated import translate_blocks
    from roundtrip.readers.vlm import LANGUAGE_NAMES  # keyed by Tesseract code

    *_, tess = LANGUAGE_FONTS[spec.language]
    english = [blocks("en", random.Random(spec.seed * 1000 + i), n_sentences)
               for i in range(spec.count)]
    flat = translate_blocks([b for page in english for b in page],
                            LANGUAGE_NAMES[tess], spec.translate)
    pages, k = [], 0
    for page in english:
        pages.append(flat[k:k + len(page)])
        k += len(page)
    return pages


def build_abstracts(spec: AbstractsSpec, settings: RenderSettings, max_rounds: int = 8) -> list:
    """Render ``spec.count`` canvases.

    Returns:
        ``roundtrip.datasets.Item`` list; ``image`` is ``(canvas, canvas, 3)`` uint8 RGB (text
        black on white, top-aligned) and ``extra`` holds ``text``, ``lang`` (Tesseract code),
        ``font``, ``font_size_pt``; items that cannot be fitted carry the reason.

    Raises:
        ValueError: unsupported language.
    """
    from roundtrip.core.manifest import Item

    if spec.language not in LANGUAGE_FONTS:
        raise ValueError(f"unsupported language '{spec.language}'; choose from "
                         f"{sorted(LANGUAGE_FONTS)}")
    family, _, _, tess = LANGUAGE_FONTS[spec.language]
    s = RenderSettings(**{**settings.__dict__, "width_px": spec.canvas_px})
    inner = spec.canvas_px - 2 * s.margin_lr_px
    per_line = inner / (spec.size_pt * _ADVANCE_EM[spec.language])
    lines = (spec.canvas_px - 2 * s.crop_margin_px) / (spec.size_pt * s.line_spread)
    sentence_chars = 95 if spec.language == "en" else 45
    first = max(2, math.ceil(1.4 * per_line * lines / sentence_chars))
    if spec.translate and spec.language != "en":
        pages = _translated_pages(spec, first)
    else:
        pages = [blocks(spec.language, random.Random(spec.seed * 1000 + i), first)
                 for i in range(spec.count)]
    n = [first] * spec.count
    done: dict[int, object] = {}
    for _ in range(max_rounds):
        todo = [i for i in range(spec.count) if i not in done]
        if not todo:
            break
        results = render_items([RenderItem(f"abstract_{i:03d}", page_text(spec.language,
                                                                          pages[i], n[i]),
                                           style=spec.font, size_pt=spec.size_pt,
                                           lang=spec.language) for i in todo], s)
        for i, r in zip(todo, results):
            if r.error or r.image.shape[0] <= spec.canvas_px or n[i] <= 1:
                done[i] = r
            else:  # too tall: shorten in proportion, at least one sentence
                n[i] = max(1, min(n[i] - 1, math.floor(n[i] * spec.canvas_px / r.image.shape[0])))
    items = []
    for i in range(spec.count):
        r = done.get(i)
        item_id = f"{spec.language}_{i:03d}"
        extra = {"lang": tess, "font": family or spec.font, "font_size_pt": spec.size_pt}
        if r is None or r.error or r.image.shape[0] > spec.canvas_px:
            why = r.error if r is not None and r.error else "text does not fit the canvas"
            items.append(Item(item_id, "xelatex", reason=why, extra=extra))
            continue
        canvas = np.full((spec.canvas_px, spec.canvas_px), 255, np.uint8)
        canvas[:r.image.shape[0]] = r.image
        items.append(Item(item_id, "xelatex", image=np.repeat(canvas[..., None], 3, axis=2),
                          extra=extra | {"text": r.text}))
    return items
