"""Speed and accuracy of the two offline OCR engines, Tesseract and RapidOCR.

Reads every original of the text sets of a finished run (``results/datasets/{set}``) with each
engine, one item at a time on one thread, ``--repeats`` times, and records per set the median
seconds per item (the engine loaded once, as in a job), the CER against the ground truth where
the set has it (CER over characters without whitespace for Chinese and Japanese, as the tables
do), and RapidOCR's one-off model load time. This is how the default config's choice was made:
RapidOCR reads the posters (VTBench's Table 5 set) and not the dense pages.
Writes ``benchmarks/results/ocr_engines.json``.

Usage: ``python benchmarks/ocr_engines.py [--workdir DIR] [--sets posters,abstracts] [--repeats 3]``
(run in or point at the folder of a finished default run).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # Tesseract on one thread, like RapidOCR

from roundtrip.core.imaging import read_image  # noqa: E402
from roundtrip.core.manifest import read_manifest  # noqa: E402
from roundtrip.metrics.text import Normalization, cer, normalize_text  # noqa: E402
from roundtrip.readers import build_ocr  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SETS = ["posters", "scanned_text", "abstracts", "multilingual_zh", "multilingual_ja",
        "multilingual_ko", "multilingual_hi"]
ENGINES = {"tesseract": {"type": "tesseract", "psm": 3, "oem": 1},
           "rapidocr": {"type": "rapidocr", "threads": 1}}


def one_set(workdir: Path, name: str, repeats: int) -> dict:
    folder = workdir / "results/datasets" / name
    manifest = read_manifest(folder / "manifest.csv")
    manifest = manifest[manifest["status"] == "ok"]
    out = {"items": len(manifest), "size": f"{manifest['width'].iloc[0]}x{manifest['height'].iloc[0]}"}
    for engine_name, spec in ENGINES.items():
        engine = build_ocr(engine_name, spec)
        t = time.perf_counter()
        row = {}
        for _, item in manifest.iterrows():
            lang = item.get("lang") or "eng"
            try:
                engine.check([lang])
            except RuntimeError as exc:
                row = {"skipped": str(exc)}
                break
            image = read_image(folder / item["path"])
            if engine_name == "rapidocr" and "rapidocr_load_s" not in out:
                engine.read(image[:64, :64], lang=lang)  # load the models once, timed apart
                out["rapidocr_load_s"] = round(time.perf_counter() - t, 2)
            times, text = [], ""
            for _ in range(repeats):
                t0 = time.perf_counter()
                text = engine.read(image, lang=lang)
                times.append(time.perf_counter() - t0)
            row.setdefault("seconds", []).append(statistics.median(times))
            if item.get("text"):
                norm = Normalization().for_language(lang)
                row.setdefault("cer_gt", []).append(cer(normalize_text(item["text"], norm),
                                                        normalize_text(text, norm)))
        if "seconds" in row:
            row["median_s_per_item"] = round(statistics.median(row.pop("seconds")), 2)
        if "cer_gt" in row:
            row["mean_cer_gt"] = round(statistics.mean(row.pop("cer_gt")), 4)
        out[engine_name] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/ocr_engines.json"))
    args = ap.parse_args()
    workdir = Path(args.workdir)
    sets = {}
    for name in args.sets.split(","):
        if (workdir / "results/datasets" / name / "manifest.csv").exists():
            sets[name] = one_set(workdir, name, args.repeats)
            print(name, json.dumps(sets[name]), flush=True)
    record = {"benchmark": "OCR engines on the originals of the text sets, one thread, "
                           f"median of {args.repeats} reads per item",
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()},
              "sets": sets}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
