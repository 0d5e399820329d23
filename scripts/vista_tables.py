"""Rule vista_tables: VISTA-Bench's tables and the gap figure from every answer file."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vista import figures, tables
from roundtrip.tables import write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
answers = {tuple(key): tables.read_answers(path)
           for key, path in zip(smk.params.answer_keys, smk.input.answers)}
answers, notes = tables.prepare(answers, bool(smk.params.include_failed_audit))
sweeps = dict(smk.params.sweeps)
scorer = tables.Scorer(smk.params.bootstrap)
out_dir = Path(smk.output[0]).parent
for table in (tables.accuracy_table(answers, scorer),
              tables.font_table(answers, sweeps, scorer),
              tables.rendering_errors_table(answers, sweeps, scorer),
              tables.subfield_table(answers, scorer),
              tables.source_table(answers, scorer),
              tables.tokenizer_table(answers, scorer)):
    table.notes += notes  # renders left out by the render audit (App. B.3)
    write_table(table, out_dir)  # an empty table keeps its header (vista_tokenizers, axis off)
figures.plot_gap(tables.gap_curves(answers, sweeps), smk.output.figure)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
