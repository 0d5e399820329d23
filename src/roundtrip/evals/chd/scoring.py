"""Token-space scoring of a (model, dataset): CHD between references and reconstructions, CMMS per item.

Both sets are brought to the reference tokenizer's input size (``metrics.tokens.size``: the
shorter side resized, then the centre square, :func:`~.cmms.resize_center_crop`) and
tokenized by the same reference tokenizer, one pair at a time as they are
reconstructed; only the token grids are kept (1 KiB per image at 16 x 16) and counted at the end.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import ImageReadError
from roundtrip.core.recon_items import ReconItem, iter_recon_items
from roundtrip.core.scoring import ReconScorer, item_row
from roundtrip.evals.chd.cmms import CMMS, resize_center_crop, tokenize
from roundtrip.metrics.tokens import CHD_2D_SEQUENCE_REASON, TokenHistogram, chd
from roundtrip.models import Adapter

TOKEN_COLUMNS = ["item_id", "status", "reason", "cmms", "cmms_reference"]
SET_COLUMNS = ["metric", "value", "n", "note"]


class TokenScorer(ReconScorer):
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): ``tokens`` (per-item CMMS of
    the reconstruction and of its reference) and ``token_set`` (CHD, CHD-1D, CHD-2D) in the
    tokens of the reference tokenizer, on ``ctx.device``.

    Options: ``reference`` (model name), ``spec`` (its config entry, checkpoint filled in),
    ``size`` (side of the centre square tokenized), ``cmms`` (the regressor's checkpoint), optional
    ``layout`` (a 1D tokenizer's declared grid, ``metrics.tokens.layout``).

    Records: ``(real grid, fake grid, cmms_reference, cmms)`` (int32 grids) of a reconstructed
    item, the reason it could not be scored, or None.
    """

    def __init__(self, ctx, options: dict):
        super().__init__(ctx, options)
        self._tokenizer = self._cmms = None

    def _networks(self):
        from roundtrip.models import build_model

        if self._tokenizer is None:
            o = self.options
            self._tokenizer = build_model(o["reference"], o["spec"]).to(self.ctx.device)
            self._cmms = CMMS(o["cmms"], self.ctx.device) if o.get("cmms") else None
        return self._tokenizer, self._cmms

    def complete(self, record) -> bool:
        return not isinstance(record, str)  # a pair that failed to tokenize is tried again

    def score(self, items: list[ReconItem]) -> list:
        if not any(item.status == "ok" for item in items):
            return [None] * len(items)
        tokenizer, cmms = self._networks()
        size, layout = self.options["size"], self.options.get("layout")
        return [token_record(item, tokenizer, cmms, size, layout) if item.status == "ok"
                else None for item in items]

    def finish(self, items: list[ReconItem], records: list) -> dict[str, pd.DataFrame]:
        from roundtrip.models import build_model

        o = self.options
        tokenizer = self._tokenizer or build_model(o["reference"], o["spec"])
        vocab = tokenizer.info().codebook_size
        per_item, set_rows = token_rows(items, records, vocab)
        return {"tokens": per_item, "token_set": set_rows}


def token_record(item: ReconItem, tokenizer: Adapter, cmms: CMMS | None, size: int,
                 layout: tuple[int, int] | list[int] | None = None):
    """``(real grid, fake grid, cmms_reference, cmms)`` of one reconstructed item: reference
    and reconstruction brought to ``size`` x ``size`` (:func:`~.cmms.resize_center_crop`),
    tokenized together, CMMS of both
    (NaN without a regressor); or the reason it failed."""
    try:
        images = np.stack([resize_center_crop(item.read_reference(), size),
                           resize_center_crop(item.read_reconstruction(), size)])
        grids = tokenize(tokenizer, images, layout=layout)
        scores = tuple(map(float, cmms(grids))) if cmms is not None else (math.nan, math.nan)
    except (ImageReadError, ValueError, RuntimeError) as exc:
        return f"tokens: {exc}"
    return grids[0].astype(np.int32), grids[1].astype(np.int32), scores[0], scores[1]


def token_rows(items: list[ReconItem], records: list, vocab: int
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-item CMMS (reconstruction and reference) and set-level CHD, CHD-1D, CHD-2D of
    :func:`token_record` records, in item order.

    Args:
        vocab: the reference tokenizer's codebook size.

    Returns:
        ``(per_item with TOKEN_COLUMNS, set rows metric/value/n/note)``; ``note`` says why a
        value is NaN. A 1D tokenizer's sequences without ``layout`` get CHD-1D only, CHD-2D and
        CHD n/a with the reason (Sec. 4.1, Eq. 10).
    """
    real, fake = TokenHistogram(vocab), TokenHistogram(vocab)
    rows = []
    for item, record in zip(items, records):
        row = item_row(item, record, TOKEN_COLUMNS)
        if record is not None and not isinstance(record, str):
            real.add(record[0].astype(np.int64))
            fake.add(record[1].astype(np.int64))
            row["cmms_reference"], row["cmms"] = record[2], record[3]
        rows.append(row)
    n = min(real.n_grids, fake.n_grids)
    values = chd(real, fake) if n else {"chd": math.nan, "chd_1d": math.nan, "chd_2d": math.nan}
    sequences = bool(real.n_sequences or fake.n_sequences)

    def note(metric: str) -> str:
        if not n:
            return "no item reconstructed"
        return CHD_2D_SEQUENCE_REASON if sequences and metric != "chd_1d" else ""
    set_rows = pd.DataFrame([{"metric": k, "value": v, "n": n, "note": note(k)}
                             for k, v in values.items()], columns=SET_COLUMNS)
    return pd.DataFrame(rows, columns=TOKEN_COLUMNS), set_rows


def score_tokens(manifest_path: str | Path, status_path: str | Path, recon_dir: str | Path,
                 tokenizer: Adapter, cmms: CMMS | None, size: int,
                 layout: tuple[int, int] | list[int] | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`token_rows` of a finished reconstruction, read from its files one pair at a time.

    Returns:
        ``(per_item with TOKEN_COLUMNS, set rows metric/value/n/note)``.
    """
    items = list(iter_recon_items(manifest_path, status_path, recon_dir))
    records = [token_record(i, tokenizer, cmms, size, layout) if i.status == "ok" else None
               for i in items]
    return token_rows(items, records, tokenizer.info().codebook_size)
