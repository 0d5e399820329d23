"""Latent utility (MediBench pillar 3): classifiers on a model's latents vs image baselines.

Protocol (MediBench Sec. 3.2 Pillar 3, Sec. 4.1 and Appendix A):

- Features: the model's latent (``Adapter.latent_tensor`` of ``encode``), flattened; for a volume
  through a 2D model, the latents of its slices stacked. Baselines: raw pixels (resized to
  ``pixel_size``), ResNet-18 ImageNet features (512-d, 2D) and MONAI SEResNet152 features
  (2048-d, 3D), each followed by the same heads.
- Heads: features standardized on the training part (scikit-learn ``StandardScaler``), then an
  MLP (one hidden layer of 256, ``MLPClassifier``) and a linear classifier (``LogisticRegression``).
- Splits (MediBench Sec. 4.1, Tables 11-12; :func:`~.splits.make_split`): official ``split``
  columns when present (the ``train`` part trains, the ``test`` part is held out, a validation
  part is not used: Table 11's train counts, e.g. PCam 262,144); otherwise one subject-wise
  held-out part (``split: holdout``: ``held_out_subjects`` subjects, e.g. Table 12's "6
  subjects held out", or ``test_fraction`` of the subjects, the 80/20 of Table 11); ``split:
  cv`` runs grouped k-fold
  cross-validation (Table 12: 10-fold CV for the T1w set) and pools the folds' predictions.
  No subject (patient; for the bundled 2D patches, a quadrant of a source image) is in both
  parts. Seeds fixed.
- Metrics (scikit-learn): Accuracy, Macro-F1, Macro-Precision, Macro-Recall, Macro-AUC
  (one-vs-rest); multi-label sets (labels such as ``"0 1 0 1"``) use exact-match accuracy and
  macro averages over labels.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import torch

# labels and splits live in a torch-free module (the tables use them too); re-exported here
from roundtrip.evals.medibench.splits import (  # noqa: F401
    SPLITS,
    encode_labels,
    holdout_split,
    make_folds,
    make_split,
)
from roundtrip.models import Adapter

HEADS = ("mlp", "linear")
METRIC_COLUMNS = ("accuracy", "macro_f1", "macro_precision", "macro_recall", "macro_auc")


class NoLatent(ValueError):
    """The model has no latent tensor to classify (a codec's bitstream); the message is the reason."""


# -- classifiers -------------------------------------------------------------------------------
def _head(kind: str, seed: int, multilabel: bool):
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.neural_network import MLPClassifier

    if kind == "mlp":
        return MLPClassifier((256,), max_iter=500, random_state=seed)
    if kind == "linear":
        lin = LogisticRegression(max_iter=2000)
        return OneVsRestClassifier(lin) if multilabel else lin
    raise ValueError(f"unknown head {kind!r}; use one of {HEADS}")


def _full_proba(model, x: np.ndarray, n_classes: int) -> np.ndarray:
    """Class probabilities ``(N, n_classes)``, zero for classes absent from the training part."""
    p = np.asarray(model.predict_proba(x))
    if p.shape[1] == n_classes or not hasattr(model, "classes_"):
        return p
    out = np.zeros((len(x), n_classes))
    out[:, np.asarray(model.classes_, dtype=int)] = p
    return out


def classification_metrics(y: np.ndarray, proba: np.ndarray, multilabel: bool) -> dict[str, float]:
    """Accuracy, macro F1/precision/recall and macro AUC (one-vs-rest) of pooled predictions.

    Args:
        y: ``(N,)`` class indices or ``(N, L)`` 0/1 (multi-label).
        proba: ``(N, K)`` class (or label) probabilities.

    Returns:
        The :data:`METRIC_COLUMNS`; AUC is NaN when a class has no positive or no negative.
    """
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support, roc_auc_score

    pred = (proba >= 0.5).astype(int) if multilabel else proba.argmax(1)
    labels = None if multilabel else np.arange(proba.shape[1])
    p, r, f, _ = precision_recall_fscore_support(y, pred, labels=labels, average="macro",
                                                 zero_division=0)
    try:
        if multilabel:
            auc = roc_auc_score(y, proba, average="macro")
        elif proba.shape[1] == 2:
            auc = roc_auc_score(y, proba[:, 1])
        else:
            auc = roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=labels)
    except ValueError:
        auc = math.nan
    return {"accuracy": float(accuracy_score(y, pred)), "macro_f1": float(f),
            "macro_precision": float(p), "macro_recall": float(r), "macro_auc": float(auc)}


def evaluate_features(x: np.ndarray, y: np.ndarray, multilabel: bool,
                      folds: list[tuple[np.ndarray, np.ndarray]], head: str = "mlp",
                      seed: int = 0) -> dict[str, float]:
    """Standardize, fit ``head`` on each fold's training part, pool the test predictions.

    Args:
        x: ``(N, F)`` float features. y: labels from :func:`encode_labels`.

    Returns:
        :func:`classification_metrics` plus ``n_train`` (mean per fold), ``n_test`` and ``n_features``.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import StandardScaler

    n_classes = y.shape[1] if multilabel else int(y.max()) + 1
    proba = np.zeros((len(x), n_classes))
    tested = np.zeros(len(x), dtype=bool)
    for train, test in folds:
        scaler = StandardScaler().fit(x[train])
        clf = _head(head, seed, multilabel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(scaler.transform(x[train]), y[train])
        proba[test] = _full_proba(clf, scaler.transform(x[test]), n_classes)
        tested[test] = True
    out = classification_metrics(y[tested], proba[tested], multilabel)
    return out | {"n_train": float(np.mean([len(t) for t, _ in folds])),
                  "n_test": int(tested.sum()), "n_features": int(x.shape[1])}


# -- features ----------------------------------------------------------------------------------
def _latent_tensor(model: Adapter, x: torch.Tensor) -> torch.Tensor:
    lat = model.latent_tensor(model.encode(x.to(model.device)))
    if lat is None:
        raise NoLatent(f"{model.name}: the latent is not a tensor ({model.info().family}); "
                       "no latent classifier")
    return lat.float().cpu()


@torch.no_grad()
def latent_features(model: Adapter, x: torch.Tensor, batch_size: int = 16) -> np.ndarray:
    """Flattened latents ``(N, F)`` float32 of ``x`` ``[N, 3, H, W]`` in ``[-1, 1]``.

    Raises:
        NoLatent: the model's latent is not a tensor.
    """
    out = [_latent_tensor(model, x[i:i + batch_size]).flatten(1) for i in range(0, len(x), batch_size)]
    return torch.cat(out).numpy()


@torch.no_grad()
def volume_latent_features(model: Adapter, volume01: np.ndarray, axis: int = 2,
                           batch_size: int = 16) -> np.ndarray:
    """Flattened latent ``(F,)`` of a ``[0, 1]`` volume: a 3D model's latent of the (padded)
    volume, or a 2D model's slice latents (3-channel slices along ``axis``) stacked."""
    from roundtrip.stages.volumes import _divisible

    k = max(1, int(model.info().downsample))
    if getattr(model, "spatial_dims", 2) == 3:
        x, _ = _divisible(torch.from_numpy(volume01)[None, None] * 2 - 1, k)
        return _latent_tensor(model, x).flatten().numpy()
    slices = torch.from_numpy(np.ascontiguousarray(np.moveaxis(volume01, axis, 0)))[:, None]
    x, _ = _divisible((slices * 2 - 1).expand(-1, 3, -1, -1).contiguous(), k)
    return latent_features(model, x, batch_size).reshape(-1)


def pixel_features(x: torch.Tensor, size: int) -> np.ndarray:
    """Raw pixels resized (area) to ``size`` per spatial side, flattened: ``(N, C * size^d)``."""
    spatial = x.dim() - 2
    y = torch.nn.functional.interpolate(x.float(), size=(size,) * spatial, mode="area")
    return y.flatten(1).numpy()


@torch.no_grad()
def resnet18_features(x: torch.Tensor, weights: str | None = None, batch_size: int = 32,
                      seed: int = 0) -> np.ndarray:
    """ResNet-18 (torchvision) 512-d pooled features of ``[N, 3, H, W]`` in ``[-1, 1]``, with
    ImageNet normalization; ``weights``: a torchvision ``resnet18-*.pth`` file, or ``None`` for a
    seeded random initialization (the table labels that row as such)."""
    from torchvision.models import resnet18

    torch.manual_seed(seed)
    net = resnet18(weights=None)
    if weights:
        net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    net.fc = torch.nn.Identity()
    net.eval()
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    out = [net(((x[i:i + batch_size] + 1) / 2 - mean) / std) for i in range(0, len(x), batch_size)]
    return torch.cat(out).numpy()


@torch.no_grad()
def seresnet_features(volumes: list[np.ndarray], net_name: str = "SEResNet152",
                      weights: str | None = None, size: int | None = None, seed: int = 0
                      ) -> np.ndarray:
    """MONAI SE-ResNet (3D, 1 channel) pooled features ``(N, 2048)`` of ``[0, 1]`` volumes,
    resized to ``size``^3 when given; ``weights``: a state dict file, else a seeded random
    initialization (labeled as such in the table)."""
    import monai.networks.nets as nets

    torch.manual_seed(seed)
    net = getattr(nets, net_name)(spatial_dims=3, in_channels=1, num_classes=2).eval()
    if weights:
        net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True), strict=False)
    feats = []
    for v in volumes:
        x = torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32))[None, None]
        if size:
            x = torch.nn.functional.interpolate(x, size=(size,) * 3, mode="trilinear")
        f = net.adaptive_avg_pool(net.features(x))
        feats.append(f.flatten(1))
    return torch.cat(feats).numpy()


# -- the 2D patch task of the offline showcase -------------------------------------------------
def quadrant_patches(image01: np.ndarray, patch: int) -> tuple[np.ndarray, list[int]]:
    """Cut an ``(S, S, 3)`` image into non-overlapping ``patch`` tiles, each inside one quadrant.

    Returns:
        ``(tiles (T, patch, patch, 3), quadrant index 0..3 of each tile)``; tiles never cross a
        quadrant border, so holding out a quadrant holds out its pixels entirely.

    Raises:
        ValueError: a quadrant is smaller than one patch.
    """
    s = min(image01.shape[:2])
    half = s // 2
    if half < patch:
        raise ValueError(f"a {s}x{s} image has quadrants smaller than the {patch}px patch")
    tiles, quads = [], []
    for q, (r0, c0) in enumerate([(0, 0), (0, half), (half, 0), (half, half)]):
        for r in range(r0, r0 + half - patch + 1, patch):
            for c in range(c0, c0 + half - patch + 1, patch):
                tiles.append(image01[r:r + patch, c:c + patch])
                quads.append(q)
    return np.stack(tiles), quads
