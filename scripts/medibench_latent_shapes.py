"""Rule medibench_latent_shapes: latent shape and compression ratio per model (MediBench
Table 6)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.medibench.tables import write_latent_shapes
from roundtrip.models import build_model
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
write_latent_shapes([build_model(m, spec) for m, spec in smk.params.specs.items()],
                    Path(smk.output[0]).parent)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
