"""Similarity backbones and the per-item similarities of a chain folder (The Telephone Game,
Sec. 3.1, Table 1).

Directions ``delta`` and the generations they are measured at (the released code's ranges):

| chain | direction | input | compared with | generations |
|---|---|---|---|---|
| text-first | ``text_text`` | T0 | T(g) | 2, 4, ..., G |
| text-first | ``text_image`` | T0 | I(g) | 1, 3, ... |
| image-first | ``image_image`` | I0 | I(g) | 2, 4, ... |
| image-first | ``image_text`` | I0 | T(g) | 1, 3, ... |
| image-first | ``text_text`` | the caption paired with I0 | T(g) | 1, 3, ... |

The last row is roundtrip's: it lets text-only backbones score image-first chains when the input
image has a caption (for the offline ``render_ocr`` pair the caption is exactly what I0 shows).

Backbones (:data:`BACKBONE_TYPES`, config ``telephone.backbones.<name>.type``):

- ``wordllama``: static token embeddings shipped inside the ``wordllama`` wheel (offline),
  cosine; text only.
- ``cer``: ``1 - min(CER, 1)`` after VTBench's normalization; text only; no model.
- ``sentence_transformers``: e.g. MPNet (``all-mpnet-base-v2``, the paper's text backbone) from
  a local folder, cosine.
- ``clip``: CLIP (``transformers``) from a local folder, cosine of projected embeddings; all four
  directions (the paper's cross-modal backbone).
- ``dino``: a DINO/DINOv2 ViT (``transformers``) from a local folder, cosine of the CLS
  embeddings of the released code's 224 px centre crop (:func:`dino_pixels`); image only (the
  paper's image backbone).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import one_line
from roundtrip.core.weights import model_folder
from roundtrip.datasets import chain_layout as layout

DIRECTIONS = ("text_text", "text_image", "image_image", "image_text")
COLUMNS = ["item_id", "chain", "direction", "backbone", "generation", "similarity", "status",
           "reason"]


def generations_of(chain: str, direction: str, generations: int) -> list[int]:
    """The generations at which ``direction`` is measured on ``chain`` (table above); empty when
    the chain does not have that direction."""
    target = direction.split("_")[1]
    source = direction.split("_")[0]
    first = "text" if chain == layout.TEXT_FIRST else "image"
    if source != first and not (chain == layout.IMAGE_FIRST and direction == "text_text"):
        return []
    return [g for g in range(1, generations + 1) if layout.modality_at(chain, g) == target]


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


class Backbone:
    """A similarity backbone: ``similarity(kind_a, a, kind_b, b)`` -> cosine per pair.

    Attributes:
        name: config key; kinds: the modalities it embeds (``text``, ``image``).
    """

    kinds: tuple[str, ...] = ()
    name = ""

    def embed(self, kind: str, values: list) -> np.ndarray:
        """``[N, D]`` float embeddings of texts or ``(H, W, 3)`` uint8 images."""
        raise NotImplementedError

    def supports(self, direction: str) -> bool:
        a, b = direction.split("_")
        return a in self.kinds and b in self.kinds

    def similarity(self, kind_a: str, a: list, kind_b: str, b: list) -> np.ndarray:
        """Cosine similarity of ``a[i]`` and ``b[i]``, shape ``[N]``, in [-1, 1]."""
        return np.sum(_unit(self.embed(kind_a, a)) * _unit(self.embed(kind_b, b)), axis=1)

    def describe(self) -> str:
        return type(self).__name__


class WordLlamaBackbone(Backbone):
    """wordllama's bundled embeddings (its weights and tokenizer ship in the wheel; loaded with
    ``cache_dir=<the package folder>, disable_download=True``, which finds both offline).

    Args:
        dim: truncated (Matryoshka) embedding size: 64, 128, 256, 512 or 1024.
    """
    kinds = ("text",)

    def __init__(self, dim: int = 256):
        import wordllama

        self._model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent,
                                               disable_download=True, dim=int(dim))
        self.dim = int(dim)

    def describe(self) -> str:
        return f"wordllama (dim {self.dim}, bundled)"

    def embed(self, kind, values):
        return np.asarray(self._model.embed(list(values)), dtype=np.float64)


class CERBackbone(Backbone):
    """``1 - min(CER, 1)`` (:func:`roundtrip.metrics.drift.cer_similarity`); an empty input text
    gives NaN (CER undefined)."""
    kinds = ("text",)

    def __init__(self):
        pass

    def describe(self) -> str:
        return "1 - CER (VTBench normalization)"

    def similarity(self, kind_a, a, kind_b, b):
        from roundtrip.metrics.drift import cer_similarity

        out = []
        for ref, hyp in zip(a, b):
            try:
                out.append(cer_similarity(ref, hyp))
            except ValueError:
                out.append(math.nan)
        return np.array(out, dtype=np.float64)


class SentenceTransformersBackbone(Backbone):
    """A sentence-transformers model (MPNet: ``sentence-transformers/all-mpnet-base-v2``, the
    paper's text backbone) from a local folder."""
    kinds = ("text",)

    def __init__(self, weights: str, device: str = "cpu", name: str = ""):
        from sentence_transformers import SentenceTransformer

        folder = model_folder(weights, f"telephone.backbones.{name}.weights")
        self._model = SentenceTransformer(folder, device=device, local_files_only=True)
        self.weights = folder

    def describe(self) -> str:
        return f"sentence-transformers {Path(self.weights).name}"

    def embed(self, kind, values):
        return np.asarray(self._model.encode(list(values), convert_to_numpy=True), np.float64)


class ClipBackbone(Backbone):
    """CLIP from a local folder (``openai/clip-vit-base-patch32`` in the released code): text and
    image embeddings in the shared space (texts truncated to CLIP's 77 tokens)."""
    kinds = ("text", "image")

    def __init__(self, weights: str, device: str = "cpu", name: str = ""):
        import transformers

        folder = model_folder(weights, f"telephone.backbones.{name}.weights")
        self._model = transformers.CLIPModel.from_pretrained(folder, local_files_only=True
                                                             ).to(device).eval()
        self._processor = transformers.CLIPProcessor.from_pretrained(folder, local_files_only=True)
        self.weights, self.device = folder, device

    def describe(self) -> str:
        return f"CLIP {Path(self.weights).name}"

    def embed(self, kind, values):
        import torch

        with torch.no_grad():
            if kind == "text":
                inputs = self._processor(text=list(values), return_tensors="pt", padding=True,
                                         truncation=True).to(self.device)
                out = self._model.get_text_features(**inputs)
            else:
                inputs = self._processor(images=[np.ascontiguousarray(v) for v in values],
                                         return_tensors="pt").to(self.device)
                out = self._model.get_image_features(**inputs)
        if not torch.is_tensor(out):  # transformers 5 may return a model output
            out = out.pooler_output
        return out.float().cpu().numpy().astype(np.float64)


#: DINO's input preprocessing in the authors' released code (mcd-sdr.py, ``DINOWrapper``):
#: the shorter side resized to 256 (bilinear), the central 224 x 224 crop, ImageNet's mean and
#: standard deviation.
DINO_RESIZE, DINO_CROP = 256, 224
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
#: ``telephone.backbones.<name>.preprocess`` of a ``dino`` backbone.
DINO_PREPROCESS = ("released", "processor")


def dino_pixels(images: list[np.ndarray]):
    """The released DINO input tensors: torchvision ``Resize(256)`` (shorter side, bilinear),
    ``CenterCrop(224)``, ``ToTensor()``, ``Normalize`` with ImageNet's mean and std (the authors'
    released code, github.com/mollahsabbir/Semantic-Drift-in-Unified-Models @ 4f1d253,
    ``semantic-drift/mcd-sdr.py``, ``DINOWrapper``). On a 4:3 image the crop keeps the central
    65.7 % of the width and 87.5 % of the height.

    Args:
        images: ``(H, W, 3)`` uint8 arrays, any sizes.

    Returns:
        ``torch.float32`` tensor ``[N, 3, 224, 224]``, normalized (about [-2.1, 2.6]).
    """
    import torch
    from PIL import Image
    from torchvision import transforms

    pipeline = transforms.Compose([
        transforms.Resize(DINO_RESIZE), transforms.CenterCrop(DINO_CROP), transforms.ToTensor(),
        transforms.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD)])
    return torch.stack([pipeline(Image.fromarray(np.ascontiguousarray(v)).convert("RGB"))
                        for v in images])


class DinoBackbone(Backbone):
    """A DINO or DINOv2 ViT (``transformers`` ``AutoModel``) from a local folder: the CLS token
    of the last layer (after its layer norm) as the image embedding, the feature timm's
    ``vit_base_patch16_224_dino`` returns in the released code.

    Args:
        weights: model folder or registry name (``dino-vitb16``: the paper's DINO v1 ViT-B/16).
        preprocess: ``released`` (default): :func:`dino_pixels`, the released code's resize to
            256 and central 224 crop; ``processor``: the folder's own image processor
            (``dino-vitb16``'s resizes the whole image to 224 x 224).
        device, name: torch device; the config key (for messages).

    Raises:
        ValueError: an unknown ``preprocess``.
    """
    kinds = ("image",)

    def __init__(self, weights: str, device: str = "cpu", name: str = "",
                 preprocess: str = "released"):
        import transformers

        if preprocess not in DINO_PREPROCESS:
            raise ValueError(f"preprocess: unknown {preprocess!r}; use one of {DINO_PREPROCESS}")
        folder = model_folder(weights, f"telephone.backbones.{name}.weights")
        self._model = transformers.AutoModel.from_pretrained(folder, local_files_only=True
                                                             ).to(device).eval()
        self._processor = None if preprocess == "released" else \
            transformers.AutoImageProcessor.from_pretrained(folder, local_files_only=True)
        self.weights, self.device, self.preprocess = folder, device, preprocess

    def describe(self) -> str:
        return f"DINO {Path(self.weights).name} ({self.preprocess} preprocessing)"

    def pixels(self, values: list[np.ndarray]):
        """The model's input tensor ``[N, 3, h, w]`` for ``(H, W, 3)`` uint8 images."""
        if self._processor is None:
            return dino_pixels(values)
        return self._processor(images=[np.ascontiguousarray(v) for v in values],
                               return_tensors="pt")["pixel_values"]

    def embed(self, kind, values):
        import inspect

        import torch

        # a ViT made for another input size (DINOv2 always interpolates) reads the 224 px crop
        # with its position embeddings interpolated; at its own size that is the identity
        extra = {"interpolate_pos_encoding": True} if "interpolate_pos_encoding" in \
            inspect.signature(self._model.forward).parameters else {}
        with torch.no_grad():
            pixels = self.pixels(values).to(self.device)
            out = self._model(pixel_values=pixels, **extra).last_hidden_state[:, 0]
        return out.float().cpu().numpy().astype(np.float64)


#: config ``telephone.backbones.<name>.type`` -> class.
BACKBONE_TYPES: dict[str, type[Backbone]] = {
    "wordllama": WordLlamaBackbone,
    "cer": CERBackbone,
    "sentence_transformers": SentenceTransformersBackbone,
    "clip": ClipBackbone,
    "dino": DinoBackbone,
}
#: Which directions each type can score (for checks before any job).
TYPE_KINDS = {k: cls.kinds for k, cls in BACKBONE_TYPES.items()}


def build_backbone(name: str, spec: dict, device: str = "cpu") -> Backbone:
    """The backbone of ``telephone.backbones.<name>``.

    Raises:
        WeightsMissing: its folder holds no saved model (the message says what to put where).
        ValueError: unknown type or bad arguments (the message starts with the config key).
    """
    kind = spec.get("type")
    if kind not in BACKBONE_TYPES:
        raise ValueError(f"telephone.backbones.{name}.type: unknown {kind!r}; known: "
                         f"{sorted(BACKBONE_TYPES)}")
    args = {k: v for k, v in spec.items() if k != "type"}
    if kind in ("sentence_transformers", "clip", "dino"):
        args.update(device=device, name=name)
    try:
        backbone = BACKBONE_TYPES[kind](**args)
    except TypeError as exc:
        raise ValueError(f"telephone.backbones.{name}: {exc}") from exc
    backbone.name = name
    return backbone


def score_chain(root: str | Path, chain: str, ids: list[str], captions: dict[str, str],
                backbones: dict[str, Backbone | str], generations: int) -> pd.DataFrame:
    """Per-item similarities of one chain for every (direction, backbone) it supports.

    Args:
        root: the chain folder (released layout).
        chain: ``text-first`` or ``image-first``.
        ids: the items (every one gets a row per direction, backbone and generation).
        captions: ``id -> caption`` paired with the input image (image-first ``text_text``).
        backbones: name -> backbone, or name -> the reason it could not be loaded (its rows get
            status ``n/a`` with that reason).
        generations: ``G``.

    Returns:
        Frame with :data:`COLUMNS`; ``similarity`` NaN where ``status`` is not ``ok``. Status
        ``failed``: the chain has no output for the item at a generation it holds (the model
        failed there or earlier); ``error``: no input for the direction, a generation the folder
        does not hold, or the backbone failed;
        ``n/a``: the backbone is not available.
    """
    root = Path(root)
    rows = []
    first = "text" if chain == layout.TEXT_FIRST else "image"
    inputs = layout.read_outputs(root, chain, 0, ids)
    cache: dict[int, dict] = {}
    for direction in DIRECTIONS:
        gens = generations_of(chain, direction, generations)
        if not gens:
            continue
        source_kind = direction.split("_")[0]
        source = inputs if source_kind == first else {i: c for i, c in captions.items()
                                                       if c and c.strip()}
        for bname, backbone in backbones.items():
            kind_ok = isinstance(backbone, str) or backbone.supports(direction)
            if not kind_ok:
                continue
            for g in gens:
                if g not in cache:
                    cache[g] = layout.read_outputs(root, chain, g, ids)
                rows += _score_generation(chain, direction, bname, backbone, g, ids, source,
                                          cache[g], root)
    return pd.DataFrame(rows, columns=COLUMNS)


def _missing_reason(root: Path, chain: str, g: int, item: str, has_source: bool) -> str:
    if not has_source:
        return "no input for this direction (generation 0 failed, or no caption)"
    status = layout.read_status(root, chain, g)
    if status is not None:
        hit = status.loc[status["filename"] == item, "reason"]
        if len(hit) and hit.iloc[0]:
            return hit.iloc[0]
    return f"generation {g} has no output for this item"


def _score_generation(chain, direction, bname, backbone, g, ids, source, outputs, root):
    base = {"chain": chain, "direction": direction, "backbone": bname, "generation": g}
    if isinstance(backbone, str):
        return [{**base, "item_id": i, "similarity": math.nan, "status": "n/a",
                 "reason": backbone} for i in ids]
    ready = [i for i in ids if i in source and i in outputs]
    # a generation the folder does not hold at all (a chain set made elsewhere that ends
    # earlier) was never generated: not a failure of the model
    generated = bool(outputs) or layout.read_status(root, chain, g) is not None
    rows = []
    values = {}
    if ready:
        kind_a, kind_b = direction.split("_")
        try:
            sims = backbone.similarity(kind_a, [source[i] for i in ready], kind_b,
                                       [outputs[i] for i in ready])
            values = dict(zip(ready, sims))
        except Exception as exc:  # noqa: BLE001 - one backbone failing leaves the others
            reason = one_line(exc)
            return [{**base, "item_id": i, "similarity": math.nan, "status": "error",
                     "reason": f"{bname}: {reason}"} for i in ids]
    for i in ids:
        if i in values and not math.isnan(values[i]):
            rows.append({**base, "item_id": i, "similarity": float(values[i]), "status": "ok",
                         "reason": ""})
        elif i in values:
            rows.append({**base, "item_id": i, "similarity": math.nan, "status": "error",
                         "reason": "similarity undefined (empty input text)"})
        else:
            # no output at g: the chain failed (status "failed", which Eq. 1 counts as 0 in the
            # tables); no input for the direction, or a generation the folder does not hold,
            # is not a generation's fault ("error")
            rows.append({**base, "item_id": i, "similarity": math.nan,
                         "status": "failed" if i in source and generated else "error",
                         "reason": _missing_reason(root, chain, g, i, i in source)})
    return rows
