"""The CHD paper's Figure 2 on the shipped config.yaml, through the workflow's own rules.

Over 10 increasing levels of noise, blur and block shuffling, CHD rises with the level, as the
paper's Figure 2 shows. This runs the default config's token branch (datasets, the `small_vq`
reference tokenizer, two-phase CMMS training on the held-out `cmms_train` and `cmms_photos`,
the sensitivity rule) in a fresh folder, as `snakemake --cores 2` would, and checks the tables
it writes and the sentence page 1 makes of them. About 5 minutes on 2 cores.

Mean CMMS per level is roundtrip's addition to the figure (the paper plots CHD and token
frequencies). With the showcase's small regressor its trend depends on the training seed:
`benchmarks/results/cmms_seed_robustness_resize_crop_epochs.json` records Spearman(level, CMMS)
per seed (seed 0, the shipped one: noise -0.527, blur +0.915, shuffle -0.564). So the test holds
CMMS to being reported as it is: the tables agree with the curves, and page 1 names every kind
CMMS does not fall with.
"""
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from conftest import REPO, requires_tesseract

from roundtrip.evals.chd.findings import SPEARMAN_TABLE, spearman_sentence
from roundtrip.evals.chd.sensitivity import KINDS, summarize
from roundtrip.report.findings import RunResults

pytestmark = [pytest.mark.workflow, requires_tesseract]

#: Spearman(level, CHD) at least this for every kind. Block shuffling's nested levels may
#: dip once at the top (centre-cropped photographs: 0.988, one dip between levels 9 and 10).
CHD_TARGET = 0.95


@pytest.fixture(scope="module")
def sensitivity(tmp_path_factory):
    work = tmp_path_factory.mktemp("sens")
    shutil.copy(REPO / "config.yaml", work / "config.yaml")
    target = "results/tables/token_sensitivity.csv"
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "2", target],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    df = pd.read_csv(work / target)
    df.attrs["spearman"] = pd.read_csv(work / "results/tables/token_sensitivity_spearman.csv")
    return df


def test_default_config_reproduces_the_chd_paper_sensitivity(sensitivity, tmp_path):
    df = sensitivity
    assert sorted(df["kind"].unique()) == sorted(KINDS)
    assert (df.groupby("kind")["level"].max() == 10).all() and (df["n_images"] == 40).all()
    summary = summarize(df).set_index("kind")
    for kind in KINDS:  # Figure 2: CHD rises with the level
        assert summary.loc[kind, "spearman_chd"] >= CHD_TARGET, (kind, summary.to_dict())
    for kind in ("noise", "blur"):  # a growing noise field and kernel: CHD rises at every level
        assert summary.loc[kind, "chd_monotone"], kind
    # the Spearman table holds the same numbers
    table = df.attrs["spearman"].set_index("degradation")
    for kind in KINDS:
        assert table.loc[kind, "Spearman(level, CMMS)"] == pytest.approx(
            summary.loc[kind, "spearman_cmms"])
        assert table.loc[kind, "Spearman(level, CHD)"] == pytest.approx(
            summary.loc[kind, "spearman_chd"])
    # page 1 says where CMMS does not fall, from the same table
    (tmp_path / "tables").mkdir()
    df.attrs["spearman"].to_csv(tmp_path / "tables" / f"{SPEARMAN_TABLE}.csv", index=False)
    sentence = spearman_sentence(RunResults({SPEARMAN_TABLE: tmp_path / "tables" /
                                             f"{SPEARMAN_TABLE}.csv"}))
    rising = [k for k in KINDS if summary.loc[k, "spearman_cmms"] >= 0]
    assert ("CMMS falls with every kind" in sentence) == (not rising), sentence
    for kind in rising:
        assert "CMMS does not fall with" in sentence and kind in sentence.split("CMMS does not")[1]
