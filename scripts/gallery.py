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
for dataset, figure in zip(p.datasets, smk.output.figures):
    manifest = read_manifest(f"results/datasets/{dataset}/manifest.csv")
    recon = {m: Path(f"results/recon/{m}/{dataset}") for m in p.models[dataset]}
    rows = gallery_rows(manifest, Path(f"results/datasets/{dataset}"), recon, p.per_dataset)
    ocr = {}
    if p.ocr[dataset]:
        for model in ["original", *p.models[dataset]]:
            path = Path(f"results/ocr/{p.ocr[dataset]}/{model}/{dataset}.csv")
            if path.is_file():
                df = read_item_csv(path)
                ocr[model] = dict(zip(df["item_id"], df["text"]))
    shown = plot_gallery(dataset, rows, ocr, figure)
    lines += [{"dataset": dataset, **line} for line in shown]
    log.info("gallery %s: %d items, %d OCR lines", dataset, len(rows), len(shown))
pd.DataFrame(lines, columns=["dataset", "item_id", "model", "line"]).to_csv(smk.output.lines,
                                                                            index=False)
