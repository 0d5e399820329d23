"""Rule telephone_tables: S(g), MCD, SDR and MGG tables and the five figures."""
from pathlib import Path

import _bootstrap  # noqa: F401
import pandas as pd

from roundtrip.core.logs import setup_logging
from roundtrip.evals.telephone import figures, tables
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
keys = [tuple(k) for k in smk.params.chain_keys]
similarity = {k: pd.read_csv(f, dtype={"item_id": str, "reason": str}, keep_default_na=False,
                             na_values={"similarity": [""]})
              for k, f in zip(keys, smk.input.similarity)}
mgg = {k: pd.read_csv(f, dtype={"item_id": str, "reason": str}, keep_default_na=False,
                      na_values={"correct": [""], "correct_geneval": [""]})
       for k, f in zip(keys, smk.input.mgg)}
out_dir = Path(smk.output[0]).parent
types = {name: spec.get("type", "") for name, spec in (smk.params.backbones or {}).items()}
curve = tables.curves(similarity, smk.params.bootstrap)
tables.similarity_table(curve, out_dir)
mcd = tables.mcd_table(curve, out_dir, types)
sdr = tables.sdr_table(curve, out_dir, types)
mgg_frame = tables.mgg_table(mgg, out_dir)
tables.mgg_grid_table(mgg_frame, out_dir)
out = smk.output
figures.plot_similarity(curve, out.similarity_figure)
figures.plot_sdr(curve, sdr, out.sdr_figure)
figures.plot_mgg(mgg_frame, out.mgg_figure)
figures.plot_mgg_vs_mcd(mcd, mgg_frame, out.mgg_mcd_figure, smk.params.dataset_types)
roots = {k: Path(smk.params.roots[f"{k[0]}/{k[1]}"]) for k in keys}
first = keys[0][1]
strip_roots = {k: r for k, r in roots.items() if k[1] == first}
item = next(iter(similarity[keys[0]]["item_id"]), "")
chain = next(iter(similarity[keys[0]]["chain"]), "text-first")
figures.plot_strip(strip_roots, item, chain, int(smk.params.generations), out.strip_figure)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
