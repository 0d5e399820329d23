"""Detail statistics of a dataset's originals (VTBench Appendix D, Table 4).

Definitions in :mod:`roundtrip.metrics.detail`; this module reads a dataset and writes one row per
item.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import ImageReadError, read_image
from roundtrip.core.manifest import read_manifest
from roundtrip.metrics.detail import detail_stats

DETAIL_COLUMNS = ["item_id", "status", "reason", "hf_energy_pct", "laplacian_var",
                  "edge_density_pct"]


def score_detail(manifest_path) -> pd.DataFrame:
    """Detail statistics of every item of a dataset's originals (one image in memory at a time).

    Returns:
        DataFrame with :data:`DETAIL_COLUMNS`; unreadable items carry status and reason.
    """
    manifest = read_manifest(manifest_path)
    root, rows = Path(manifest_path).parent, []
    for item in manifest.itertuples():
        row = dict.fromkeys(DETAIL_COLUMNS, np.nan) | {"item_id": item.item_id}
        if item.status != "ok":
            row.update(status=item.status, reason=f"dataset: {item.reason}")
        else:
            try:
                s = detail_stats(read_image(root / item.path))
                row.update(status="ok", reason="", hf_energy_pct=s.hf_energy_pct,
                           laplacian_var=s.laplacian_var, edge_density_pct=s.edge_density_pct)
            except (ImageReadError, ValueError) as exc:
                row.update(status="error", reason=str(exc))
        rows.append(row)
    return pd.DataFrame(rows, columns=DETAIL_COLUMNS)
