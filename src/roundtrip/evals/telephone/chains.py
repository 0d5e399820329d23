"""Text-first and image-first chains (The Telephone Game, Sec. 3, Fig. 4), generation by
generation, in the released code's folder layout (:mod:`roundtrip.datasets.chain_layout`).

Text-first: ``T0 -> I1 = T2I(T0) -> T2 = I2T(I1) -> ...``; image-first: ``I0 -> T1 = I2T(I0) ->
I2 = T2I(T1) -> ...``. Every generation is stored as soon as it is complete, with its status file
(:func:`roundtrip.datasets.chain_layout.write_status`), so a crash loses no finished generation and raising ``G`` computes
only the new ones. An item that fails at generation ``k`` keeps its row at every later
generation with status ``error`` and the reason of generation ``k``.
"""
from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roundtrip.core.imaging import FAST_PNG, one_line, read_image, to_uint8, write_png
from roundtrip.datasets import chain_layout as layout
from roundtrip.evals.telephone.unified import UnifiedPair, item_seed

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Seed:
    """One input of a chain: its id, the caption (text-first input) and the image path
    (image-first input); either may be missing."""
    item_id: str
    caption: str | None
    image: Path | None


def _write_gen0(root: Path, chain: str, seeds: list[Seed]) -> None:
    rows = []
    if chain == layout.TEXT_FIRST:
        texts = {}
        for s in seeds:
            ok = bool(s.caption and s.caption.strip())
            rows.append({"filename": s.item_id, "status": "ok" if ok else "error",
                         "reason": "" if ok else "the item has no caption", "seconds": 0.0})
            if ok:
                texts[s.item_id] = s.caption
        layout.write_texts(root, chain, 0, texts)
    else:
        folder = layout.image_dir(root, chain, 0)
        folder.mkdir(parents=True, exist_ok=True)
        for s in seeds:
            row = {"filename": s.item_id, "status": "ok", "reason": "", "seconds": 0.0}
            try:
                if s.image is None:
                    raise ValueError("the item has no image")
                if s.image.suffix.lower() == ".png":
                    shutil.copyfile(s.image, folder / f"{s.item_id}.png")
                else:
                    write_png(folder / f"{s.item_id}.png", to_uint8(read_image(s.image)))
            except (OSError, ValueError) as exc:
                row.update(status="error", reason=one_line(exc))
            rows.append(row)
    layout.write_status(root, chain, 0, rows)


def _failure_reasons(root: Path, chain: str, g: int) -> dict[str, str]:
    status = layout.read_status(root, chain, g)
    bad = status[status["status"] != "ok"]
    return dict(zip(bad["filename"], bad["reason"]))


def run_generation(pair: UnifiedPair, root: Path, chain: str, g: int, ids: list[str],
                   seed: int = 0) -> None:
    """Make generation ``g >= 1`` of ``chain`` from generation ``g - 1`` (which is complete).

    Writes the texts (``gen-g.csv``) or images (``gen-g/<id>.png``), then ``gen-g.status.csv``.
    """
    prev = layout.read_outputs(root, chain, g - 1, ids)
    earlier = _failure_reasons(root, chain, g - 1)
    rows = {i: {"filename": i, "status": "error", "seconds": 0.0,
                "reason": earlier.get(i) or f"generation {g - 1} has no output"}
            for i in ids if i not in prev}
    todo = [i for i in ids if i in prev]
    t0 = time.perf_counter()
    if layout.modality_at(chain, g) == "image":
        results = pair.t2i([prev[i] for i in todo], [item_seed(i, g, seed) for i in todo])
    else:
        results = pair.i2t([prev[i] for i in todo])
    per_item = (time.perf_counter() - t0) / max(1, len(todo))
    texts = {}
    folder = layout.image_dir(root, chain, g)
    if layout.modality_at(chain, g) == "image":
        folder.mkdir(parents=True, exist_ok=True)
    for i, res in zip(todo, results):
        row = {"filename": i, "status": "ok", "reason": "", "seconds": round(per_item, 3)}
        if isinstance(res, Exception):
            row.update(status="error", reason=f"generation {g}: {one_line(res)}")
        elif isinstance(res, str):
            texts[i] = res
        else:
            write_png(folder / f"{i}.png", np.asarray(res, dtype=np.uint8), FAST_PNG)
        rows[i] = row
    if layout.modality_at(chain, g) == "text":
        layout.write_texts(root, chain, g, texts)
    layout.write_status(root, chain, g, [rows[i] for i in ids])


def run_chain(pair: UnifiedPair, seeds: list[Seed], root: str | Path, chain: str,
              generations: int, seed: int = 0) -> int:
    """Make generations ``0..generations`` of ``chain`` for ``seeds``, skipping complete ones.

    Args:
        pair: the unified model (T2I + I2T).
        seeds: the inputs (ids unique).
        root: the chain folder (``text-first/`` and ``image-first/`` go inside).
        chain: ``text-first`` or ``image-first``.
        generations: ``G`` (>= 1).
        seed: base of the per-item, per-generation seeds (:func:`.unified.item_seed`).

    Returns:
        The number of generations computed now (0 when all were complete).

    Raises:
        ValueError: ``generations`` < 1 or duplicate ids.
    """
    if generations < 1:
        raise ValueError(f"generations must be >= 1, got {generations}")
    ids = [s.item_id for s in seeds]
    if len(set(ids)) != len(ids):
        raise ValueError("chain inputs must have unique item ids")
    root = Path(root)
    made = 0
    if layout.read_status(root, chain, 0) is None:
        _write_gen0(root, chain, seeds)
    for g in range(1, generations + 1):
        if layout.read_status(root, chain, g) is not None:
            continue
        t0 = time.perf_counter()
        run_generation(pair, root, chain, g, ids, seed)
        made += 1
        log.info("%s %s generation %d: %.1f s", pair.name, chain, g, time.perf_counter() - t0)
    return made
