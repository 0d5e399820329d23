"""Rule medical_tables: the MediBench tables (fidelity, structure, latent utility, shapes)."""
import _bootstrap  # noqa: F401
from pathlib import Path

from roundtrip.medical.segment import build_segmenter
from roundtrip.medical.tables import write_all
from roundtrip.models import build_model
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
p = smk.params
built = [build_model(m, p.specs[m]) for m in p.models]
write_all(p.models, p.specs, p.datasets_2d, p.datasets_3d, p.latent_datasets, p.modalities,
          p.not_run, dict(p.segmenter), build_segmenter(dict(p.segmenter)).qc_note, built,
          Path(smk.output[0]).parent)
