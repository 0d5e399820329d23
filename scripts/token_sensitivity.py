"""Rule token_sensitivity: CHD and CMMS under 10 levels of noise, blur, block shuffling."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging
from roundtrip.core.manifest import read_ok_images
from roundtrip.core.progress import Progress
from roundtrip.evals.chd.cmms import CMMS
from roundtrip.evals.chd.sensitivity import (
    KINDS,
    degraded_tokens,
    plot,
    score_sensitivity,
    summarize,
    token_shifts,
)
from roundtrip.models import build_model
from roundtrip.stages.reconstruct import resolve_device
from roundtrip.tables import write_frame
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
device = resolve_device(smk.params.device)
s = smk.params.settings
tokenizer = build_model(smk.params.reference, smk.params.spec).to(device)
images = read_ok_images([smk.input.manifest])
# the job's work is tokenizing the clean set and each (kind, level) version of it
with Progress(1 + len(KINDS) * s["levels"], f"token sensitivity on {s['dataset']}",
              unit="sets") as progress:
    sets = degraded_tokens(tokenizer, images, smk.params.size, s["levels"],
                           s["crops_per_image"], s["seed"], smk.params.layout, progress)
    vocab = tokenizer.info().codebook_size
    df = score_sensitivity(sets, vocab, CMMS(smk.input.cmms, device))
df.to_csv(smk.output.raw, index=False)
shifts = token_shifts(sets, vocab)  # Figure 2's middle panel
shifts.to_csv(smk.output.tokens, index=False)
summary = summarize(df)
notes = [f"{len(images)} images of dataset {s['dataset']} (+{s['crops_per_image']} crops each), "
         f"{df['n_images'].iloc[0]} in all, at {smk.params.size}x{smk.params.size}, tokenized by "
         f"{smk.params.reference}; CHD vs the clean set; CMMS = mean over the degraded set.",
         "parameter: noise sigma (intensity in [0, 1]), blur sigma (px), share of the 8x8 "
         "blocks shuffled."]
notes += [f"{r.kind}: Spearman(level, CHD) = {r.spearman_chd:.3f}, CHD strictly increasing: "
          f"{'yes' if r.chd_monotone else 'no'}; Spearman(level, CMMS) = {r.spearman_cmms:.3f}"
          for r in summary.itertuples()]
write_frame(df, "token_sensitivity", "Token statistics under degradation (CHD paper, Figure 2)",
            notes, Path(smk.output[0]).parent,
            digits={"parameter": 2, "chd": 4, "chd_1d": 4, "chd_2d": 4, "cmms": 4})
spearman = summary.rename(columns={"kind": "degradation",
                                   "spearman_chd": "Spearman(level, CHD)",
                                   "spearman_cmms": "Spearman(level, CMMS)",
                                   "chd_monotone": "CHD strictly increasing"})
write_frame(spearman, "token_sensitivity_spearman",
            "Spearman's correlation of CHD and of mean CMMS with the degradation level "
            f"(levels 1-{s['levels']}; CHD paper, Figure 2)",
            ["CHD should rise with the level (rho near +1) and CMMS fall (near -1). The paper "
             "shows the trends as curves; the -0.9 target for CMMS is roundtrip's, not the "
             "paper's."],
            Path(smk.output[0]).parent,
            digits={"Spearman(level, CHD)": 3, "Spearman(level, CMMS)": 3})
Path(smk.output.figure).parent.mkdir(parents=True, exist_ok=True)
plot(df, smk.output.figure, shifts)
for line in notes[2:]:
    log.info(line)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
