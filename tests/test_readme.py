"""The README serves the user first: its first screen says what syntrans does, how to install it and the two
commands, and names none of the test suite's machinery (that is docs/testing.md, which the README links)."""
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast
ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: a screen of a terminal or a rendered page: the lines a reader sees before scrolling
FIRST_SCREEN = 30
MACHINERY = ("pytest", "fork server", "forkserver", "hydra", "tier", "conftest", "xdist", "worker")


def test_the_first_screen_names_no_test_machinery():
    first = "\n".join(README.splitlines()[:FIRST_SCREEN]).lower()
    assert [w for w in MACHINERY if w in first] == []
    assert "make demo" in first and "make test" in first and "install" in first


def test_the_sections_come_in_the_users_order():
    heads = [line[3:] for line in README.splitlines() if line.startswith("## ")]
    assert heads[0] == "Install and run" and heads[1].startswith("Your own corpus")
    assert heads.index("Installation details") == len(heads) - 1


def test_every_relative_link_of_the_readme_and_docs_resolves():
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", md.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (md.parent / target).exists(), f"{md.relative_to(ROOT)}: link to {target} leads nowhere"


def test_the_test_suites_machinery_is_documented_for_contributors():
    testing = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert "(docs/testing.md)" in README
    for word in ("fork server", "`slow`", "`fast`", "make test-durations", "tests/file_durations.json"):
        assert word in testing, word
