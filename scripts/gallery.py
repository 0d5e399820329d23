"""Rule gallery: the reconstruction galleries of the image and text sets (VTBench Figs. 4, 5)
and the OCR lines printed under their crops (results/figures/gallery/lines.csv)."""
from pathlib import Path

import _bootstrap  # noqa: F401
import pandas as pd

from roundtrip.core.logs import setup_logging
from roundtrip.core.manifest import read_item_csv, read_manifest
from roundtrip.report.gallery import gallery_rows, plot_gallery

smk = snakemake  # noqa: F821 - injected by Snakemake
p = smk.params
log = setup_logging(smk.log[0])
lines = []
for (dataset, paths), figure in zip(p.sets.items(), smk.output.figures):
    manifest = read_manifest(paths["manifest"])
    recon = {m: Path(folder) for m, folder in paths["recon"].items()}
    rows = gallery_rows(manifest, Path(paths["folder"]), recon, p.per_dataset)
    ocr = {}
    for model, path in paths["ocr"].items():
        if Path(path).is_file():  # a model whose job failed has no OCR file
            df = read_item_csv(path)
            ocr[model] = dict(zip(df["item_id"], df["text"]))
    shown = plot_gallery(dataset, rows, ocr, figure)
    lines += [{"dataset": dataset, **line} for line in shown]
    log.info("gallery %s: %d items, %d OCR lines", dataset, len(rows), len(shown))
pd.DataFrame(lines, columns=["dataset", "item_id", "model", "line"]).to_csv(smk.output.lines,
                                                                            index=False)
