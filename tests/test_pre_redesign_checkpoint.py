"""A checkpoint written by the code before the house redesign loads and generates what that code generated
(tests/fixtures/pre_redesign/README.md: one model with every mechanism's parameters, buffers and options)."""
from pathlib import Path

import pytest
from helpers import generate

FIXTURE = Path(__file__).parent / "fixtures" / "pre_redesign"


def lines_by_id(text: str, kind: str):
    """{sentence id: (score, rest)} of the ``H-`` or ``P-`` lines of fairseq-generate's output."""
    out = {}
    for line in text.splitlines():
        if line.startswith(f"{kind}-"):
            head, *rest = line.split("\t")
            out[int(head[2:])] = rest
    return out


@pytest.fixture(scope="module")
def regenerated(tiny_data, single_threaded_tools):
    assert (tiny_data / "dict.src.txt").read_text() == (FIXTURE / "dict.txt").read_text(), \
        "the tiny corpus no longer has the dictionary the fixture was trained with"
    return generate(tiny_data, FIXTURE / "checkpoint.pt", "--batch-size", "8")  # BPE removed from H- lines


def test_same_hypotheses_as_before_the_redesign(regenerated):
    want = lines_by_id((FIXTURE / "generate.txt").read_text(), "H")
    got = lines_by_id(regenerated, "H")
    assert len(want) == 40 and sorted(got) == sorted(want)
    assert {i: r[1] for i, r in got.items()} == {i: (r[1] + " ").replace("@@ ", "").strip() for i, r in want.items()}
    for i in want:
        assert float(got[i][0]) == pytest.approx(float(want[i][0]), abs=1e-4), i


def test_same_positional_scores_as_before_the_redesign(regenerated):
    want = lines_by_id((FIXTURE / "generate.txt").read_text(), "P")
    got = lines_by_id(regenerated, "P")
    assert sorted(got) == sorted(want)
    for i in want:
        a = [float(x) for x in got[i][0].split()]
        b = [float(x) for x in want[i][0].split()]
        assert a == pytest.approx(b, abs=1e-3), i
