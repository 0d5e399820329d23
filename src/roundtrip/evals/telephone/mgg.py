"""Multi-Generation GenEval (The Telephone Game, Sec. 3.3): GenEval's verdicts on every image
generation of text-first chains over GenEval prompts.

- :class:`OwlDetector`: OWLv2 (``transformers``, local folder; the paper's detector in place of
  GenEval's Mask2Former), queried with ``a photo of a <class>`` for each class the prompt names,
  at a configurable score threshold.
- :class:`ClipColour`: the colour of each detected object by CLIP zero-shot classification of its
  box crop over GenEval's ten colours (GenEval classifies masked crops; boxes are what OWLv2
  gives).
- :func:`score_images`: detections, colours and :func:`roundtrip.metrics.geneval.score_prompt`
  for each (prompt, generation);
- :func:`mgg_scores`: per (model, set, generation) the six task accuracies and both overall
  scores, and the MGG row (the mean over generations).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import one_line, read_image, to_uint8
from roundtrip.core.weights import model_folder
from roundtrip.datasets import chain_layout as layout
from roundtrip.metrics.geneval import COLORS, TASKS, Detection, score_prompt

COLUMNS = ["item_id", "tag", "generation", "correct", "status", "reason", "detections"]
#: Columns of :func:`mgg_scores`.
SCORE_COLUMNS = ["model", "dataset", "generation", *TASKS, "overall_prompts", "overall_tasks",
                 "n"]


def mgg_scores(records: pd.DataFrame) -> pd.DataFrame:
    """Multi-Generation GenEval scores (UCF-UM Sec. 3.3, Figs. 8 and 11).

    Headline ``overall_prompts``: the accuracy over all prompts of a generation (GenEval's 553
    prompts weigh 80/99/80/94/100/100 per task), the convention that reproduces Fig. 8's cells
    from Fig. 11's per-task cells. ``overall_tasks``: the unweighted mean of the task accuracies
    present, the overall Sec. 3.3's text describes (GenEval's own overall).

    Args:
        records: one row per (prompt, generation); columns ``model``, ``dataset``,
            ``generation`` (int >= 1), ``tag`` (one of :data:`~roundtrip.metrics.geneval.TASKS`),
            ``correct`` (0/1, NaN when not scored) and optionally ``status`` (only ``ok`` rows are
            scored).

    Returns:
        One row per (model, dataset, generation), generations ascending and written as strings,
        with :data:`SCORE_COLUMNS`: the task accuracies in [0, 1] (NaN for a task without a
        scored prompt), ``overall_prompts``, ``overall_tasks`` and ``n`` (prompts scored); then
        per (model, dataset) a row with generation ``MGG`` holding the mean over generations of
        each column (generations without a value left out).

    Raises:
        ValueError: a required column is missing, a tag is not a GenEval task, or ``correct``
            holds a value other than 0/1/NaN.
    """
    need = {"model", "dataset", "generation", "tag", "correct"}
    if missing := sorted(need - set(records.columns)):
        raise ValueError(f"MGG records lack column(s) {missing}; need {sorted(need)}")
    bad_tags = sorted(set(records["tag"]) - set(TASKS))
    if bad_tags:
        raise ValueError(f"unknown GenEval task(s) {bad_tags}; known: {list(TASKS)}")
    correct = pd.to_numeric(records["correct"], errors="coerce")
    if not correct.dropna().isin([0, 1]).all():
        raise ValueError("MGG records: 'correct' must be 0 or 1 (NaN when not scored)")
    scored = records.assign(correct=correct).dropna(subset=["correct"])
    if "status" in scored.columns:
        scored = scored[scored["status"] == "ok"]
    rows = []
    for (model, dataset), grp in scored.groupby(["model", "dataset"], sort=False):
        per_gen = [_generation_scores(model, dataset, int(g), at)
                   for g, at in sorted(grp.groupby(grp["generation"].astype(int)))]
        rows += per_gen
        mean = pd.DataFrame(per_gen)[SCORE_COLUMNS[3:]].mean(skipna=True)
        rows.append({"model": model, "dataset": dataset, "generation": "MGG", **mean.to_dict()})
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


def _generation_scores(model: str, dataset: str, g: int, at: pd.DataFrame) -> dict:
    row = {"model": model, "dataset": dataset, "generation": str(g)}
    for t in TASKS:
        values = at.loc[at["tag"] == t, "correct"]
        row[t] = float(values.mean()) if len(values) else math.nan
    present = [row[t] for t in TASKS if not math.isnan(row[t])]
    row["overall_prompts"] = float(at["correct"].mean())
    row["overall_tasks"] = float(np.mean(present))
    row["n"] = int(len(at))
    return row


class OwlDetector:
    """OWLv2 open-vocabulary detection from a local folder.

    Args:
        weights: folder (``google/owlv2-base-patch16-ensemble`` or the large model).
        threshold: minimum score in [0, 1] (the released MGG code uses 0.1).
        device: torch device.
    """

    def __init__(self, weights: str, threshold: float = 0.1, device: str = "cpu"):
        import transformers

        folder = model_folder(weights, "telephone.mgg.detector.weights")
        self.model = transformers.Owlv2ForObjectDetection.from_pretrained(
            folder, local_files_only=True).to(device).eval()
        self.processor = transformers.Owlv2Processor.from_pretrained(folder, local_files_only=True)
        self.threshold, self.device = float(threshold), device

    def detect(self, image: np.ndarray, classes: list[str]) -> list[Detection]:
        """Detections of ``classes`` in an ``(H, W, 3)`` uint8 image, boxes in pixels."""
        import torch

        if not classes:
            return []
        inputs = self.processor(text=[[f"a photo of a {c}" for c in classes]], images=image,
                                return_tensors="pt").to(self.device)
        with torch.no_grad():
            outputs = self.model(**inputs)
        # OWLv2 pads images to a square: boxes are relative to the padded side.
        side = max(image.shape[:2])
        post = getattr(self.processor, "post_process_grounded_object_detection", None) or \
            self.processor.post_process_object_detection
        result = post(outputs, threshold=self.threshold,
                      target_sizes=torch.tensor([[side, side]]))[0]
        out = []
        for score, label, box in zip(result["scores"], result["labels"], result["boxes"]):
            idx = int(label)
            if 0 <= idx < len(classes):
                out.append(Detection(classes[idx], float(score),
                                     tuple(float(v) for v in box.tolist())))
        return out


class ClipColour:
    """GenEval's colour check: CLIP zero-shot over ``a photo of a <colour> <class>`` on the crop.

    Args:
        weights: CLIP folder (``openai/clip-vit-large-patch14`` in GenEval).
        device: torch device.
    """

    def __init__(self, weights: str, device: str = "cpu"):
        import transformers

        folder = model_folder(weights, "telephone.mgg.colour.weights")
        self.model = transformers.CLIPModel.from_pretrained(folder, local_files_only=True
                                                            ).to(device).eval()
        self.processor = transformers.CLIPProcessor.from_pretrained(folder, local_files_only=True)
        self.device = device

    def colour(self, image: np.ndarray, box: tuple, label: str) -> str:
        """The most likely of :data:`~roundtrip.metrics.geneval.COLORS` for the box crop."""
        import torch

        h, w = image.shape[:2]
        # at least one pixel inside the image, however degenerate the box
        x0, y0 = min(w - 1, max(0, int(box[0]))), min(h - 1, max(0, int(box[1])))
        x1 = min(w, max(x0 + 1, int(math.ceil(box[2]))))
        y1 = min(h, max(y0 + 1, int(math.ceil(box[3]))))
        crop = np.ascontiguousarray(image[y0:y1, x0:x1])
        inputs = self.processor(text=[f"a photo of a {c} {label}" for c in COLORS], images=crop,
                                return_tensors="pt", padding=True).to(self.device)
        with torch.no_grad():
            logits = self.model(**inputs).logits_per_image[0]
        return COLORS[int(torch.argmax(logits))]


def classes_of(metadata: dict) -> list[str]:
    """The class names a prompt's metadata names (include and exclude), in order, unique."""
    names = [r["class"] for r in metadata.get("include", [])]
    names += [r["class"] for r in metadata.get("exclude", [])]
    return list(dict.fromkeys(names))


def score_images(root: str | Path, metadata: dict[str, dict], generations: int,
                 detector: OwlDetector | str, colour: ClipColour | None | str) -> pd.DataFrame:
    """GenEval verdicts for every image generation of the text-first chain in ``root``.

    Args:
        root: chain folder (released layout); images at odd generations.
        metadata: item id -> the prompt's GenEval metadata (``tag``, ``include``, ``exclude``).
        generations: ``G``.
        detector: the detector, or the reason it could not be loaded (rows ``n/a``).
        colour: the colour classifier (needed by prompts with a ``color``), None, or a reason.

    Returns:
        Frame with :data:`COLUMNS`: ``correct`` 1/0 (NaN when not scored), ``detections`` JSON.
    """
    root = Path(root)
    rows = []
    gens = [g for g in range(1, generations + 1)
            if layout.modality_at(layout.TEXT_FIRST, g) == "image"]
    for g in gens:
        status = layout.read_status(root, layout.TEXT_FIRST, g)
        reasons = {} if status is None else dict(zip(status["filename"], status["reason"]))
        for item, meta in metadata.items():
            row = {"item_id": item, "tag": meta.get("tag", ""), "generation": g,
                   "correct": math.nan, "status": "ok", "reason": "", "detections": "[]"}
            path = layout.find_image(root, layout.TEXT_FIRST, g, item)
            if isinstance(detector, str):
                row.update(status="n/a", reason=detector)
            elif path is None:
                row.update(status="error", reason=reasons.get(item) or f"no image at generation {g}")
            else:
                try:
                    row.update(_verdict(to_uint8(read_image(path)), meta, detector, colour))
                except Exception as exc:  # noqa: BLE001 - recorded per item
                    row.update(status="error", reason=one_line(exc))
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _verdict(image: np.ndarray, meta: dict, detector: OwlDetector, colour) -> dict:
    found = detector.detect(image, classes_of(meta))
    wants_colour = any("color" in r for r in meta.get("include", []))
    if wants_colour:
        if not isinstance(colour, ClipColour):
            reason = colour if isinstance(colour, str) else "no colour classifier configured " \
                "(telephone.mgg.colour)"
            return {"status": "n/a", "reason": reason}
        found = [Detection(d.label, d.score, d.box, colour.colour(image, d.box, d.label))
                 for d in found]
    correct, reason = score_prompt(meta, found)
    return {"correct": float(correct), "reason": reason,
            "detections": json.dumps([[d.label, round(d.score, 4), [round(v, 1) for v in d.box],
                                       d.color] for d in found])}
