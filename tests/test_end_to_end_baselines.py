"""The papers' baseline systems end to end on the synthetic corpus with stock fairseq tools (fairseq-train →
fairseq-generate): SLA (the gated paper's Table 3 baseline) and +S&H (Bugliarello & Okazaki 2020, Table 1). +MULTI-TASK
is a plain Transformer on other data: tests/test_multitask.py trains and decodes it; tests/test_stanza_pipeline.py
runs all three on real captions parsed by stanza."""
import math
import re

import pytest
import torch
from fairseq import checkpoint_utils
from helpers import N_TEST, check_generate_bleu, generate, metric, metric_lines, run, tiny_train_argv

from syntrans.models.config import model_config
from syntrans.modules.syntax_attention import SyntaxMultiheadAttention
from syntrans.syntax.deprels import N_LABELS

pytestmark = pytest.mark.slow  # trains and translates in other processes (conftest)

CASES = {"sla": ["--arch", "sla_transformer_iwslt_de_en"], "sh": ["--arch", "sh_transformer_wmt_en_de"]}


UPDATES = 40  # enough for hypotheses that share words with the references (4 updates give none)


@pytest.fixture(scope="module")
def trained(tiny_data, tmp_path_factory):
    """name → (checkpoint_last.pt, training log) of UPDATES updates, each name trained once."""
    cache = {}

    def get(name):
        if name not in cache:
            save = tmp_path_factory.mktemp(name)
            log = run("fairseq-train", *tiny_train_argv(tiny_data, save, *CASES[name], "--lr", "2e-3",
                                                        "--warmup-updates", "10", "--lr-scheduler", "inverse_sqrt",
                                                        "--max-update", UPDATES, "--log-interval", "10"))
            cache[name] = (save / "checkpoint_last.pt", log)
        return cache[name]

    return get


def _train_generate(name, tiny_data, trained):
    """The run's checkpoint state and log, after checking the log's losses and the test set's hypotheses and BLEU."""
    ckpt, log = trained(name)
    assert re.search(rf"num_updates[ =]{UPDATES}\b", log), log[-2000:]
    for line in metric_lines(log, "train") + metric_lines(log, "valid"):
        assert math.isfinite(metric(line, "loss")) and math.isfinite(metric(line, "nll_loss")), line
    out = generate(tiny_data, ckpt)
    hyps = re.findall(r"^H-(\d+)\t", out, flags=re.M)
    assert sorted(map(int, hyps)) == list(range(N_TEST)), out[-2000:]  # every test sentence, none dropped
    assert check_generate_bleu(out)["precisions"][0] > 0  # BLEU recomputed from the H-/T- lines, not 0 = 0
    return ckpt, log


def test_sla_trains_and_decodes_with_its_gate_in_every_layer(tiny_data, trained):
    """SLA heads (all 4 of every encoder layer, window of 2 arcs) mixed with stock attention by the unregularised
    per-head gate (Hou et al., gated self-attention, §5.2): the gate's values are logged at validation, and the
    checkpoint rebuilds the blocks and the gate."""
    ckpt, log = _train_generate("sla", tiny_data, trained)
    valid = metric_lines(log, "valid")
    for layer in (0, 1):
        for head in range(4):
            g = metric(valid[-1], f"gate_l{layer}h{head}")
            assert g is not None and 0.0 < g < 1.0, (layer, head, valid[-1])
    state = torch.load(ckpt, weights_only=True, map_location="cpu")
    stored = model_config(state["cfg"]["model"])  # the stored config, read through the config's one adapter
    assert stored.sla.threshold == 2 and stored.sla.heads == 4
    assert not any("bn" in k for k in state["model"] if ".gate." in k)  # no BatchNorm: SLA's gate is unregularised
    models, _ = checkpoint_utils.load_model_ensemble([str(ckpt)], arg_overrides={"data": str(tiny_data)})
    for layer in models[0].encoder.layers:
        attn = layer.self_attn
        assert isinstance(attn, SyntaxMultiheadAttention) and attn.block_keys == ("sla",)
        assert attn.mixer is not None and attn.blocks[0].heads == slice(0, 4)


def test_sh_trains_and_decodes_with_its_label_embedding(tiny_data, trained):
    """+S&H: a 10-dimensional embedding of the UD relations (and 'other', EOS, padding) whose output replaces the
    last 10 dimensions of each source token's embedding; fairseq's stock attention everywhere."""
    ckpt, _ = _train_generate("sh", tiny_data, trained)
    state = torch.load(ckpt, weights_only=True, map_location="cpu")
    assert tuple(state["model"]["encoder.labels.embed.weight"].shape) == (N_LABELS + 2, 10)
    stored = model_config(state["cfg"]["model"])  # the stored config, read through the config's one adapter
    assert stored.labels.input is True and stored.labels.embed_dim == 10
    models, _ = checkpoint_utils.load_model_ensemble([str(ckpt)], arg_overrides={"data": str(tiny_data)})
    assert not any(isinstance(m, SyntaxMultiheadAttention) for m in models[0].modules())
