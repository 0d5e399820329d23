"""Long jobs report items done, rate and time left (roundtrip.core.progress); failed items are
summed per (model, dataset) for the end of a run, summary.rst and page 1
(roundtrip.tables.failures)."""
import io
import logging

import pandas as pd

from roundtrip.core import progress as progress_module
from roundtrip.core.progress import Progress, duration
from roundtrip.tables.failures import Failures, read_failures


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_duration():
    assert [duration(s) for s in (0, 42.4, 185, 7620, -3)] == [
        "0 s", "42 s", "3 min 05 s", "2 h 07 min", "0 s"]


def test_progress_logs_every_interval_and_the_console_after_30_s(caplog):
    clock, console = Clock(), io.StringIO()
    p = Progress(100, "reconstruct m on d", clock=clock, console=console,
                 logger=logging.getLogger("test.progress"))
    with caplog.at_level(logging.INFO, logger="test.progress"):
        for step in range(100):
            clock.now += 1.0  # one item a second
            p.add()
        p.finish()
    lines = [r.getMessage() for r in caplog.records]
    # every 30 s to the log; the last line is the total
    assert lines[0] == "reconstruct m on d: 30 of 100 items (30 %), 1.00 items/s, about 1 min " \
                       "10 s left"
    assert lines[1].startswith("reconstruct m on d: 60 of 100 items (60 %)")
    assert lines[-1] == "reconstruct m on d: 100 of 100 items done in 1 min 40 s"
    assert len(lines) == 4  # at 30, 60, 90 s and the end
    # the console too, every 30 s once the job has run 30 s, and the end of a job it reported on
    assert console.getvalue().splitlines() == [
        "[roundtrip] " + line for line in lines]


def test_a_short_job_prints_nothing(caplog):
    clock, console = Clock(), io.StringIO()
    p = Progress(5, "ocr", clock=clock, console=console, logger=logging.getLogger("test.short"))
    with caplog.at_level(logging.INFO, logger="test.short"):
        for _ in range(5):
            clock.now += 0.5
            p.add()
    assert caplog.records == [] and console.getvalue() == ""


def test_intervals_are_the_documented_ones():
    assert (progress_module.LOG_INTERVAL_S, progress_module.CONSOLE_AFTER_S,
            progress_module.CONSOLE_INTERVAL_S) == (30.0, 30.0, 30.0)


def write_status(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=["item_id", "status", "reason", "seconds"]).to_csv(path,
                                                                                   index=False)


def test_failures_per_model_and_set(tmp_path):
    bad = "model returned 168x256 for 172x256: check models.my_vq.downsample (4)"
    write_status(tmp_path / "a.csv", [(f"i{k}", "error" if k < 5 else "ok", bad if k < 5 else "",
                                       0.1) for k in range(8)])
    write_status(tmp_path / "b.csv", [("i0", "ok", "", 0.1), ("i1", "unsupported", "fixed", 0)])
    write_status(tmp_path / "c.csv", [("i0", "error", "ImageReadError: truncated", 0),
                                      ("i1", "error", "ImageReadError: truncated", 0),
                                      ("i2", "error", "timeout", 0), ("i3", "error", "x", 0)])
    found = read_failures({("my_vq", "photos"): tmp_path / "a.csv",
                           ("my_vq", "fixed"): tmp_path / "b.csv",
                           ("jpeg", "photos"): tmp_path / "c.csv",
                           ("jpeg", "never_ran"): tmp_path / "missing.csv"})
    assert found == [Failures("my_vq", "photos", 5, 8, f"{bad} (5x)"),
                     Failures("jpeg", "photos", 4, 4,
                              "ImageReadError: truncated (2x); timeout; and 1 other reasons")]
    assert found[0].line() == f"my_vq on photos: 5 of 8 items failed: {bad} (5x)"
