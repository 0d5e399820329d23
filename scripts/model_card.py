"""Rule model_card: family, parameters, native sizes, latent shapes and compression ratios."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.models import build_model
from roundtrip.models.card import model_card
from roundtrip.tables import write_frame
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
models = [build_model(name, spec) for name, spec in smk.params.specs.items()]
df, notes = model_card(models)
write_frame(df, "model_card", "Model card: latent shapes and compression ratios", notes,
            Path(smk.output[0]).parent, digits={"ratio_256": 4, "ratio_512": 4})
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
