"""Answers per second of VISTA-Bench's offline reader (``ocr_solver``).

Renders ``--questions`` questions of the offline family at VISTA-Bench's grid (Arial 9/16/32/48
pt, Times/Cambria/Brush at 16 pt), then times, ``--repeats`` times each:

- **read**: Tesseract reading every render (the OCR the reconstruction jobs and ``ocr_original`` do, one
  process, psm 3), the part of the reader that looks at pixels;
- **answer**: the ``vista_answers`` job's work on that reading: both modes of every question
  solved, extracted and scored (:func:`roundtrip.evals.vista.answers.answer_set`).

Reports the medians as answers/s (VT answers for reading; text + VT answers for answering) and
the reader's accuracy per (style, size). Writes ``benchmarks/results/vista_answer_throughput.json``.

Usage: ``python benchmarks/vista_answer_throughput.py [--questions 20] [--repeats 3]``
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path


from roundtrip.datasets import build_dataset
from roundtrip.evals.vista.answers import answer_set
from roundtrip.readers import build_answerer, build_ocr
from roundtrip.stages.ocr import ocr_dataset

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/vista_answer_throughput.json"))
    args = ap.parse_args()
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    work = Path(tempfile.mkdtemp())
    spec = {"type": "vista_questions", "questions": "family", "count": args.questions,
            "render": {}, "audit": {"max_cer": 0.1}}
    manifest = build_dataset("q", spec, work / "ds")
    n_vt = int((manifest["status"] == "ok").sum())
    engine = build_ocr("tesseract", {"type": "tesseract", "psm": 3, "oem": 1})
    reader = build_answerer("ocr_solver", {"type": "ocr_solver"})
    read_s, answer_s = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        ocr = ocr_dataset(engine, work / "ds" / "manifest.csv", "eng", threads=1)
        read_s.append(time.perf_counter() - t)
        ocr.to_csv(work / "ocr.csv", index=False)
        t = time.perf_counter()
        answers = answer_set(work / "ds" / "manifest.csv", reader, ocr_csv=work / "ocr.csv")
        answer_s.append(time.perf_counter() - t)
    vt = answers[answers["mode"] == "vt"].copy()
    vt["cell"] = vt["font"] + " " + vt["size"].astype(str) + " pt"
    result = {
        "benchmark": "ocr_solver on the offline family at VISTA-Bench's grid, 2-core machine",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "questions": args.questions, "renders": n_vt, "repeats": args.repeats,
        "read_s": read_s, "answer_s": answer_s,
        "read_vt_answers_per_s": round(n_vt / statistics.median(read_s), 2),
        "answer_answers_per_s": round(len(answers) / statistics.median(answer_s), 1),
        "text_accuracy_pct": round(100 * answers[answers["mode"] == "text"]["hit"].mean(), 1),
        "vt_accuracy_pct_by_render": {k: round(100 * v, 1) for k, v in
                                      vt.groupby("cell", sort=False)["hit"].mean().items()},
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
