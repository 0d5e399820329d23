"""Rule compare: checkpoint B against checkpoint A in every evaluation of this run
(roundtrip.workflow.compare): the tables compare and compare_items, with their provenance, and
the figures of the report's "What changed" section."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.evaluation import load_evaluations
from roundtrip.core.logs import setup_logging
from roundtrip.tables.compare import Run, pairs_from_config, settings_from_config
from roundtrip.workflow.compare import run_comparison

smk = snakemake  # noqa: F821 - injected by Snakemake
p = smk.params
log = setup_logging(smk.log[0])
section = {"compare": dict(p.compare)}
plugins = dict(p.evaluations)
tables = Path(smk.output[0]).parent
run = Run(tables.parent)  # results/: the folder of results/tables
result, lines = run_comparison(
    run, run, pairs_from_config(section),
    load_evaluations(plugins.get("plugins") or (), plugins.get("paths") or ()),
    settings_from_config(section), tables, Path(smk.output.differences).parent, smk.rule,
    f"snakemake --cores 1 {smk.output[0]}", dict(smk.params.items()), smk.input,
    dict(smk.config), int(p.compare["gallery_items"]))
for line in lines:
    log.info("%s", line)
log.info("compare: %d rows, %d items", len(result.rows), len(result.items))
