"""The parity tables of the evaluation pages (docs/parity.md links them) name tests that exist:
a renamed or deleted test cannot leave a column of the docs pointing at nothing."""
import re

import pytest
from conftest import REPO

PAGES = ["vtbench", "vista", "telephone", "chd", "medibench"]
#: ``test_name``, ``file.py::test_name``, ``::test_name`` (same file as before), ``[param]``.
NAMED = re.compile(r"`(?:(?:tests/)?(test_\w+\.py))?(?:::)?(test_\w+)(?:\[[^\]]*\])?`")


def parity_rows(page: str) -> list[str]:
    """The table rows of the page's parity section (the heading with "Parity")."""
    text = (REPO / "docs/evaluations" / f"{page}.md").read_text()
    start = re.search(r"^#+ Parity.*$", text, re.M)
    assert start, f"{page}.md has no parity section"
    rest = text[start.end():]
    end = re.search(r"^#+ ", rest, re.M)
    return [line for line in rest[:end.start() if end else None].splitlines()
            if line.startswith("|") and not line.startswith("|---")][1:]


def defined_tests() -> dict[str, set[str]]:
    """test file name -> the test functions it defines."""
    return {p.name: set(re.findall(r"^def (test_\w+)", p.read_text(), re.M))
            for p in (REPO / "tests").glob("test_*.py")}


@pytest.mark.parametrize("page", PAGES)
def test_every_named_test_exists(page):
    tests = defined_tests()
    everywhere = set().union(*tests.values())
    rows = parity_rows(page)
    assert rows, f"{page}.md's parity table is empty"
    named = 0
    for row in rows:
        last_file = None
        for file, name in NAMED.findall(row.split("|")[-2]):
            last_file = file or last_file
            where = tests.get(last_file, set()) if last_file else everywhere
            assert name in where, f"{page}.md names {last_file or ''}::{name}, which is not defined"
            named += 1
    assert named >= len(rows)


def test_the_index_links_every_page():
    text = (REPO / "docs/parity.md").read_text()
    for page in PAGES:
        assert f"(evaluations/{page}.md#parity" in text
