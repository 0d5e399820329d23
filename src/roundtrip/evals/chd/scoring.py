"""Token-space scoring of a (model, dataset): CHD between references and reconstructions, CMMS per item.

Both sets are resized to the reference tokenizer's input size (``metrics.tokens.size``, square,
bicubic) and tokenized by the same reference tokenizer, one pair at a time; only token counts
are accumulated, so memory does not grow with the number of items.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import ImageReadError, read_image
from roundtrip.core.recon_items import ReconContext, iter_recon_items
from roundtrip.evals.chd.cmms import CMMS, to_square, tokenize
from roundtrip.metrics.tokens import CHD_2D_SEQUENCE_REASON, TokenHistogram, chd
from roundtrip.models import Adapter

TOKEN_COLUMNS = ["item_id", "status", "reason", "cmms", "cmms_reference"]
SET_COLUMNS = ["metric", "value", "n", "note"]


def score_tokens(manifest_path: str | Path, status_path: str | Path, recon_dir: str | Path,
                 tokenizer: Adapter, cmms: CMMS | None, size: int,
                 layout: tuple[int, int] | list[int] | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-item CMMS (reconstruction and reference) and set-level CHD, CHD-1D, CHD-2D.

    Args:
        layout: a 1D tokenizer's declared ``(h, w)`` grid (:func:`tokenize`); without one its
            sequences get CHD-1D only, CHD-2D and CHD n/a with the reason (Sec. 4.1, Eq. 10).

    Returns:
        ``(per_item with TOKEN_COLUMNS, set rows metric/value/n/note)``; ``note`` says why a
        value is NaN.
    """
    vocab = tokenizer.info().codebook_size
    real, fake = TokenHistogram(vocab), TokenHistogram(vocab)
    rows = []
    for item in iter_recon_items(manifest_path, status_path, recon_dir):
        row = {"item_id": item.item_id, "status": item.status, "reason": item.reason,
               "cmms": math.nan, "cmms_reference": math.nan}
        if item.status == "ok":
            try:
                images = np.stack([to_square(read_image(item.reference), size),
                                   to_square(read_image(item.reconstruction), size)])
                grids = tokenize(tokenizer, images, layout=layout)
                real.add(grids[0])
                fake.add(grids[1])
                if cmms is not None:
                    row["cmms_reference"], row["cmms"] = map(float, cmms(grids))
            except (ImageReadError, ValueError, RuntimeError) as exc:
                row.update(status="error", reason=f"tokens: {exc}")
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


def score_reconstructions(ctx: ReconContext, options: dict) -> dict[str, pd.DataFrame]:
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): ``tokens`` (per-item CMMS) and
    ``token_set`` (CHD) in the tokens of the reference tokenizer, on ``ctx.device``.

    Args:
        options: ``reference`` (model name), ``spec`` (its config entry, checkpoint filled in),
            ``size`` (square side before tokenizing), ``cmms`` (the regressor's checkpoint),
            optional ``layout`` (a 1D tokenizer's declared grid, ``metrics.tokens.layout``).
    """
    from roundtrip.models import build_model

    tokenizer = build_model(options["reference"], options["spec"]).to(ctx.device)
    per_item, set_rows = score_tokens(ctx.manifest, ctx.status, ctx.recon_dir, tokenizer,
                                      CMMS(options["cmms"], ctx.device), options["size"],
                                      options.get("layout"))
    return {"tokens": per_item, "token_set": set_rows}
