"""The code blocks of the docs, read as the tests run them, so that a page and its test are one
source: ``docs/evaluations/writing-an-evaluation.md`` as the package it describes, and the YAML
blocks of a README section."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

EVALUATION_PAGE = REPO / "docs/evaluations/writing-an-evaluation.md"

#: A fenced block at the start of a line: its language and its text.
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)

#: The first line of a block that is a file of the package: ``# brightness_eval/spec.py``
#: (``.. brightness_eval/caption.rst`` in reST), or methods to add to a file's class:
#: ``# brightness_eval/spec.py: two more methods of class Brightness``.
FILE_LINE = re.compile(r"^(?:#|\.\.) (?P<path>[\w./]+\.\w+)(?P<more>: .*)?$")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, text)`` of every fenced code block of a Markdown text, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def yaml_after(path: Path, marker: str):
    """The first YAML block after ``marker`` on the page at ``path``, parsed: a page's example
    config that its test runs as written."""
    import yaml

    text = path.read_text()
    after = text[text.index(marker):]
    return yaml.safe_load(after.split("```yaml\n", 1)[1].split("```", 1)[0])


def section(text: str, heading: str) -> str:
    """The Markdown from the line ``heading`` to the next heading of the same level."""
    level = heading.split(" ")[0]
    start = text.index("\n" + heading + "\n")
    end = text.find(f"\n{level} ", start + len(heading) + 2)
    return text[start:end if end != -1 else len(text)]


@dataclass
class EvaluationPage:
    """The writing-an-evaluation page as a user copies it.

    Attributes:
        files: path under the plugins folder (``brightness_eval/spec.py``) -> its text, methods
            shown later on the page added to their class.
        pyproject: the entry-point block (TOML).
        config: the config block that registers the package (YAML).
    """
    files: dict[str, str]
    pyproject: str
    config: str

    def write(self, folder: Path) -> Path:
        """Write the package's files under ``folder`` (the page's plugins folder)."""
        for name, text in self.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        return folder


def _add_methods(source: str, methods: str) -> str:
    """``methods`` (indented, as the page shows them) added to the end of the class before the
    module's ``EVALUATION = ...`` line."""
    head, sep, tail = source.partition("\nEVALUATION = ")
    if not sep:
        raise ValueError("the spec on the page has no 'EVALUATION = ...' line")
    return head.rstrip("\n") + "\n\n" + methods.rstrip("\n") + "\n\n\nEVALUATION = " + tail


def evaluation_page(path: Path = EVALUATION_PAGE) -> EvaluationPage:
    """Every code block of the page, as files, the entry point and the config.

    Raises:
        ValueError: a block that is none of these (a new block the tests would not run), or
            two entry-point or config blocks.
    """
    files: dict[str, str] = {}
    other: dict[str, str] = {}
    for language, text in fenced_blocks(path.read_text(encoding="utf-8")):
        first, _, rest = text.partition("\n")
        line = FILE_LINE.match(first)
        if line and line.group("more"):  # methods of a class shown earlier
            files[line.group("path")] = _add_methods(files[line.group("path")], rest)
        elif line:
            files[line.group("path")] = text
        elif language in ("toml", "yaml") and language not in other:
            other[language] = text
        else:
            raise ValueError(f"{path.name}: a {language or 'plain'} block that is neither a file "
                             f"of the package nor its registration: {first!r}")
    return EvaluationPage(files, other.get("toml", ""), other.get("yaml", ""))


@dataclass
class DocConfig:
    """A YAML block of the docs that is a whole config.

    Attributes:
        where: ``docs/evaluations/vista.md:226``, the block's first line (its fence).
        text: the block as a user copies it.
    """
    where: str
    text: str


def whole_configs(root: Path = REPO / "docs") -> list[DocConfig]:
    """Every YAML block of the Markdown pages under ``root`` that is a whole config: a mapping
    with every top-level key the schema requires (``datasets`` and ``models``), so that a user
    can save it as ``my.yaml`` and run it. Pages in path order, blocks in page order."""
    import yaml

    required = yaml.safe_load((REPO / "config.schema.yaml").read_text())["required"]
    found = []
    for page in sorted(root.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) not in ("yaml", "yml"):
                continue
            block = yaml.safe_load(m.group(2))
            if isinstance(block, dict) and all(key in block for key in required):
                line = text.count("\n", 0, m.start()) + 1
                found.append(DocConfig(f"{page.relative_to(REPO)}:{line}", m.group(2)))
    return found
