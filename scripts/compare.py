"""Rule compare: checkpoint B against checkpoint A in every evaluation of this run
(roundtrip.tables.compare), written as the tables compare and compare_items and the figures of
the report's "What changed" section (roundtrip.report.compare)."""
import json
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.evaluation import load_evaluations
from roundtrip.core.logs import setup_logging
from roundtrip.report.compare import summary_text, write_comparison
from roundtrip.tables.compare import Run, compare, pairs_from_config, settings_from_config
from roundtrip.tables.provenance import provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
p = smk.params
log = setup_logging(smk.log[0])
section = {"compare": dict(p.compare)}
plugins = dict(p.evaluations)
registry = load_evaluations(plugins.get("plugins") or (), plugins.get("paths") or ())
settings = settings_from_config(section)
tables = Path(smk.output[0]).parent
run = Run(tables.parent)  # results/: the folder of results/tables
result = compare(run, run, pairs_from_config(section), registry, settings,
                 gallery_items=int(p.compare["gallery_items"]))
write_comparison(result, tables, Path(smk.output.differences).parent, settings)
params = {k: v for k, v in smk.params.items()}
for out in smk.output:
    if str(out).endswith(".provenance.json"):
        name = Path(out).name.removesuffix(".provenance.json")
        record = provenance(name, smk.rule, [*smk.input, *map(str, result.inputs)], params,
                            dict(smk.config))
        Path(out).write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
for line in summary_text(result.rows, result.items):
    log.info("%s", line)
log.info("compare: %d rows, %d items", len(result.rows), len(result.items))
