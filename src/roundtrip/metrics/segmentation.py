"""Agreement of two label maps (MediBench pillar 2, clinical structure).

- **SegSim** (MediBench Eq. 4): the fraction of voxels whose label agrees,
  ``(1/N) sum_i 1(S(x)_i = S(x_hat)_i)``, over all N voxels, in ``[0, 1]``.
- **Dice** per label and **HD95** (95th-percentile Hausdorff distance, mm with the voxel
  spacing), MONAI ``DiceMetric``/``HausdorffDistanceMetric`` on one-hot maps after remapping the
  labels present to contiguous values (SynthSeg's FreeSurfer ids are not contiguous). Background
  is excluded. A label absent from both maps has no Dice.
"""
from __future__ import annotations

import numpy as np


def segsim(a: np.ndarray, b: np.ndarray) -> float:
    """SegSim (MediBench Eq. 4): fraction of voxels with equal labels, in ``[0, 1]``.

    Raises:
        ValueError: shapes differ.
    """
    if a.shape != b.shape:
        raise ValueError(f"label maps differ in shape: {a.shape} vs {b.shape}")
    return float(np.mean(a == b))


def structure_metrics(a: np.ndarray, b: np.ndarray,
                      spacing: tuple[float, ...] = (1.0, 1.0, 1.0)) -> dict[str, float]:
    """SegSim, per-label Dice, mean Dice and mean HD95 of label maps ``a`` (original) and ``b``.

    Args:
        a, b: integer label maps of one shape (0 = background).
        spacing: voxel size in mm (HD95 in mm).

    Returns:
        ``{"segsim", "dice_mean", "hd95_mean", "dice_<label>"...}``; Dice of a label absent from
        both maps and HD95 of a label absent from either are left out of the means.
    """
    import torch
    from monai.metrics import DiceMetric, HausdorffDistanceMetric

    out = {"segsim": segsim(a, b)}
    labels = np.union1d(np.unique(a), np.unique(b))
    labels = labels[labels != 0]
    if labels.size == 0:
        return out | {"dice_mean": float("nan"), "hd95_mean": float("nan")}
    lut = {int(v): i + 1 for i, v in enumerate(labels)}  # contiguous 1..K, 0 stays background

    def one_hot(x):
        idx = np.zeros(x.shape, dtype=np.int64)
        for v, i in lut.items():
            idx[x == v] = i
        t = torch.nn.functional.one_hot(torch.from_numpy(idx), len(lut) + 1)
        return torch.movedim(t, -1, 0)[None].float()  # [1, K+1, *spatial]

    pa, pb = one_hot(a), one_hot(b)
    dice = DiceMetric(include_background=False, reduction="none", ignore_empty=True)(pb, pa)[0]
    present = [(v, bool((a == v).any()), bool((b == v).any())) for v in lut]
    hd_rows = []
    if any(x and y for _, x, y in present):
        hd = HausdorffDistanceMetric(include_background=False, percentile=95, reduction="none")
        hd_rows = hd(pb, pa, spacing=list(spacing))[0].tolist()
    hd_vals = []
    for k, (v, in_a, in_b) in enumerate(present):
        d = float(dice[k])
        if not in_a and not in_b:
            d = float("nan")
        elif not (in_a and in_b):
            d = 0.0
        out[f"dice_{v}"] = d
        if in_a and in_b and hd_rows and np.isfinite(hd_rows[k]):
            hd_vals.append(float(hd_rows[k]))
    dices = [out[f"dice_{v}"] for v in lut if not np.isnan(out[f"dice_{v}"])]
    out["dice_mean"] = float(np.mean(dices)) if dices else float("nan")
    out["hd95_mean"] = float(np.mean(hd_vals)) if hd_vals else float("nan")
    return out
