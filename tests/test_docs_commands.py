"""Every command of the docs and of README.md that runs the workflow names the config it runs:
run as written, it does what its page describes, not the default config (a page's config
example followed by a bare `snakemake --cores 8` plans config.yaml instead)."""
import re

import pytest
from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
#: Options after which Snakemake does no run of the config's jobs (so names no config).
NO_RUN = ("--unlock", "--report", "--lint", "--list-rules", "--version", "--help")
#: A shell line continued on the next: a backslash just before the line's end.
CONTINUED = re.compile(r"\\\n")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def commands(text: str) -> list[tuple[int, str, str]]:
    """``(line, command, its sentence)`` of every `snakemake` invocation (``line``: where it
    starts in ``text``, from 1): each line of a fenced code block (a line ending in a backslash
    joined with the next, as the shell reads it), and each inline code span (joined across
    lines) with its sentence around it."""
    out = []
    for block in re.finditer(r"```[a-z]*\n(.*?)```", text, re.S):
        line = _line_of(text, block.start(1))
        for shell_line in re.split(r"(?<!\\)\n", block.group(1)):
            command = " ".join(CONTINUED.sub(" ", shell_line).split())
            if re.search(r"(^|[\s/])snakemake\s", command + " "):
                out.append((line, command, ""))
            line += shell_line.count("\n") + 1
    # the prose, without the code blocks; ``pieces``: (offset in rest, offset in text) of each
    # stretch of it, for the line of a span
    rest, pieces, pos = "", [], 0
    for block in re.finditer(r"```.*?```", text, re.S):
        pieces.append((len(rest), pos))
        rest, pos = rest + text[pos:block.start()], block.end()
    pieces.append((len(rest), pos))
    rest += text[pos:]
    for m in re.finditer(r"`([^`]+)`", rest):
        span = " ".join(CONTINUED.sub(" ", m.group(1)).split())
        if re.match(r"(\S*/)?snakemake\s", span + " "):
            start = max(rest.rfind(". ", 0, m.start()), rest.rfind("\n\n", 0, m.start()))
            ends = [i for i in (rest.find(". ", m.end()), rest.find("\n\n", m.end())) if i > 0]
            in_rest, in_text = max(p for p in pieces if p[0] <= m.start())
            out.append((_line_of(text, in_text + m.start() - in_rest), span,
                        " ".join(rest[start + 1:min(ends or [len(rest)])].split())))
    return out


def runs_jobs(command: str) -> bool:
    """Whether a `snakemake` command runs or plans jobs of a config: it has ``--cores``, a
    profile, a target under ``results/``, or is a dry run (``-n``)."""
    if any(opt in command for opt in NO_RUN) or "pip install" in command:
        return False
    return bool(re.search(r"--cores|--profile|\sresults/\S|\s-n(\s|$)|\s-R\s", command))


def missing_config(text: str) -> list[str]:
    """``line: command`` of each command of ``text`` that runs jobs without naming its config:
    in a code block it names it with ``--configfile``; inline, the command or its sentence
    names one (``my.yaml``, ``config.yaml``, a preset)."""
    missing = []
    for line, command, sentence in commands(text):
        if not runs_jobs(command) or "--configfile" in command:
            continue
        if sentence and re.search(r"[\w./-]+\.yaml", sentence):
            continue
        missing.append(f"{line}: {command}")
    return missing


def test_the_parser_finds_commands_and_their_sentences():
    text = ("Run it:\n\n```bash\n.venv/bin/snakemake --cores 4   # all\n```\n\nThen the "
            "next plain run (`snakemake\n--cores 4`, nothing named) asks again. A dry run "
            "on `config.yaml` (`snakemake -n`) plans it. `snakemake --unlock` unlocks.")
    found = commands(text)
    assert [c for _, c, _ in found] == [".venv/bin/snakemake --cores 4 # all",
                                        "snakemake --cores 4", "snakemake -n",
                                        "snakemake --unlock"]
    assert [line for line, _, _ in found] == [4, 7, 8, 8]
    assert found[2][2] == "A dry run on `config.yaml` (`snakemake -n`) plans it"
    assert [runs_jobs(c) for _, c, _ in found] == [True, True, True, False]
    assert missing_config(text) == ["4: .venv/bin/snakemake --cores 4 # all",
                                    "7: snakemake --cores 4"]


def test_a_command_continued_with_a_backslash_is_one_command():
    """The shell reads a line ending in a backslash with the next: the config named on a
    continuation line counts, and a `snakemake \\` whose options follow is checked."""
    text = ("```bash\nmake lint\n.venv/bin/snakemake --cores all \\\n    --configfile my.yaml\n"
            ".venv/bin/snakemake \\\n  --cores 2 \\\n  results/report.pdf\n"
            "snakemake --cores 1 --configfile a.yaml\n```\n\nOr `snakemake --cores 2 \\\n"
            "--configfile b.yaml` inline.\n")
    found = commands(text)
    assert [(line, c) for line, c, _ in found] == [
        (3, ".venv/bin/snakemake --cores all --configfile my.yaml"),
        (5, ".venv/bin/snakemake --cores 2 results/report.pdf"),
        (8, "snakemake --cores 1 --configfile a.yaml"),
        (11, "snakemake --cores 2 --configfile b.yaml")]
    assert missing_config(text) == ["5: .venv/bin/snakemake --cores 2 results/report.pdf"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_that_runs_jobs_names_its_config(page):
    """In a code block the command names its config with ``--configfile``; inline, the command
    or its sentence names one (``my.yaml``, ``config.yaml``, a preset)."""
    missing = missing_config(page.read_text())
    assert not missing, (f"{page.relative_to(REPO)}: commands that run the workflow without "
                         f"naming its config (--configfile FILE), by line: {missing}")
