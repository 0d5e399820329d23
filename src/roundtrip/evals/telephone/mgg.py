"""Multi-Generation GenEval (The Telephone Game, Sec. 3.3): a verdict per GenEval prompt at every
image generation of text-first chains over GenEval prompts.

- :class:`OwlDetector`: OWLv2 (``transformers``, local folder; the released code uses
  ``google/owlv2-large-patch14-ensemble``) queried with given texts at a score threshold.
- Headline verdicts: the authors' released rules (:mod:`.mgg_rules`): one query per ``include``
  entry with its colour in the query, every detection scoring >= 0.1 counted, positions in
  pixels. Beside them, named: GenEval's own rules (:func:`roundtrip.metrics.geneval
  .score_prompt`) on class queries with :class:`ClipColour`, when ``telephone.mgg.colour`` is
  configured.
- :func:`score_images`: both verdicts for each (prompt, generation);
- :func:`mgg_scores`: per (model, set, generation) the six task accuracies and the overall
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
from roundtrip.evals.telephone import mgg_rules
from roundtrip.metrics.geneval import COLORS, TASKS, Detection, score_prompt

#: Columns of :func:`score_images`: the released rules' verdict (``correct``, ``reason``,
#: ``detections``) and GenEval's beside it (``..._geneval``).
COLUMNS = ["item_id", "tag", "generation", "correct", "status", "reason", "detections",
           "correct_geneval", "reason_geneval", "detections_geneval"]
#: Columns of :func:`mgg_scores`.
SCORE_COLUMNS = ["model", "dataset", "generation", *TASKS, "overall_prompts", "overall_tasks",
                 "overall_prompts_geneval", "n"]


def mgg_scores(records: pd.DataFrame) -> pd.DataFrame:
    """Multi-Generation GenEval scores (UCF-UM Sec. 3.3, Figs. 8 and 11).

    Headline ``overall_prompts``: the accuracy over all prompts of a generation (GenEval's 553
    prompts weigh 80/99/80/94/100/100 per task), the convention that reproduces Fig. 8's cells
    from Fig. 11's per-task cells and the released code's ``overall``. ``overall_tasks``: the
    unweighted mean of the task accuracies present, the overall Sec. 3.3's text describes
    (GenEval's own overall). The task accuracies and both overalls score ``correct``, the
    released rules' verdict; ``overall_prompts_geneval`` is ``overall_prompts`` of GenEval's
    rules (``correct_geneval``, when the records have it).

    Args:
        records: one row per (prompt, generation); columns ``model``, ``dataset``,
            ``generation`` (int >= 1), ``tag`` (one of :data:`~roundtrip.metrics.geneval.TASKS`),
            ``correct`` (0/1, NaN when not scored), optionally ``correct_geneval`` (0/1/NaN) and
            ``status`` (only ``ok`` rows are scored).

    Returns:
        One row per (model, dataset, generation), generations ascending and written as strings,
        with :data:`SCORE_COLUMNS`: the task accuracies in [0, 1] (NaN for a task without a
        scored prompt), ``overall_prompts``, ``overall_tasks``, ``overall_prompts_geneval``
        (NaN without GenEval verdicts) and ``n`` (prompts scored); then per (model, dataset) a
        row with generation ``MGG`` holding the mean over generations of each column
        (generations without a value left out).

    Raises:
        ValueError: a required column is missing, a tag is not a GenEval task, or ``correct``
            (``correct_geneval``) holds a value other than 0/1/NaN.
    """
    need = {"model", "dataset", "generation", "tag", "correct"}
    if missing := sorted(need - set(records.columns)):
        raise ValueError(f"MGG records lack column(s) {missing}; need {sorted(need)}")
    bad_tags = sorted(set(records["tag"]) - set(TASKS))
    if bad_tags:
        raise ValueError(f"unknown GenEval task(s) {bad_tags}; known: {list(TASKS)}")
    records = records.assign(correct=_verdicts(records, "correct"),
                             correct_geneval=_verdicts(records, "correct_geneval"))
    scored = records.dropna(subset=["correct"])
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


def _verdicts(records: pd.DataFrame, column: str) -> pd.Series:
    """``column`` as floats 0/1/NaN (all NaN when absent)."""
    if column not in records.columns:
        return pd.Series(math.nan, index=records.index)
    values = pd.to_numeric(records[column], errors="coerce")
    if not values.dropna().isin([0, 1]).all():
        raise ValueError(f"MGG records: '{column}' must be 0 or 1 (NaN when not scored)")
    return values


def _generation_scores(model: str, dataset: str, g: int, at: pd.DataFrame) -> dict:
    row = {"model": model, "dataset": dataset, "generation": str(g)}
    for t in TASKS:
        values = at.loc[at["tag"] == t, "correct"]
        row[t] = float(values.mean()) if len(values) else math.nan
    present = [row[t] for t in TASKS if not math.isnan(row[t])]
    row["overall_prompts"] = float(at["correct"].mean())
    row["overall_tasks"] = float(np.mean(present))
    geneval = at["correct_geneval"].dropna()
    row["overall_prompts_geneval"] = float(geneval.mean()) if len(geneval) else math.nan
    row["n"] = int(len(at))
    return row


class OwlDetector:
    """OWLv2 open-vocabulary detection from a local folder.

    Args:
        weights: folder or registry name (``owlv2-large``: ``google/owlv2-large-patch14-ensemble``,
            the released code's detector; ``owlv2-base``).
        threshold: detections scoring at most this are dropped (``transformers``'
            post-processing keeps ``score > threshold``; the released code: 0.1).
        device: torch device.
    """

    def __init__(self, weights: str, threshold: float = mgg_rules.THRESHOLD, device: str = "cpu"):
        import transformers

        folder = model_folder(weights, "telephone.mgg.detector.weights")
        self.model = transformers.Owlv2ForObjectDetection.from_pretrained(
            folder, local_files_only=True).to(device).eval()
        self.processor = transformers.Owlv2Processor.from_pretrained(folder, local_files_only=True)
        self.threshold, self.device = float(threshold), device

    def detect(self, image: np.ndarray, queries: list[str], labels: list[str]) -> list[Detection]:
        """Detections in an ``(H, W, 3)`` uint8 image, one OWLv2 pass over all ``queries``.

        Each predicted box goes to its best-scoring query (OWLv2's post-processing) and is kept
        when that score exceeds the threshold; a detection of query ``i`` is labelled
        ``labels[i]``. Boxes are ``(x0, y0, x1, y1)`` in the image's pixels (OWLv2 pads the image
        to a square; the released code scales boxes by the unpadded height and width instead,
        which only moves its 0.5 px position margin on non-square images).

        Raises:
            ValueError: ``queries`` and ``labels`` of different lengths.
        """
        import torch

        if len(queries) != len(labels):
            raise ValueError(f"{len(queries)} queries but {len(labels)} labels")
        if not queries:
            return []
        inputs = self.processor(text=[queries], images=image, return_tensors="pt"
                                ).to(self.device)
        with torch.no_grad():
            outputs = self.model(**inputs)
        side = max(image.shape[:2])
        post = getattr(self.processor, "post_process_grounded_object_detection", None) or \
            self.processor.post_process_object_detection
        result = post(outputs, threshold=self.threshold,
                      target_sizes=torch.tensor([[side, side]]))[0]
        out = []
        for score, label, box in zip(result["scores"], result["labels"], result["boxes"]):
            idx = int(label)
            if 0 <= idx < len(labels):
                out.append(Detection(labels[idx], float(score),
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
    """The class names a prompt's metadata names (include and exclude), in order, unique: the
    queries of GenEval's rules."""
    names = [r["class"] for r in metadata.get("include", [])]
    names += [r["class"] for r in metadata.get("exclude", [])]
    return list(dict.fromkeys(names))


def score_images(root: str | Path, metadata: dict[str, dict], generations: int,
                 detector: OwlDetector | str, colour: ClipColour | None | str) -> pd.DataFrame:
    """MGG verdicts for every image generation of the text-first chain in ``root``.

    Args:
        root: chain folder (released layout); images at odd generations.
        metadata: item id -> the prompt's GenEval metadata (``tag``, ``include``, ``exclude``).
        generations: ``G``.
        detector: the detector, or the reason it could not be loaded (rows ``n/a``).
        colour: GenEval's colour classifier, None (GenEval's rules are not run), or the reason
            it could not be loaded.

    Returns:
        Frame with :data:`COLUMNS`: ``correct`` 1/0 by the released rules (NaN when not scored),
        ``correct_geneval`` 1/0 by GenEval's (NaN when not run, ``reason_geneval`` says why),
        ``detections`` / ``detections_geneval`` as JSON ``[label, score, box, colour]`` lists.
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
                   "correct": math.nan, "status": "ok", "reason": "", "detections": "[]",
                   "correct_geneval": math.nan, "reason_geneval": "",
                   "detections_geneval": "[]"}
            path = layout.find_image(root, layout.TEXT_FIRST, g, item)
            if isinstance(detector, str):
                row.update(status="n/a", reason=detector)
            elif path is None:
                row.update(status="error", reason=reasons.get(item) or f"no image at generation {g}")
            else:
                try:
                    image = to_uint8(read_image(path))
                    row.update(_released_verdict(image, meta, detector))
                    row.update(_geneval_verdict(image, meta, detector, colour))
                except Exception as exc:  # noqa: BLE001 - recorded per item
                    row.update(status="error", reason=one_line(exc))
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _detections_json(found: list[Detection]) -> str:
    return json.dumps([[d.label, round(d.score, 4), [round(v, 1) for v in d.box], d.color]
                       for d in found])


def _released_verdict(image: np.ndarray, meta: dict, detector: OwlDetector) -> dict:
    """The headline: the released rules on one pass over the include entries' queries."""
    found = detector.detect(image, mgg_rules.queries_of(meta), mgg_rules.query_classes(meta))
    correct, reason = mgg_rules.verdict(meta, found, detector.threshold)
    return {"correct": float(correct), "reason": reason, "detections": _detections_json(found)}


#: Why GenEval's rules were not run when no colour classifier is configured.
NO_COLOUR = ("not run: GenEval's rules need its CLIP colour check (set telephone.mgg.colour, "
             "e.g. {weights: clip-vit-l14})")


def _geneval_verdict(image: np.ndarray, meta: dict, detector: OwlDetector, colour) -> dict:
    """GenEval's rules beside the headline: class queries, CLIP colour on box crops."""
    if not isinstance(colour, ClipColour):
        return {"reason_geneval": colour if isinstance(colour, str) else NO_COLOUR}
    classes = classes_of(meta)
    found = detector.detect(image, [mgg_rules.QUERY.format(c) for c in classes], classes)
    if any("color" in r for r in meta.get("include", [])):
        found = [Detection(d.label, d.score, d.box, colour.colour(image, d.box, d.label))
                 for d in found]
    correct, reason = score_prompt(meta, found)
    return {"correct_geneval": float(correct), "reason_geneval": reason,
            "detections_geneval": _detections_json(found)}
