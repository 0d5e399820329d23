"""Procedural movie posters: a large title and a smaller slogan over a genre background.

Titles and slogans come from seeded per-genre word lists and templates (ours); backgrounds are
numpy compositions whose palette and motifs follow the genre (stars and a planet for science
fiction, a moon in fog for horror, ...). Title and slogan are rendered with :mod:`roundtrip.render`
(XeLaTeX, centered) and composited as alpha masks with a shadow, so the ground truth and each
text's box ``(x0, y0, x1, y1)`` (pixels, exclusive ends) are exact.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy.ndimage import maximum_filter

from roundtrip.render import RenderItem, RenderSettings, render_items

Color = tuple[int, int, int]


@dataclass(frozen=True)
class Genre:
    """Palette (top, middle, accent), motifs, title font style, and the word lists."""
    palette: tuple[Color, Color, Color]
    motifs: tuple[str, ...]
    font: str
    adjectives: tuple[str, ...]
    nouns: tuple[str, ...]
    templates: tuple[str, ...]
    slogans: tuple[str, ...]


GENRES: dict[str, Genre] = {
    "horror": Genre(((8, 4, 8), (55, 0, 12), (150, 20, 25)), ("fog", "moon", "vignette"), "times",
                    ("Hollow", "Silent", "Crimson", "Forgotten", "Drowned", "Whispering"),
                    ("Lantern", "Orchard", "Cellar", "Choir", "Tide", "Attic"),
                    ("The {adj} {noun}", "Beneath the {adj} {noun}", "{noun} of Ashes"),
                    ("Some doors should stay closed.", "It remembers your name.",
                     "Nobody leaves before dawn.", "Listen. Then run.")),
    "scifi": Genre(((3, 6, 25), (20, 40, 95), (0, 200, 225)), ("stars", "planet", "grid"), "arial",
                   ("Cobalt", "Last", "Silent", "Quantum", "Distant", "Iron"),
                   ("Horizon", "Signal", "Colony", "Orbit", "Machine", "Frontier"),
                   ("Beyond the {adj} {noun}", "The {adj} {noun}", "{noun} Zero"),
                   ("The stars were never empty.", "One signal. One chance.",
                    "The last message is a warning.", "Tomorrow has already begun.")),
    "romance": Genre(((250, 205, 215), (215, 120, 150), (120, 35, 80)), ("bokeh", "vignette"),
                     "cambria", ("Paper", "Summer", "Second", "Little", "Golden", "Borrowed"),
                     ("Hearts", "Letters", "Promises", "Seasons", "Rain", "Chances"),
                     ("{adj} {noun}", "All the {adj} {noun}", "A {adj} {noun}"),
                     ("Some loves take a lifetime.", "Every letter was a promise.",
                      "Fall slowly, then all at once.", "Two strangers, one summer.")),
    "comedy": Genre(((255, 225, 30), (255, 150, 0), (40, 30, 30)), ("rays", "dots"), "arial",
                    ("Totally", "Accidental", "Big", "Unlikely", "Awkward", "Very"),
                    ("Wedding", "Roommates", "Road Trip", "Heist", "Family", "Vacation"),
                    ("The {adj} {noun}", "My {adj} {noun}", "{noun} Disaster"),
                    ("What could possibly go wrong?", "They had one job.",
                     "Bad plans. Good friends.", "Nobody asked for this.")),
    "action": Genre(((15, 15, 18), (170, 50, 0), (255, 185, 0)), ("streaks", "explosion"),
                    "arial", ("Final", "Steel", "Rogue", "Burning", "Dead", "Rapid"),
                    ("Protocol", "Strike", "Run", "Extraction", "Line", "Fury"),
                    ("{adj} {noun}", "Operation {noun}", "The {adj} {noun}"),
                    ("No rules. No retreat.", "Twelve hours to stop the clock.",
                     "Justice has a new address.", "Fight for every second.")),
    "fantasy": Genre(((15, 8, 40), (80, 40, 125), (225, 190, 90)), ("stars", "mountains"),
                     "cambria", ("Ember", "Glass", "Ancient", "Shadow", "Silver", "Wandering"),
                     ("Crown", "Kingdom", "Dragon", "Forest", "Oracle", "Gate"),
                     ("The {adj} {noun}", "Rise of the {noun}", "{noun} of {adj} Light"),
                     ("Every legend begins with a choice.", "The old magic is waking.",
                      "Beyond the gate lies home.", "Courage is older than kings.")),
    "drama": Genre(((28, 38, 50), (90, 100, 112), (205, 190, 165)), ("bokeh", "vignette"),
                   "times", ("Quiet", "Long", "Open", "Broken", "Distant", "Small"),
                   ("Harbor", "Winter", "House", "Road", "Season", "Hours"),
                   ("The {adj} {noun}", "After the {noun}", "A {adj} {noun}"),
                   ("Some truths take years to arrive.", "Home is where the silence ends.",
                    "One family. Three secrets.", "Nothing stays the same forever.")),
}


@dataclass(frozen=True)
class PostersSpec:
    """Config of a posters dataset (``type: posters``): ``count`` posters of ``size_px``²,
    genres drawn in turn from ``genres``, text from ``seed``."""
    count: int = 4
    seed: int = 0
    size_px: int = 1024
    genres: tuple[str, ...] = tuple(GENRES)
    title_pt: float = 84
    slogan_pt: float = 34


def title_and_slogan(genre: str, rng: random.Random) -> tuple[str, str]:
    """A fictional title and slogan of ``genre``."""
    g = GENRES[genre]
    title = rng.choice(g.templates).format(adj=rng.choice(g.adjectives), noun=rng.choice(g.nouns))
    return title, rng.choice(g.slogans)


# -- backgrounds --------------------------------------------------------------------------------

def _grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[0:n, 0:n].astype(np.float32) / n
    return y, x


def _smooth_noise(rng: np.random.Generator, n: int, cells: int) -> np.ndarray:
    small = Image.fromarray((rng.random((cells, cells)) * 255).astype(np.uint8))
    return np.asarray(small.resize((n, n), Image.BICUBIC), np.float32) / 255


def _blend(img: np.ndarray, color, alpha: np.ndarray) -> None:
    img += (np.asarray(color, np.float32) - img) * np.clip(alpha, 0, 1)[..., None]


def background(genre: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, n, 3)`` float32 RGB in [0, 255]: a vertical gradient plus the genre's motifs."""
    g = GENRES[genre]
    top, mid, accent = (np.asarray(c, np.float32) for c in g.palette)
    y, x = _grid(n)
    t = y[..., None]
    img = np.where(t < 0.5, top + (mid - top) * (t / 0.5), mid + (top - mid) * ((t - 0.5) / 0.5))
    img = img.astype(np.float32)
    for motif in g.motifs:
        MOTIFS[motif](img, y, x, accent, rng)
    return np.clip(img, 0, 255)


def _stars(img, y, x, accent, rng):
    n = img.shape[0]
    for _ in range(int(n * 0.4)):
        cy, cx = rng.integers(0, n, 2)
        img[cy, cx] = 255 * rng.uniform(0.5, 1.0)


def _planet(img, y, x, accent, rng):
    cy, cx, r = rng.uniform(0.55, 0.75), rng.uniform(0.2, 0.8), rng.uniform(0.18, 0.3)
    d = np.sqrt((y - cy) ** 2 + (x - cx) ** 2)
    shade = np.clip(1 - ((x - cx + 0.4 * r) ** 2 + (y - cy + 0.4 * r) ** 2) / (2 * r * r), 0, 1)
    _blend(img, accent * 0.3, (d < r).astype(np.float32))
    _blend(img, accent, (d < r) * shade)
    _blend(img, accent, np.exp(-((d - r) / 0.01) ** 2) * 0.8)


def _grid_floor(img, y, x, accent, rng):
    floor = y > 0.78
    rows = np.abs(np.sin(1 / np.maximum(y - 0.74, 1e-3) * 2.0)) < 0.08
    cols = np.abs(np.sin((x - 0.5) / np.maximum(y - 0.74, 1e-3) * 6.0)) < 0.06
    _blend(img, accent, (floor & (rows | cols)) * 0.7)


def _fog(img, y, x, accent, rng):
    _blend(img, (120, 110, 115), _smooth_noise(rng, img.shape[0], 6) * 0.35 * y)


def _moon(img, y, x, accent, rng):
    cy, cx = rng.uniform(0.3, 0.45), rng.uniform(0.25, 0.75)
    d = np.sqrt((y - cy) ** 2 + (x - cx) ** 2)
    _blend(img, (235, 230, 215), np.exp(-(d / 0.12) ** 2) * 0.5)
    _blend(img, (240, 235, 220), (d < 0.07).astype(np.float32))


def _vignette(img, y, x, accent, rng):
    d = np.sqrt((y - 0.5) ** 2 + (x - 0.5) ** 2)
    _blend(img, (0, 0, 0), np.clip((d - 0.35) * 1.6, 0, 0.7))


def _bokeh(img, y, x, accent, rng):
    for _ in range(25):
        cy, cx, r = rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(0.02, 0.08)
        d = np.sqrt((y - cy) ** 2 + (x - cx) ** 2)
        _blend(img, (255, 245, 235), np.clip((r - d) / 0.01, 0, 1) * rng.uniform(0.1, 0.3))


def _rays(img, y, x, accent, rng):
    ang = np.arctan2(y - 0.55, x - 0.5)
    _blend(img, (255, 255, 255), (np.sin(ang * 14) > 0.3) * 0.18)


def _dots(img, y, x, accent, rng):
    cell = 1 / 28
    dy, dx = (y % cell) / cell - 0.5, (x % cell) / cell - 0.5
    _blend(img, accent, ((dy ** 2 + dx ** 2) < 0.04 * (1 - y)) * 0.25)


def _streaks(img, y, x, accent, rng):
    for _ in range(18):
        off, width = rng.uniform(-1, 1), rng.uniform(0.002, 0.01)
        d = np.abs((x - y * 0.6) - off)
        _blend(img, accent, np.exp(-(d / width) ** 2) * 0.5)


def _explosion(img, y, x, accent, rng):
    d = np.sqrt((y - 0.85) ** 2 + (x - rng.uniform(0.3, 0.7)) ** 2)
    _blend(img, accent, np.exp(-(d / 0.3) ** 2))
    _blend(img, (255, 250, 220), np.exp(-(d / 0.1) ** 2))


def _mountains(img, y, x, accent, rng):
    n = img.shape[0]
    walk = np.cumsum(rng.normal(0, 1, n))
    walk = np.convolve(walk, np.ones(41) / 41, mode="same")
    ridge = 0.72 + (walk - walk.mean()) / (np.ptp(walk) + 1e-6) * 0.15
    _blend(img, (10, 5, 20), (y > ridge[None, :]).astype(np.float32))


MOTIFS = {"stars": _stars, "planet": _planet, "grid": _grid_floor, "fog": _fog, "moon": _moon,
          "vignette": _vignette, "bokeh": _bokeh, "rays": _rays, "dots": _dots,
          "streaks": _streaks, "explosion": _explosion, "mountains": _mountains}


# -- composition ---------------------------------------------------------------------------------

def _composite(img: np.ndarray, gray: np.ndarray, top: int) -> None:
    """Draw a rendered text (gray: 255 paper, 0 ink) at row ``top`` with contrast and a shadow."""
    h = min(gray.shape[0], img.shape[0] - top)
    alpha = 1 - gray[:h].astype(np.float32) / 255
    region = img[top:top + h]
    light = region.mean() < 128
    fg, shadow = ((250, 248, 240), (0, 0, 0)) if light else ((20, 16, 18), (255, 255, 255))
    # An outline (dilated mask) plus a drop shadow keeps the text legible on busy motifs.
    outline = maximum_filter(alpha, size=5)
    shifted = np.zeros_like(alpha)
    shifted[4:, 4:] = outline[:-4, :-4]
    _blend(region, shadow, np.maximum(outline * 0.85, shifted * 0.5))
    _blend(region, fg, alpha)


def build_posters(spec: PostersSpec, settings: RenderSettings) -> list:
    """Render ``spec.count`` posters.

    Returns:
        ``roundtrip.datasets.Item`` list: ``(size, size, 3)`` uint8 RGB images; ``extra`` holds
        ``text`` (title and slogan in reading order, top to bottom), ``lang`` (eng), ``genre``, ``title``, ``slogan``,
        ``title_box``, ``slogan_box`` (``"x0 y0 x1 y1"``, pixels, exclusive ends), ``font``.

    Raises:
        ValueError: an unknown genre.
    """
    from roundtrip.core.manifest import Item

    unknown = [g for g in spec.genres if g not in GENRES]
    if unknown:
        raise ValueError(f"unknown poster genres {unknown}; choose from {sorted(GENRES)}")
    s = RenderSettings(**{**settings.__dict__, "width_px": spec.size_px, "crop_margin_px": 6})
    plans, render = [], []
    for i in range(spec.count):
        rng = random.Random(spec.seed * 1000 + i)
        genre = spec.genres[i % len(spec.genres)]
        title, slogan = title_and_slogan(genre, rng)
        plans.append((genre, title, slogan, rng.random() < 0.5))
        font = GENRES[genre].font
        render += [RenderItem(f"t{i}", title, style=font, size_pt=spec.title_pt, bold=True,
                              align="center"),
                   RenderItem(f"s{i}", slogan, style=font, size_pt=spec.slogan_pt,
                              align="center")]
    results = render_items(render, s)
    items = []
    for i, (genre, title, slogan, title_top) in enumerate(plans):
        t, sl = results[2 * i], results[2 * i + 1]
        extra = {"lang": "eng", "genre": genre, "title": title, "slogan": slogan,
                 "font": GENRES[genre].font}
        if t.error or sl.error:
            items.append(Item(f"poster_{i:03d}", "xelatex+procedural",
                              reason=f"title: {t.error or 'ok'}; slogan: {sl.error or 'ok'}",
                              extra=extra))
            continue
        n = spec.size_px
        img = background(genre, n, np.random.default_rng(spec.seed * 1000 + i))
        if title_top:
            t_y, s_y = int(0.08 * n), n - int(0.1 * n) - sl.image.shape[0]
        else:
            t_y = n - int(0.22 * n) - t.image.shape[0] // 2
            s_y = int(0.1 * n)
        boxes = {}
        for name, r, top in (("title", t, t_y), ("slogan", sl, s_y)):
            _composite(img, r.image, top)
            x0, y0, x1, y1 = r.box
            boxes[f"{name}_box"] = f"{x0} {y0 + top} {x1} {y1 + top}"
        # Ground truth in reading order (top to bottom), as OCR of the whole poster reads it.
        text = f"{t.text}\n{sl.text}" if t_y < s_y else f"{sl.text}\n{t.text}"
        extra |= boxes | {"text": text}
        items.append(Item(f"poster_{i:03d}", "xelatex+procedural",
                          image=np.rint(img).astype(np.uint8), extra=extra))
    return items
