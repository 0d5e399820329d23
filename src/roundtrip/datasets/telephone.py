"""Inputs of The Telephone Game's chains: caption sets, GenEval prompt sets, and chain folders
made elsewhere.

- ``captions``: (image, caption) pairs or captions only. ``captions: builtin`` is a dozen
  scene descriptions written for roundtrip (``data/telephone_captions.txt``) whose images are
  their XeLaTeX renders (what the offline ``render_ocr`` pair draws), so both chains run offline;
  a ``.jsonl`` file (``{"id"?, "caption", "image"?}`` per line, image paths relative to the file)
  or a ``.csv`` (``filename, caption``; images ``<filename>`` beside it, as in the released
  code's ``gen-0``) brings real pairs such as ND400.
- ``geneval``: GenEval prompts (``evaluation_metadata.jsonl``: ``tag, include, exclude,
  prompt``), captions only (text-first chains for MGG); ``prompts: builtin`` is a 12-prompt
  sample in GenEval's format (two per task) written for roundtrip.
- ``chains``: a folder in the released code's layout (:mod:`roundtrip.evals.telephone.layout`)
  whose chains were made elsewhere; it is scored, not generated. Its manifest lists the items.

Manifest rows carry ``text`` (the caption or prompt); image rows have ``path`` to a PNG, caption
rows an empty ``path`` with status ``ok``. GenEval rows add ``tag`` and ``metadata`` (JSON).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from roundtrip.core.hashing import sha256_file
from roundtrip.core.imaging import one_line, read_image, to_uint8, write_png
from roundtrip.core.manifest import write_manifest
from roundtrip.datasets import chain_layout as layout

DATA = Path(__file__).parent / "data"
#: Render settings of the builtin caption images (those of the render_ocr pair's T2I).
RENDER_DEFAULTS = {"font_size_pt": 20, "width_px": 512}


def pad_white(gray, width_px: int, multiple: int = 32):
    """A grayscale render as an RGB uint8 image padded with white to at least ``width_px`` wide
    and to sides that are multiples of ``multiple`` (tokenizers downsample by 8 to 16)."""
    import numpy as np

    h, w = gray.shape
    ph = -(-h // multiple) * multiple
    pw = -(-max(w, width_px) // multiple) * multiple
    out = np.full((ph, pw), 255, np.uint8)
    out[:h, :w] = gray
    return np.repeat(out[:, :, None], 3, axis=2)


def render_caption_images(texts: list[str], font_size_pt: float = 20, width_px: int = 512,
                          style: str = "arial", multiple: int = 32) -> list:
    """Texts rendered by XeLaTeX (black on white, ``width_px`` wide, one paragraph each) and
    padded by :func:`pad_white`: ``(H, W, 3)`` uint8 per text, or the item's exception. An
    empty text gives a blank page (one padding unit high)."""
    import numpy as np

    from roundtrip.render import RenderItem, RenderSettings, render_items

    settings = RenderSettings(width_px=width_px, jobs=1)
    items = [RenderItem(f"t{i}", t, style=style, size_pt=font_size_pt)
             for i, t in enumerate(texts) if t.strip()]
    rendered = {r.item_id: r for r in render_items(items, settings)} if items else {}
    out: list = []
    for i, text in enumerate(texts):
        if not text.strip():
            out.append(pad_white(np.full((multiple, width_px), 255, np.uint8), width_px, multiple))
            continue
        r = rendered[f"t{i}"]
        out.append(pad_white(r.image, width_px, multiple) if r.image is not None
                   else RuntimeError(f"render failed: {r.error}"))
    return out


def chain_items(root: Path) -> tuple[dict[str, str], str]:
    """Items of a released-layout chain folder: ``id -> caption`` (empty for image-first-only
    items) and the ``text-first:G image-first:G`` summary of complete generations.

    Raises:
        FileNotFoundError: neither chain has a generation 0.
    """
    items: dict[str, str] = {}
    found = []
    for chain in (layout.TEXT_FIRST, layout.IMAGE_FIRST):
        g = layout.generations_present(root, chain)
        found.append(f"{chain}:{g}")
        if g < 0:
            continue
        if chain == layout.TEXT_FIRST:
            items.update(layout.read_texts(root, chain, 0))
        else:
            for p in sorted(layout.image_dir(root, chain, 0).iterdir()):
                if p.suffix.lower() in layout.IMAGE_SUFFIXES:
                    items.setdefault(layout.item_id(p.name), "")
    if all(f.endswith(":-1") for f in found):
        raise FileNotFoundError(f"{root}: no text-first/gen-0.csv and no image-first/gen-0/ "
                                f"(the released code's layout; see roundtrip.datasets.chain_layout)")
    return items, " ".join(found)


def _row(item_id: str, text: str, source: str, **extra) -> dict:
    return {"item_id": item_id, "path": "", "kind": "caption", "width": "", "height": "",
            "depth": "", "source": source, "sha256": "", "status": "ok", "reason": "",
            "text": text, **extra}


def _with_image(row: dict, image, out_dir: Path) -> dict:
    rel = f"images/{row['item_id']}.png"
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    write_png(out_dir / rel, image)
    return row | {"path": rel, "kind": "image", "width": image.shape[1],
                  "height": image.shape[0], "sha256": sha256_file(out_dir / rel)}


def _caption_source(spec: dict) -> list[dict]:
    source = spec.get("captions", "builtin")
    if source == "builtin":
        lines = [s.strip() for s in (DATA / "telephone_captions.txt").read_text().splitlines()]
        return [{"id": f"caption{i:02d}", "caption": s} for i, s in enumerate(lines) if s]
    path = Path(source).expanduser()
    if path.suffix == ".jsonl":
        out = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if line.strip():
                obj = json.loads(line)
                if "caption" not in obj:
                    raise ValueError(f"{path}:{n + 1}: no 'caption' field")
                image = obj.get("image")
                out.append({"id": str(obj.get("id", f"item{n:05d}")), "caption": obj["caption"],
                            "image": str(path.parent / image) if image else None})
        return out
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if not {"filename", "caption"} <= set(frame.columns):
        raise ValueError(f"{path}: expected columns filename, caption")
    return [{"id": Path(f).stem, "caption": c, "image": str(path.parent / f)}
            for f, c in zip(frame["filename"], frame["caption"])]


def build_captions(name: str, spec: dict, out_dir: str | Path) -> pd.DataFrame:
    """Build a ``captions`` set (see the module docstring).

    Args:
        spec: ``captions`` (``builtin`` or a file), ``count`` (first N), ``render`` (render the
            caption as the image of items without one; default true for ``builtin``),
            ``font_size_pt``, ``width_px`` (of the renders).

    Raises:
        FileNotFoundError: the captions file is missing; ValueError: it lacks captions.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = _caption_source(spec)[: spec.get("count") or None]
    render = spec.get("render", spec.get("captions", "builtin") == "builtin")
    rows, to_render = [], []
    for e in entries:
        row = _row(e["id"], e["caption"], str(spec.get("captions", "builtin")))
        if e.get("image"):
            try:
                row = _with_image(row, to_uint8(read_image(e["image"])), out_dir)
            except (OSError, ValueError) as exc:
                row.update(status="error", reason=one_line(exc))
        elif render:
            to_render.append(len(rows))
        rows.append(row)
    if to_render:
        images = render_caption_images([rows[i]["text"] for i in to_render],
                                       float(spec.get("font_size_pt", RENDER_DEFAULTS["font_size_pt"])),
                                       int(spec.get("width_px", RENDER_DEFAULTS["width_px"])))
        for i, img in zip(to_render, images):
            if isinstance(img, Exception):
                rows[i].update(status="error", reason=one_line(img))
            else:
                rows[i] = _with_image(rows[i], img, out_dir)
    return write_manifest(rows, out_dir)


def read_geneval(path: str | Path) -> list[dict]:
    """GenEval metadata lines (``tag, include, exclude?, prompt``).

    Raises:
        ValueError: a line without ``prompt``, ``tag`` or ``include`` (names the line).
    """
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
        if line.strip():
            obj = json.loads(line)
            missing = [k for k in ("prompt", "tag", "include") if k not in obj]
            if missing:
                raise ValueError(f"{path}:{n + 1}: missing {missing}")
            out.append(obj)
    return out


def build_geneval(name: str, spec: dict, out_dir: str | Path) -> pd.DataFrame:
    """Build a ``geneval`` prompt set: one caption row per prompt (ids ``00000``, ``00001``...,
    GenEval's folder names), with ``tag`` and ``metadata``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    source = spec.get("prompts", "builtin")
    path = DATA / "geneval_prompts.jsonl" if source == "builtin" else Path(source).expanduser()
    prompts = read_geneval(path)[: spec.get("count") or None]
    rows = [_row(f"{i:05d}", p["prompt"], str(source), tag=p["tag"], metadata=json.dumps(p))
            for i, p in enumerate(prompts)]
    return write_manifest(rows, out_dir)


def build_chains(name: str, spec: dict, out_dir: str | Path) -> pd.DataFrame:
    """Index a chain folder made elsewhere (released layout); nothing is copied.

    Rows: the items of ``text-first/gen-0.csv`` and of ``image-first/gen-0/``, with the caption
    where text-first has one and ``generations`` (``text-first:G1 image-first:G2``, the last
    complete generation of each chain).

    Raises:
        FileNotFoundError: the folder has neither chain's generation 0.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    root = Path(spec["path"]).expanduser()
    items, generations = chain_items(root)
    rows = [_row(i, caption, str(root), generations=generations) for i, caption in items.items()]
    return write_manifest(rows, out_dir)
