"""Rule medical_panel: originals, reconstructions and subtraction maps per modality (PNG)."""
import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.medibench.panels import write_panel

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
# params.status: model -> the status file among smk.input.status, in the panel's column order
write_panel(smk.input.manifest, smk.params.status, smk.wildcards.dataset, smk.output[0],
            smk.params.axis)
