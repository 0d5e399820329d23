"""The failure summaries of the tables: one shared counter (roundtrip.tables.reasons) behind the
engine's, MediBench's, VISTA's and the Telephone Game's footnotes. The literal strings below are
what each table printed before they shared it: a footnote that changes changes a table's bytes."""
import math

import pandas as pd
import pytest

from roundtrip.evals.medibench.tables import _reasons
from roundtrip.evals.telephone.tables import _why
from roundtrip.evals.vista.tables import _notes
from roundtrip.tables.engine import _reason_summary
from roundtrip.tables.reasons import summarize_reasons

nan = math.nan
#: Several reasons with repeated, single and tied counts, so that order, "(Nx)" and the tail show.
FRAME = pd.DataFrame({
    "item_id": [f"i{k}" for k in range(11)],
    "status": ["ok", "error", "error", "error", "unsupported", "unsupported", "error", "failed",
               "failed", "n/a", "ok"],
    "reason": ["", "timeout: 30 s", "timeout: 30 s", "timeout: 30 s", "", "", "bad png: truncated",
               "model failed: g=2", "model failed: g=2", "weights missing", ""],
    "psnr": [31.0, nan, nan, nan, nan, nan, nan, nan, nan, nan, 28.5],
    "segsim": [0.9, 0.8, nan, nan, nan, nan, nan, 0.7, nan, nan, 0.6],
    "hit": [1.0, nan, nan, nan, 0.0, 1.0, nan, nan, nan, nan, 0.0],
    "extracted_by": ["regex", "", "", "", "invalid", "regex", "", "", "", "", "invalid"],
})


def test_engine_reason_summary():
    assert _reason_summary(FRAME, "psnr") == ("error: timeout: 30 s (3x); unsupported (2x); "
                                              "failed: model failed: g=2 (2x); and 2 other reasons")
    assert _reason_summary(FRAME, None) == ("error: timeout: 30 s (3x); unsupported (2x); "
                                            "failed: model failed: g=2 (2x); and 2 other reasons")
    assert _reason_summary(FRAME, "segsim") == ("error: timeout: 30 s (2x); unsupported (2x); "
                                                "error: bad png: truncated; and 2 other reasons")
    assert _reason_summary(FRAME.iloc[:4], "psnr") == "error: timeout: 30 s (3x)"


def test_medibench_reasons():
    assert _reasons(FRAME, "psnr") == ("error: timeout: 30 s (3x); unsupported (2x); "
                                       "failed: model failed: g=2 (2x)")
    assert _reasons(FRAME, "segsim") == ("error: timeout: 30 s (2x); unsupported (2x); "
                                         "error: bad png: truncated")
    # a metric the frame lacks: every row counts
    assert _reasons(FRAME.iloc[1:7], "missing_metric") == ("error: timeout: 30 s (3x); "
                                                          "unsupported (2x); "
                                                          "error: bad png: truncated")


def test_vista_notes():
    assert _notes(FRAME) == ["2 of 11 answers invalid (counted wrong)",
                             "7 of 11 not scored: timeout (3x); model failed (2x)"]
    assert _notes(FRAME.iloc[[0, 1, 6, 7]]) == ["3 of 4 not scored: timeout (1x); bad png (1x)"]


def test_telephone_why():
    assert _why(FRAME) == "9 of 11 item values missing: timeout: 30 s"
    assert _why(FRAME.iloc[[0, 10]]) == ""
    assert _why(FRAME.iloc[[6, 7, 8, 9]]) == "4 of 4 item values missing: model failed: g=2"


def test_summarize_reasons_options():
    labels = ["a", "b", "a", "c", "d", "b", "a", "e"]
    assert summarize_reasons(labels) == "a (3x); b (2x); c"
    assert summarize_reasons(labels, top=2, counts="always") == "a (3x); b (2x)"
    assert summarize_reasons(labels, top=4, counts="always") == "a (3x); b (2x); c (1x); d (1x)"
    assert summarize_reasons(labels, top=1, counts="never") == "a"
    assert summarize_reasons(labels, tail=True) == "a (3x); b (2x); c; and 2 other reasons"
    assert summarize_reasons(labels[:3], tail=True) == "a (2x); b"
    assert summarize_reasons([]) == ""
    with pytest.raises(ValueError, match="counts"):
        summarize_reasons(labels, counts="sometimes")
