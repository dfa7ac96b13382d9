"""A checkpoint written by the code before the house redesign loads and generates what that code generated
(tests/fixtures/pre_redesign/README.md: one model with every mechanism's parameters, buffers and options).

The fixture's model has source NSD with the syntactic PE, which that code computed with the angle d'/(2π λ^{2k/C})
instead of Ma et al. 2019's 2π d'/λ^{2k/C} (Eq. 15-16). The identity check runs with that old angle put back; with
today's (fixed) encoding the checkpoint still loads and generates, and its output legitimately changes."""
import math
from pathlib import Path

import pytest
import torch
from helpers import PRINTED_4DP, USER_DIR, generate

pytestmark = pytest.mark.slow  # trains, translates or installs in other processes (conftest)

FIXTURE = Path(__file__).parent / "fixtures" / "pre_redesign"


def lines_by_id(text: str, kind: str):
    """{sentence id: (score, rest)} of the ``H-`` or ``P-`` lines of fairseq-generate's output."""
    out = {}
    for line in text.splitlines():
        if line.startswith(f"{kind}-"):
            head, *rest = line.split("\t")
            out[int(head[2:])] = rest
    return out


def spe_table_the_checkpoint_was_trained_with(self, shifted: torch.Tensor) -> torch.Tensor:
    """The syntactic PE of the code that wrote the fixture, in float32: angle d' / (2π λ^{2k/C}) (periods 4π² too
    long); kept here only to check that nothing else changed."""
    C = self.embed_dim
    j = torch.arange(0, C, 2, device=shifted.device, dtype=torch.float32)  # 2k
    angle = shifted.unsqueeze(-1) / (2 * math.pi * self.spe_lambda ** (j / C))  # (B, T, C/2)
    pe = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)[..., :C]  # (B, T, C)
    return pe * (shifted > 0).unsqueeze(-1)


def check_fixture_dictionary(tiny_data):
    assert (tiny_data / "dict.src.txt").read_text() == (FIXTURE / "dict.txt").read_text(), \
        "the tiny corpus no longer has the dictionary the fixture was trained with"


@pytest.fixture(scope="module")
def regenerated_old_spe(tiny_data, tmp_path_factory):
    """fairseq-generate's output (in this process, one thread) with the SPE the checkpoint was trained with."""
    from fairseq import options
    from fairseq_cli.generate import main

    from syntrans.mechanisms import nsd as nsd_layers

    check_fixture_dictionary(tiny_data)
    results = tmp_path_factory.mktemp("old_spe")
    parser = options.get_generation_parser()
    args = options.parse_args_and_arch(parser, [
        str(tiny_data), "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", str(FIXTURE / "checkpoint.pt"),
        "--gen-subset", "test", "--beam", "3", "--batch-size", "8", "--remove-bpe", "--num-workers", "0",
        "--results-path", str(results)])
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nsd_layers.NsdInput, "spe_table", spe_table_the_checkpoint_was_trained_with)
        torch.set_num_threads(1)
        try:
            main(args)
        finally:
            torch.set_num_threads(threads)
    return (results / "generate-test.txt").read_text()


@pytest.fixture(scope="module")
def regenerated(tiny_data, single_threaded_tools):
    """fairseq-generate's output with today's code (the fixed SPE)."""
    check_fixture_dictionary(tiny_data)
    return generate(tiny_data, FIXTURE / "checkpoint.pt", "--batch-size", "8")  # BPE removed from H- lines


def test_same_hypotheses_as_before_the_redesign(regenerated_old_spe):
    want = lines_by_id((FIXTURE / "generate.txt").read_text(), "H")
    got = lines_by_id(regenerated_old_spe, "H")
    assert len(want) == 40 and sorted(got) == sorted(want)
    assert {i: r[1] for i, r in got.items()} == {i: (r[1] + " ").replace("@@ ", "").strip() for i, r in want.items()}
    for i in want:
        assert float(got[i][0]) == pytest.approx(float(want[i][0]), abs=PRINTED_4DP), i


def test_same_positional_scores_as_before_the_redesign(regenerated_old_spe):
    want = lines_by_id((FIXTURE / "generate.txt").read_text(), "P")
    got = lines_by_id(regenerated_old_spe, "P")
    assert sorted(got) == sorted(want)
    for i in want:
        a = [float(x) for x in got[i][0].split()]
        b = [float(x) for x in want[i][0].split()]
        assert a == pytest.approx(b, abs=1e-3), i


def test_fixed_spe_loads_and_generates(regenerated, regenerated_old_spe):
    """With Ma et al. 2019's SPE (Eq. 15-16) the checkpoint loads and translates every test sentence; its source
    SPE now differs from the one it was trained with, so some scores change."""
    got = lines_by_id(regenerated, "P")
    old = lines_by_id(regenerated_old_spe, "P")
    assert sorted(got) == sorted(old) == list(range(40))
    assert all(r[0].split() and all(math.isfinite(float(x)) for x in r[0].split()) for r in got.values())
    assert any(got[i][0].split() != old[i][0].split() for i in got)


def test_old_keys_load_under_todays_modules(tiny_data):
    """The fixture's NSD parts were ``encoder.nsd_input``/``encoder.nsd_classifier`` and fairseq's
    ``decoder.project_in_dim``; today each side's NSD is one module (``encoder.nsd``, ``decoder.nsd``): the weights
    load there, unchanged, and fairseq's own ``project_in_dim`` stays empty. Its flat config (layer lists as strings)
    reads through today's typed one."""
    from fairseq import checkpoint_utils

    import syntrans  # noqa: F401  (allow-lists the checkpoint's classes)

    state = torch.load(FIXTURE / "checkpoint.pt", weights_only=True, map_location="cpu")
    old = state["model"]
    assert "decoder.project_in_dim.embed.weight" in old and "encoder.nsd_input.embed.weight" in old
    models, cfg, _ = checkpoint_utils.load_model_ensemble_and_task([str(FIXTURE / "checkpoint.pt")],
                                                                   arg_overrides={"data": str(tiny_data)})
    model = models[0]
    new = model.state_dict()
    for before, now in (("decoder.project_in_dim.", "decoder.nsd.input."), ("encoder.nsd_input.", "encoder.nsd.input."),
                        ("encoder.nsd_classifier.", "encoder.nsd.classifier."),
                        ("decoder.nsd_classifier.", "decoder.nsd.classifier.")):
        keys = [k for k in old if k.startswith(before)]
        assert keys, before
        for k in keys:
            assert torch.equal(new[now + k[len(before):]], old[k]), k
    assert model.decoder.project_in_dim is None
    assert model.plan.block_keys("encoder", 0) == ("distance", "pascal", "lisa", "dbsa")
    assert model.plan.block_keys("encoder", 1) == ("distance",) and model.encoder.layers[1].self_attn.mixer_key == "gate"
