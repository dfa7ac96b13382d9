"""A checkpoint of the version whose config was nested and typed with flat copies beside the groups
(tests/fixtures/typed_config/README.md): today's code loads it through the config's one adapter and generates what
that code generated; --model-overrides reach it in both spellings, and a misspelt one is refused."""
from pathlib import Path

import pytest
import torch
from helpers import PRINTED_4DP, generate
from test_checkpoint_of_the_old_layout import lines_by_id

pytestmark = pytest.mark.slow  # translates in other processes (conftest)

FIXTURE = Path(__file__).parent / "fixtures" / "typed_config"
DICT = Path(__file__).parent / "fixtures" / "pre_redesign" / "dict.txt"


@pytest.fixture(scope="module")
def fixture_data(tiny_data, single_threaded_tools):
    assert (tiny_data / "dict.src.txt").read_text() == DICT.read_text(), \
        "the tiny corpus no longer has the dictionary the fixture was trained with"
    return tiny_data


_RUNS = {}


def generated(data, *extra):
    """fairseq-generate's output with the fixture (each set of flags run once per session)."""
    if extra not in _RUNS:
        _RUNS[extra] = generate(data, FIXTURE / "checkpoint.pt", "--batch-size", "8", *extra)
    return _RUNS[extra]


def test_the_stored_config_is_the_old_typed_form():
    import syntrans  # noqa: F401  (allow-lists the checkpoint's classes)
    from syntrans.models.config import model_config

    stored = torch.load(FIXTURE / "checkpoint.pt", weights_only=True, map_location="cpu")["cfg"]["model"]
    assert stored["lisa"]["layers"] == [0] and stored["lisa_layers"] is None and stored["preset"] == "syntax_transformer"
    typed = model_config(stored)
    assert (typed.distance.layers, typed.sla.layers, typed.gate.layers, typed.nsd.src_input) == ([0, 1], [1], [1], "linear")
    assert typed.nsd.src_min is not None and typed.labels.embed_dim == 4


def test_same_hypotheses_and_scores_as_the_code_that_wrote_it(fixture_data):
    out = generated(fixture_data)
    for kind in ("H", "P"):
        want, got = lines_by_id((FIXTURE / "generate.txt").read_text(), kind), lines_by_id(out, kind)
        assert len(want) == 40 and sorted(got) == sorted(want)
        for i in want:
            a, b = [float(x) for x in got[i][0].split()], [float(x) for x in want[i][0].split()]
            assert a == pytest.approx(b, abs=PRINTED_4DP), (kind, i)
            if kind == "H":
                assert got[i][1] == (want[i][1] + " ").replace("@@ ", "").strip(), i  # generate() removes BPE


@pytest.mark.parametrize("override", ["{'lisa': {'gold_parents': True}}", "{'lisa_gold_parents': True}"])
def test_overrides_reach_it_in_either_spelling(fixture_data, override):
    """The oracle changes the LISA head's attention and so the hypotheses: both spellings give the same ones, and not
    the plain model's (the flat spelling has no key in this stored form, so fairseq itself drops it: the model's
    build applies it)."""
    plain = lines_by_id(generated(fixture_data), "H")
    oracle = lines_by_id(generated(fixture_data, "--model-overrides", override), "H")
    other = lines_by_id(generated(fixture_data, "--model-overrides", "{'lisa': {'gold_parents': True}}"), "H")
    assert oracle == other and oracle != plain


def test_a_misspelt_override_is_refused_naming_the_nearest_field(fixture_data):
    import subprocess

    from helpers import BIN, USER_DIR

    p = subprocess.run([str(BIN / "fairseq-generate"), str(fixture_data), "--user-dir", USER_DIR, "--task",
                        "syntax_translation", "--path", str(FIXTURE / "checkpoint.pt"), "--gen-subset", "test",
                        "--model-overrides", "{'lisa': {'gold_parent': True}}"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode != 0
    assert "group 'lisa' has no field 'gold_parent'; did you mean 'gold_parents'" in p.stderr
