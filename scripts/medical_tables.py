"""Rule medical_tables: the MediBench tables of fidelity, structure and latent utility."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.medibench.segment import build_segmenter
from roundtrip.evals.medibench.tables import write_all
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
p = smk.params
files = p.files  # the rule's inputs keyed by dataset or (model, dataset)
write_all(p.models, p.specs, p.datasets_2d, p.datasets_3d, p.latent_datasets, p.modalities,
          p.not_run, dict(p.segmenter), build_segmenter(dict(p.segmenter)).qc_note,
          Path(smk.output[0]).parent, p.pool_modalities, dict(p.sizes),
          manifests=files["manifests"], quality=files["quality"], structure=files["structure"],
          latent=files["latent"], settings=dict(p.settings))
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
