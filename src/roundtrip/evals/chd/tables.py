"""Columns of the token-space table (CHD paper, Sec. 4), for
:func:`roundtrip.tables.build_table`."""
from __future__ import annotations

from roundtrip.tables import Column, metric_column


def table_notes(cmms_datasets: list[str], scored: list[str], allow_overlap: bool,
                training: dict | None = None) -> list[str]:
    """The token table's notes: the convention of each column (CHD paper section and equation),
    the set CMMS was trained on, held out from the scored sets or not (Sec. 4.2, 5.1), and,
    given ``training`` (``metrics.tokens.cmms``), the regressor's training budget beside the
    paper's, as the reason CMMS values compare only within one table."""
    trained = ", ".join(cmms_datasets)
    held_out = (f"in-sample: they may overlap the scored sets (metrics.tokens.cmms.allow_overlap)"
                if allow_overlap else f"held out: no name or image in common with the scored "
                f"sets ({', '.join(scored)})")
    notes = ["chd = (chd_1d + chd_2d) / 2 (Eq. 14); chd_1d: Hellinger distance of unigram "
             "histograms (Eq. 8-9); chd_2d: of symmetrized right/down co-occurrences (Eq. 10-13), "
             "n/a for a 1D tokenizer without a declared layout (Sec. 4.1), and chd with it; "
             "references vs reconstructions.",
             f"cmms: the CMMS regressor (Sec. 4.2, target exp(-20 p), Eq. 16) per reconstruction; "
             f"cmms_reference: of the originals. CMMS trained on {trained}, {held_out}; the paper "
             "trains it once on ImageNet and applies it without fine-tuning (Sec. 4.2, 5.1)."]
    return notes + ([training_note(training)] if training else [])


def training_note(training: dict) -> str:
    """One line on the CMMS regressor's training (``metrics.tokens.cmms``, schema defaults
    filled in) beside the paper's (Sec. 5.2), and what follows for reading the column."""
    bypass = training.get("bypass_steps", 0)
    steps = f"{training['steps']} steps" + (f" after {bypass} with the blocks bypassed"
                                            if bypass else "")
    epochs = training.get("epochs", 1)
    return (f"CMMS regressor: d_model {training['d_model']}, {steps}, batch "
            f"{training['batch_size']}, {epochs} epoch{'s' if epochs != 1 else ''} of "
            f"{training['crops']} crops; the paper's: d_model 512, batch 512, 200 epochs over "
            "ImageNet-1K (Sec. 5.2). CMMS is a learned score, uncalibrated across regressors: "
            "compare models within this table, not with the paper's values; a reconstruction "
            "scoring above its originals (cmms_reference) marks where it does not rank fidelity.")


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
