"""Every make target that runs the workflow reads ``CONFIG=`` when given (``make -n`` prints the
commands without running them)."""
import shutil
import subprocess

import pytest
from conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")


def _commands(*args) -> list[str]:
    proc = subprocess.run(["make", "-n", "-C", str(REPO), *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [line.strip() for line in proc.stdout.splitlines()
            if "bin/snakemake " in line or "check-config" in line]


@pytest.mark.parametrize("target,first", [
    ("run", ".venv/bin/roundtrip check-config my.yaml"),
    ("report", ".venv/bin/roundtrip check-config my.yaml"),
])
def test_workflow_targets_check_and_run_the_given_config(target, first):
    commands = _commands(target, "CONFIG=my.yaml")
    assert commands[0] == first
    # the target before --configfile: Snakemake reads every word after it as a config file
    assert commands[1].endswith((" results/report.pdf --configfile my.yaml" if target == "report"
                                 else " --configfile my.yaml"))


def test_lint_reads_the_given_config():
    assert _commands("lint", "CONFIG=my.yaml")[-1].endswith("--lint --configfile my.yaml")


def test_without_config_the_workflow_reads_config_yaml():
    commands = _commands("report")
    assert commands == [".venv/bin/snakemake --profile profiles/workstation --cores all "
                        "results/report.pdf"]
