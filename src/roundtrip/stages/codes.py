"""Tokens and latents of a (model, dataset) for token-space metrics (CHD, CMMS) and latent probes.

Written only when a downstream rule asks for them (rule ``extract_codes``), under the dataset's
protocol, so they describe exactly what the model saw when reconstructing:

* ``tokens.npz``: one int32 array per item id, ``(h, w)`` or ``(h, w, Q)`` for residual models;
  empty for continuous models;
* ``latents.npz``: one float16 array per item id, ``(C, h, w)``;
* ``codes.csv``: ``item_id, status, reason, token_shape, latent_shape``.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from roundtrip.core.manifest import read_manifest
from roundtrip.models import Adapter, OutputError
from roundtrip.stages.reconstruct import prepared_batches

log = logging.getLogger(__name__)


def extract_codes(model: Adapter, manifest_path: str | Path, out_dir: str | Path,
                  protocol: str = "native", size: int | None = None,
                  batch_size: int = 8) -> pd.DataFrame:
    """Encode every item and save tokens/latents (see module docstring); returns ``codes.csv``.

    An item whose token ids fail the model layer's check (:meth:`Adapter.checked_tokens`: ids
    beyond the codebook, another batch size) is an error row with the reason, and its ids and
    latent are not written."""
    manifest_path, out_dir = Path(manifest_path), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    info = model.info()
    rows, tokens, latents = {}, {}, {}

    def record(item_id, status, reason):
        rows[item_id] = (status, reason)

    manifest = read_manifest(manifest_path)
    for batch in prepared_batches(model, manifest, manifest_path.parent, record, protocol, size,
                                  batch_size):
        x = torch.from_numpy(np.stack([p.x for _, _, p in batch])).permute(0, 3, 1, 2)
        defects = [""] * len(batch)
        try:
            with torch.no_grad():
                latent = model.encode((x * 2 - 1).to(model.device))
                lat = model.latent_tensor(latent)
                try:
                    tok = model.checked_tokens(latent, len(batch))
                except OutputError as exc:  # ids beyond the codebook: those items fail
                    tok, defects = model.tokens(latent), exc.reasons
        except Exception as exc:  # noqa: BLE001 - recorded per item
            for item_id, _, _ in batch:
                rows[item_id] = ("error", f"{type(exc).__name__}: {exc}")
            continue
        for k, (item_id, _, _) in enumerate(batch):
            if defects[k]:
                rows[item_id] = ("error", defects[k])
                continue
            if tok is not None:
                tokens[item_id] = tok[k].cpu().numpy().astype(np.int32)
            if lat is not None:
                latents[item_id] = lat[k].float().cpu().numpy().astype(np.float16)
            rows[item_id] = ("ok", "" if tok is not None else
                             f"{info.family} model: no discrete tokens")
    # manifest order (batches run by input size, errors are recorded as they are met)
    order = list(manifest["item_id"])
    rows = {i: rows[i] for i in order if i in rows}
    tokens = {i: tokens[i] for i in order if i in tokens}
    latents = {i: latents[i] for i in order if i in latents}
    np.savez_compressed(out_dir / "tokens.npz", **tokens)
    np.savez_compressed(out_dir / "latents.npz", **latents)
    df = pd.DataFrame([{"item_id": i, "status": s, "reason": why,
                        "token_shape": "x".join(map(str, tokens[i].shape)) if i in tokens else "",
                        "latent_shape": "x".join(map(str, latents[i].shape)) if i in latents else ""}
                       for i, (s, why) in rows.items()])
    df.to_csv(out_dir / "codes.csv", index=False)
    return df
