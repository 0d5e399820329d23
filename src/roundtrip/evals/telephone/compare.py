"""The Telephone Game's per-item rows for the paired comparison of two model pairs
(:mod:`roundtrip.tables.compare`)."""
from __future__ import annotations

import pandas as pd

from roundtrip.evals.telephone.findings import item_mcd


def mcd_rows(similarity: pd.DataFrame) -> pd.DataFrame:
    """Each item's MCD over every measured experiment (Sec. 3.1, Eq. 2: per experiment the mean
    of S(g) over generations, a failed generation counting 0, then the mean over experiments;
    :func:`~roundtrip.evals.telephone.findings.item_mcd`) as rows ``item_id, status, reason,
    mcd``; an item with no value has status ``n/a``."""
    values = item_mcd(similarity)
    items = list(dict.fromkeys(similarity["item_id"].astype(str)))
    mcd = [float(values.get(i, float("nan"))) for i in items]
    return pd.DataFrame({"item_id": items,
                         "status": ["ok" if v == v else "n/a" for v in mcd],
                         "reason": ["" if v == v else "no similarity at any generation"
                                    for v in mcd],
                         "mcd": mcd})
