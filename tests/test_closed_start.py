"""``--syntax-start`` (issue 51, item 3) on the small bilingual model, in this process: the blend of
``syntrans/modules/closed_start.py`` returns its input bit for bit while closed and not once opened; the option off
(``paper``, the default) builds the very model of before, and ``pretrained`` adds only the closed blends, every other
tensor drawn as the papers' start draws it (NSD's input, which starts as the identity, aside). The step-0 outputs
against real pretrained checkpoints of the three families: tests/test_pretrained_families.py."""
import pytest
import torch
from helpers import build_task_and_model

from syntrans.modules.closed_start import ClosedBlend, closed_blend

pytestmark = pytest.mark.usefixtures("single_threaded_tools")

#: every method that takes heads or changes the embeddings, on the SMALL model (2+2 layers, 4 heads)
EVERY = ["--distance-layers", "0", "--distance-heads", "1", "--pascal-layers", "0", "--pascal-heads", "1",
         "--lisa-layers", "0", "--sla-layers", "0", "--sla-heads", "1", "--gate-layers", "0", "--dbsa-encoder-layers",
         "1", "--dbsa-decoder-layers", "1", "--nsd-kind", "dD", "--nsd-src-input", "linear", "--nsd-src-spe",
         "--nsd-src-output", "--labels-input"]


def test_the_blend_is_its_input_while_closed():
    before, after = torch.randn(2, 3, 5, 5), torch.randn(2, 3, 5, 5)
    assert torch.equal(closed_blend(before, after, torch.zeros(3).view(1, 3, 1, 1)), before)
    blend = ClosedBlend()
    assert torch.equal(blend(before, after), before)
    with torch.no_grad():
        blend.alpha.fill_(0.5)
    assert not torch.allclose(blend(before, after), before)


@pytest.fixture(scope="module")
def models(tiny_data):
    """start → the model of EVERY built with that ``--syntax-start`` (None: the flag left out), seed 1."""
    return {start: build_task_and_model(tiny_data, "syntax_transformer", *EVERY,
                                        *(["--syntax-start", start] if start else []))[1]
            for start in (None, "paper", "pretrained")}


def test_the_option_off_builds_the_model_of_before(models):
    default, paper = models[None].state_dict(), models["paper"].state_dict()
    assert models[None].cfg.syntax_start == "paper" and list(default) == list(paper)
    assert all(torch.equal(default[k], paper[k]) for k in default)
    assert not [k for k in default if k.endswith(".alpha")]


def test_pretrained_adds_closed_blends_only(models):
    """Every α is 0 (a blend that starts open fails here), NSD's linear input starts as [I, 0] with b = 0, and every
    other tensor is the one the papers' start draws."""
    paper, ours = models["paper"].state_dict(), models["pretrained"].state_dict()
    added = sorted(set(ours) - set(paper))
    assert set(paper) <= set(ours)
    assert added == ["encoder.labels.start.alpha", "encoder.layers.0.self_attn.start.alpha",
                     "encoder.nsd.input.spe_start.alpha"], added
    assert ours["encoder.layers.0.self_attn.start.alpha"].shape == (4,)  # distance, PASCAL, LISA, SLA: 4 heads
    assert all(bool((ours[k] == 0).all()) for k in added)
    W, b = ours["encoder.nsd.input.proj.weight"], ours["encoder.nsd.input.proj.bias"]
    C = W.size(0)
    assert torch.equal(W[:, :C], torch.eye(C)) and not W[:, C:].any() and not b.any()
    changed = [k for k in paper if not torch.equal(paper[k], ours[k])]
    assert changed == ["encoder.nsd.input.proj.weight", "encoder.nsd.input.proj.bias"], changed


def test_a_layer_of_heads_that_start_as_stock_is_not_blended(models):
    """DBSA's heads (U = I) need no blend: its layers (1 of each side) have none, so decoding stays incremental."""
    model = models["pretrained"]
    assert model.encoder.layers[1].self_attn.start_key is None
    assert model.decoder.layers[1].self_attn.start_key is None
