"""MediBench pillar 3, latent utility: classifiers on a model's latents against image baselines.

:func:`latent_utility` writes the rows of one (model, dataset): an MLP and a linear head on the
model's standardized latents, or (model ``original``) on the image baselines (raw pixels,
ResNet-18 features in 2D, MONAI SEResNet features in 3D). Samples, folds, features and
classifiers are in :mod:`.latent_features`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.manifest import read_manifest
from roundtrip.core.scoring import ReconScorer
from roundtrip.datasets.medical import read_volume
from roundtrip.evals.medibench import latent_features as lu
from roundtrip.evals.medibench.splits import labeled_rows, subject_of
from roundtrip.models import Adapter


def samples_2d(manifest_path: str | Path, size: int = 256, patch: int | None = None):
    """Classification samples of a 2D medical set, MediBench preprocessing (center square,
    ``size`` x ``size``, 3 channels).

    With ``patch``, each image is cut into quadrant tiles
    (:func:`~.latent_features.quadrant_patches`) that inherit its label; folds hold out one
    quadrant of every image.

    Returns:
        ``(x [N, 3, S, S] float32 in [-1, 1], labels, groups, splits or None, fold_ids or None,
        skipped)``; items without a label or not ok are skipped (counted in ``skipped``).
    """
    import torch

    from roundtrip.core.imaging import read_image, to_unit
    from roundtrip.core.protocols import center_square, resize

    manifest_path = Path(manifest_path)
    m = read_manifest(manifest_path)
    labeled = labeled_rows(m)
    xs, labels, groups, splits, folds = [], [], [], [], []
    for _, row in labeled.iterrows():
        img = resize(center_square(to_unit(read_image(manifest_path.parent / row["path"]))),
                     (size, size))
        tiles, quads = (lu.quadrant_patches(img, patch) if patch else (img[None], [0]))
        xs.append(tiles)
        labels += [row["label"]] * len(tiles)
        groups += [f"{subject_of(row)}/q{q}" if patch else subject_of(row) for q in quads]
        splits += [str(row.get("split", ""))] * len(tiles)
        folds += quads
    if not xs:
        raise ValueError("no labeled items to classify")
    x = torch.from_numpy(np.concatenate(xs)).permute(0, 3, 1, 2).contiguous() * 2 - 1
    return (x, labels, groups, splits if any(splits) and not patch else None,
            folds if patch else None, len(m) - len(labeled))


def samples_3d(manifest_path: str | Path):
    """``(volumes [0, 1], labels, groups, splits or None, skipped)`` of a labeled volume set."""
    manifest_path = Path(manifest_path)
    m = read_manifest(manifest_path)
    labeled = labeled_rows(m)
    if labeled.empty:
        raise ValueError("no labeled volumes to classify")
    vols = [read_volume(manifest_path.parent / p) for p in labeled["path"]]
    splits = [str(s) for s in labeled.get("split", [""] * len(labeled))]
    groups = [subject_of(row) for _, row in labeled.iterrows()]
    skipped = len(m) - len(labeled)
    return vols, list(labeled["label"]), groups, (splits if any(splits) else None), skipped


def _rows_for(features: str, x: np.ndarray | None, reason: str, y, multilabel, folds, seed,
              note: str = "") -> list[dict]:
    rows = []
    for head in lu.HEADS:
        row = {"features": features, "head": head, "status": "ok", "reason": note}
        if x is None:
            row.update(status="unavailable", reason=reason)
        else:
            try:
                row |= lu.evaluate_features(x, y, multilabel, folds, head, seed)
            except Exception as exc:  # noqa: BLE001 - one classifier's failure is its row
                row.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    return rows


def latent_utility(manifest_path: str | Path, kind: str, settings: dict,
                   model: Adapter | None = None, baselines: dict | None = None) -> pd.DataFrame:
    """Classifier rows for a model's latents (``model``) or for the image baselines (``model``
    None, ``baselines`` = ``{"resnet18_weights": path or None, "seresnet_weights": ...}``).

    Args:
        kind: ``image`` or ``volume`` (the dataset's manifest kind).
        settings: ``size``, ``patch``, ``split`` (holdout or cv), ``test_fraction``,
            ``held_out_subjects``, ``folds``, ``seed``, ``pixel_size``, ``axis``, ``cnn_3d``
            (MONAI network name), ``cnn_3d_size``.

    Returns:
        Rows ``features, head, status, reason, accuracy, macro_f1, macro_precision,
        macro_recall, macro_auc, n_train, n_test, n_features, split`` (``split`` names the
        train/test split, :func:`~.splits.make_split`).
    """
    seed = int(settings.get("seed", 0))
    if kind == "volume":
        vols, labels, groups, splits, skipped = samples_3d(manifest_path)
        fold_ids = None
    else:
        x_img, labels, groups, splits, fold_ids, skipped = samples_2d(
            manifest_path, settings.get("size", 256), settings.get("patch"))
    y, _, multilabel = lu.encode_labels(labels)
    folds, split = lu.make_split(y, groups, splits, settings, fold_ids)
    note = f"{skipped} unlabeled or failed items not classified" if skipped else ""
    data = vols if kind == "volume" else x_img
    rows = _classify(kind, settings, model, baselines, data, y, multilabel, folds, seed, note)
    return pd.DataFrame(rows).assign(split=split)


def _classify(kind, settings, model, baselines, data, y, multilabel, folds,
              seed, note) -> list[dict]:
    """Classifier rows of the model's latents (``model``) or of the image baselines."""
    vols = x_img = data
    if model is not None:
        try:
            if kind == "volume":
                feats = [lu.volume_latent_features(model, v, settings.get("axis", 2)) for v in vols]
                if len({f.size for f in feats}) > 1:
                    raise ValueError("latents differ in size across volumes (volumes of different "
                                     "shapes); resample the set to one shape")
                x = np.stack(feats)
            else:
                x = lu.latent_features(model, x_img)
        except lu.NoLatent as exc:
            return _rows_for("latent", None, str(exc), y, multilabel, folds, seed)
        return _rows_for("latent", x, "", y, multilabel, folds, seed, note)
    baselines = baselines or {}
    pixel_size = int(settings.get("pixel_size", 32))
    rows = []
    if kind == "volume":
        import torch

        # each volume resized on its own: the sizes of a set may differ
        pix = np.concatenate([lu.pixel_features(torch.from_numpy(v)[None, None], pixel_size)
                              for v in vols])
        rows += _rows_for("pixels", pix, "", y, multilabel, folds, seed, note)
        net = settings.get("cnn_3d", "SEResNet152")
        w = baselines.get("seresnet_weights")
        feats = lu.seresnet_features(vols, net, w, settings.get("cnn_3d_size"), seed)
        rows += _rows_for(f"{net} ({'pretrained' if w else 'random init'})", feats, "", y,
                          multilabel, folds, seed, note)
    else:
        rows += _rows_for("pixels", lu.pixel_features(x_img, pixel_size), "", y, multilabel,
                          folds, seed, note)
        w = baselines.get("resnet18_weights")
        rows += _rows_for("ResNet-18 (ImageNet)", lu.resnet18_features(x_img, w) if w else None,
                          baselines.get("resnet18_missing", "ImageNet weights missing"), y,
                          multilabel, folds, seed, note)
        rows += _rows_for("ResNet-18 (random init)", lu.resnet18_features(x_img, None, seed=seed),
                          "", y, multilabel, folds, seed, note)
    return rows


class LatentUtilityScorer(ReconScorer):
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): ``latent_utility``, the
    classifier rows of the job's model (:func:`latent_utility`) on a labeled 2D medical set. It
    encodes the originals, not the reconstructions, so it keeps no record per item and works at
    :meth:`finish`, with the job's model.

    Options: ``kind`` (``image``), ``settings`` (``medical.latent_utility`` with the set's
    ``patch`` and ``axis``).
    """

    def record_options(self, options: dict) -> dict:
        return {}  # no record depends on them: its work is all in finish

    def score(self, items: list) -> list:
        return [None] * len(items)

    def finish(self, items: list, records: list) -> dict[str, pd.DataFrame]:
        rows = latent_utility(self.ctx.manifest, self.options["kind"],
                              dict(self.options["settings"]), self.ctx.load_model())
        return {"latent_utility": rows}
