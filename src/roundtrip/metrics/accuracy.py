"""Accuracy and the modality gap of VISTA-Bench (Sec. 4, Table 1; App. D.1).

Accuracy is the share of correct answers in percent; an invalid answer counts as wrong.
VISTA-Bench's Gap (Table 1's "Gap", App. D.1, Figs. 8 and 11) is the drop from pure text to
visualized text, ``Acc_Text - Acc_VT`` in percentage points: positive when the rendered
question is answered worse. :func:`paired_gaps` returns the signed per-question difference the
other way round, ``d_q = mean over the renders of q of hit_VT - hit_Text``; the tables negate
it to the paper's sign. Averaged over questions it equals ``Acc_VT - Acc_Text`` whenever every
question has the same number of renders, and gives a bootstrap CI over questions for free.
"""
from __future__ import annotations

import numpy as np


def accuracy_values(hits) -> np.ndarray:
    """Per-answer values in percent: 100 for a hit, 0 for a miss, NaN for "not scored".

    Args:
        hits: 1-D array-like of 1/0/NaN (float) or bools.
    """
    return np.asarray(hits, dtype=np.float64) * 100.0


def paired_gaps(vt: dict[str, list[float]], text: dict[str, float]) -> np.ndarray:
    """Per-question modality gaps ``d_q`` in percentage points (module docstring).

    Args:
        vt: question id -> the VT hits (1/0; NaN = not scored) of its renders.
        text: question id -> the text-mode hit (1/0; NaN = not scored).

    Returns:
        float64 array, one value per question present in both with a scored text answer and
        at least one scored render; NaN-free.
    """
    out = []
    for q, hits in vt.items():
        t = text.get(q, np.nan)
        v = np.asarray(hits, dtype=np.float64)
        v = v[~np.isnan(v)]
        if np.isnan(t) or not len(v):
            continue
        out.append(100.0 * (v.mean() - t))
    return np.asarray(out, dtype=np.float64)
