"""Columns of the token-space table (CHD paper, Sec. 4), for
:func:`roundtrip.tables.build_table`."""
from __future__ import annotations

from roundtrip.tables import Column, metric_column


def token_columns(datasets: list[str]) -> list[Column]:
    """CHD, CHD-1D, CHD-2D (set level, ``token_set.csv``) and CMMS of reconstructions and of
    their references (per item, ``tokens.csv``) for each dataset."""
    cols = []
    for d in datasets:
        cols += [metric_column(d, "chd", source="set", file="token_set", show_n=True),
                 metric_column(d, "chd_1d", source="set", file="token_set"),
                 metric_column(d, "chd_2d", source="set", file="token_set"),
                 metric_column(d, "cmms", file="tokens"),
                 metric_column(d, "cmms_reference", file="tokens")]
    return cols
