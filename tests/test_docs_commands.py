"""Every command of the docs that runs the workflow names the config it runs: run as written, it
does what its page describes, not the default config (a page's config example followed by a
bare `snakemake --cores 8` plans config.yaml instead)."""
import re

import pytest
from conftest import REPO

PAGES = sorted((REPO / "docs").rglob("*.md"))
#: Options after which Snakemake does no run of the config's jobs (so names no config).
NO_RUN = ("--unlock", "--report", "--lint", "--list-rules", "--version", "--help")


def commands(text: str) -> list[tuple[str, str]]:
    """``(command, its sentence)`` of every `snakemake` invocation: each line of a fenced code
    block, and each inline code span (joined across lines) with its sentence around it."""
    out = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        out += [(line.strip(), "") for line in block.splitlines()
                if re.search(r"(^|[\s/])snakemake\s", line)]
    rest = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in re.finditer(r"`([^`]+)`", rest):
        span = " ".join(m.group(1).split())
        if re.match(r"(\S*/)?snakemake\s", span):
            start = max(rest.rfind(". ", 0, m.start()), rest.rfind("\n\n", 0, m.start()))
            ends = [i for i in (rest.find(". ", m.end()), rest.find("\n\n", m.end())) if i > 0]
            out.append((span, " ".join(rest[start + 1:min(ends or [len(rest)])].split())))
    return out


def runs_jobs(command: str) -> bool:
    """Whether a `snakemake` command runs or plans jobs of a config: it has ``--cores``, a
    profile, a target under ``results/``, or is a dry run (``-n``)."""
    if any(opt in command for opt in NO_RUN) or "pip install" in command:
        return False
    return bool(re.search(r"--cores|--profile|\sresults/\S|\s-n(\s|$)|\s-R\s", command))


def test_the_parser_finds_commands_and_their_sentences():
    text = ("Run it:\n\n```bash\n.venv/bin/snakemake --cores 4   # all\n```\n\nThen the "
            "next plain run (`snakemake\n--cores 4`, nothing named) asks again. A dry run "
            "on `config.yaml` (`snakemake -n`) plans it. `snakemake --unlock` unlocks.")
    found = commands(text)
    assert [c for c, _ in found] == [".venv/bin/snakemake --cores 4   # all",
                                     "snakemake --cores 4", "snakemake -n",
                                     "snakemake --unlock"]
    assert found[2][1] == "A dry run on `config.yaml` (`snakemake -n`) plans it"
    assert [runs_jobs(c) for c, _ in found] == [True, True, True, False]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_that_runs_jobs_names_its_config(page):
    """In a code block the command names its config with ``--configfile``; inline, the command
    or its sentence names one (``my.yaml``, ``config.yaml``, a preset)."""
    missing = []
    for command, sentence in commands(page.read_text()):
        if not runs_jobs(command) or "--configfile" in command:
            continue
        if sentence and re.search(r"[\w./-]+\.yaml", sentence):
            continue
        missing.append(command)
    assert not missing, (f"{page.relative_to(REPO)}: commands that run the workflow without "
                         f"naming its config (--configfile FILE): {missing}")
