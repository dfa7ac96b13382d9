"""PASCAL and LISA end to end with stock fairseq tools: fairseq-train → fairseq-generate, and the LISA oracle
(``--model-overrides "{'lisa': {'gold_parents': True}}"``) through fairseq-validate."""
import math
import re
import subprocess

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.modules import MultiheadAttention
from helpers import (
    BIN,
    N_TEST,
    UPDATES,
    USER_DIR,
    check_generate_bleu,
    generate,
    lisa_attachments,
    metric,
    metric_lines,
    run,
    short_runs,
)

from syntrans.models.config import model_config
from syntrans.modules.syntax_attention import SyntaxMultiheadAttention

pytestmark = pytest.mark.slow  # trains, translates or installs in other processes (conftest)

WMT_HEADS = ["--encoder-attention-heads", "8"]  # 32 / 8 = 4 per head; the WMT PASCAL preset asks for 5 heads


def layer(num_heads, *blocks):
    """An encoder layer's expected self-attention: ``num_heads`` heads, ``blocks`` its head blocks in head order as
    (mechanism key, number of heads), consecutive from head 0; no blocks: fairseq's stock attention."""
    return num_heads, tuple(blocks)


# name: (argv after SMALL, expected nested model cfg fields {group: {field: value}}, expected self-attention per
# encoder layer, has LISA)
CASES = {
    "pascal_wmt": (["--arch", "pascal_transformer_wmt_en_de", *WMT_HEADS],
                   {"pascal": {"layers": [0], "heads": 5}, "lisa": {"layers": []}},
                   [layer(8, ("pascal", 5)), layer(8)], False),
    "pascal_iwslt": (["--arch", "pascal_transformer_iwslt_de_en"],
                     {"pascal": {"layers": [0], "heads": 2}, "lisa": {"layers": []}},
                     [layer(4, ("pascal", 2)), layer(4)], False),
    "lisa_wmt": (["--arch", "lisa_transformer_wmt_en_de", *WMT_HEADS],
                 {"lisa": {"layers": [0], "gold_parents": False}, "pascal": {"heads": 0}},
                 [layer(8, ("lisa", 1)), layer(8)], True),
    "lisa_iwslt": (["--arch", "lisa_transformer_iwslt_de_en"],
                   {"lisa": {"layers": [0], "weight": 1.0}, "pascal": {"heads": 0}},
                   [layer(4, ("lisa", 1)), layer(4)], True),
    "distance2_pascal2": (["--arch", "distance_transformer_iwslt_de_en", "--distance-heads", "2",
                           "--pascal-layers", "0", "--pascal-heads", "2"],
                          {"distance": {"layers": [0], "heads": 2}, "pascal": {"layers": [0], "heads": 2},
                           "lisa": {"layers": []}},
                          [layer(4, ("distance", 2), ("pascal", 2)), layer(4)], False),
    "pascal0_lisa1": (["--arch", "pascal_transformer_iwslt_de_en", "--lisa-layers", "1"],
                      {"pascal": {"layers": [0], "heads": 2}, "lisa": {"layers": [1]}},
                      [layer(4, ("pascal", 2)), layer(4, ("lisa", 1))], True),
}

@pytest.fixture(scope="module")
def trained(tiny_data, tmp_path_factory):
    """Train each case at most once per module: name → (checkpoint path, training log)."""
    return short_runs(tiny_data, tmp_path_factory, lambda name: CASES[name][0])


@pytest.fixture(scope="module")
def generated(tiny_data, trained):
    """fairseq-generate on the test split with each case's checkpoint, at most once per module: name → output."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = generate(tiny_data, trained(name)[0])
        return cache[name]

    return get


def validate(data, ckpt, *extra):
    out = run("fairseq-validate", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", ckpt,
              "--valid-subset", "valid", "--max-tokens", "1000", "--num-workers", "0", *extra)
    lines = metric_lines(out, "valid")
    assert len(lines) == 1, out[-3000:]
    return lines[0]


@pytest.mark.parametrize("name", list(CASES))
def test_train_generate(name, tiny_data, trained, generated):
    _, expected_cfg, expected_plans, has_lisa = CASES[name]
    ckpt, log = trained(name)
    assert re.search(rf"num_updates[ =]{UPDATES}\b", log), log[-2000:]

    kinds = {kind: metric_lines(log, kind) for kind in ("train_inner", "train", "valid")}
    assert len(kinds["train_inner"]) == UPDATES and kinds["train"] and kinds["valid"], log[-3000:]
    for kind, lines in kinds.items():
        for line in lines:
            for key in ("loss", "nll_loss"):
                value = metric(line, key)
                assert value is not None and math.isfinite(value), (kind, key, line)
            lisa, uas = metric(line, "lisa"), metric(line, "lisa_uas")
            if has_lisa:
                assert lisa is not None and math.isfinite(lisa) and lisa > 0, (kind, line)
                assert uas is not None and math.isfinite(uas) and 0.0 <= uas <= 100.0, (kind, line)
            else:
                assert lisa is None and uas is None and "lisa" not in line, (kind, line)

    out = generated(name)
    hyps = re.findall(r"^H-(\d+)\t", out, flags=re.M)
    assert sorted(map(int, hyps)) == list(range(N_TEST)), out[-2000:]  # every test sentence, none dropped
    bleu = check_generate_bleu(out)  # fairseq's BLEU4 line against the one computed here from the H-/T- lines
    assert bleu["precisions"][0] > 0, bleu  # the hypotheses share words with the references: the check is not 0 = 0

    # the checkpoint loads with torch's safe loader (syntrans imported) and holds the syntax options (read through
    # the config's one adapter: by group)
    state = torch.load(ckpt, weights_only=True, map_location="cpu")
    model_cfg = model_config(state["cfg"]["model"])
    for group, fields in expected_cfg.items():
        for key, value in fields.items():
            got = getattr(getattr(model_cfg, group), key)
            assert got == value, (group, key, got, value)
    # LISA's bi-affine U exists exactly in the LISA layers, with head_dim + 1 rows
    u_keys = sorted(k for k in state["model"] if k.endswith("self_attn.lisa.U"))
    lisa_layers = [i for i, (_, blocks) in enumerate(expected_plans) if "lisa" in dict(blocks)]
    assert u_keys == [f"encoder.layers.{i}.self_attn.lisa.U" for i in lisa_layers]
    for i, key in zip(lisa_layers, u_keys):
        head_dim = 32 // expected_plans[i][0]
        assert tuple(state["model"][key].shape) == (head_dim + 1, head_dim)
    if not has_lisa:
        assert not u_keys

    # the head allocation the checkpoint rebuilds into: distance, then PASCAL, then LISA, from head 0
    models, _ = checkpoint_utils.load_model_ensemble([str(ckpt)], arg_overrides={"data": str(tiny_data)})
    layers = models[0].encoder.layers
    assert len(layers) == len(expected_plans)
    for i, (enc_layer, (num_heads, blocks)) in enumerate(zip(layers, expected_plans)):
        attn = enc_layer.self_attn
        assert attn.num_heads == num_heads, (i, attn.num_heads)
        if not blocks:  # no syntax heads: fairseq's stock attention
            assert type(attn) is MultiheadAttention, (i, type(attn))
            continue
        assert isinstance(attn, SyntaxMultiheadAttention), (i, type(attn))
        assert attn.block_keys == tuple(key for key, _ in blocks), (i, attn.block_keys)
        start, slices = 0, []
        for _, n in blocks:
            slices.append(slice(start, start + n))
            start += n
        assert [b.heads for b in attn.blocks] == slices, (i, [b.heads for b in attn.blocks])
        assert [b.num_heads for b in attn.blocks] == [n for _, n in blocks]
        assert attn.syntax_heads == start and attn.mixer is None
        for key, _ in blocks:
            assert getattr(attn, key) is attn.blocks[attn.block_keys.index(key)]


def split_attachments(data, ckpt, split):
    """(hits, tokens with a parent) of the LISA head of ``ckpt`` over ``split``, sentence by sentence (no padding)."""
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(ckpt)], arg_overrides={"data": str(data)})
    model = models[0].eval()
    task.load_dataset(split)
    ds = task.dataset(split)
    counts = [lisa_attachments(model, ds.collater([ds[i]])) for i in range(len(ds))]
    return sum(h for h, _ in counts), sum(n for _, n in counts)


def test_lisa_gold_parents_oracle(tiny_data, trained, generated):
    """The oracle replaces the LISA head's attention at evaluation: the translation loss moves, while the LISA
    loss and attachment score (measured on the head's own learned distribution) stay as they were."""
    ckpt, _ = trained("lisa_iwslt")
    plain = validate(tiny_data, ckpt)
    oracle = validate(tiny_data, ckpt, "--model-overrides", "{'lisa': {'gold_parents': True}}")
    values = {}
    for tag, line in (("plain", plain), ("oracle", oracle)):
        values[tag] = {k: metric(line, k) for k in ("loss", "nll_loss", "lisa", "lisa_uas")}
        assert all(v is not None and math.isfinite(v) for v in values[tag].values()), (tag, line)
    hits, words = split_attachments(tiny_data, ckpt, "valid")
    assert 0 < hits < words  # a score strictly between 0 and 100: the comparison below is not 0 = 0
    assert values["plain"]["lisa_uas"] == pytest.approx(100.0 * hits / words, abs=0.0051), (plain, hits, words)
    assert values["oracle"]["nll_loss"] != values["plain"]["nll_loss"], (plain, oracle)
    assert values["oracle"]["loss"] != values["plain"]["loss"], (plain, oracle)
    assert values["oracle"]["lisa"] == values["plain"]["lisa"], (plain, oracle)
    assert values["oracle"]["lisa_uas"] == values["plain"]["lisa_uas"], (plain, oracle)

    # the override reaches generation too: the hypotheses' scores (and possibly words) change
    hyps = {}
    for tag, out in (("plain", generated("lisa_iwslt")),
                     ("oracle", generate(tiny_data, ckpt, "--model-overrides", "{'lisa': {'gold_parents': True}}"))):
        hyps[tag] = {int(i): (float(score), text) for i, score, text in re.findall(r"^H-(\d+)\t(\S+)\t(.*)$", out, flags=re.M)}
        assert sorted(hyps[tag]) == list(range(N_TEST)), out[-2000:]
    assert hyps["plain"] != hyps["oracle"]


def test_lisa_translates_raw_input_with_fairseq_interactive(tiny_data, trained):
    """LISA needs no parse to translate: stock fairseq-interactive works on plain BPE input (PASCAL is refused)."""
    lines = (tiny_data.parent / "test.bpe.src").read_text().splitlines()[:3]

    def interactive(ckpt):
        return subprocess.run([str(BIN / "fairseq-interactive"), str(tiny_data), "--user-dir", USER_DIR, "--task",
                               "syntax_translation", "--path", str(ckpt), "--beam", "2", "--remove-bpe"],
                              input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300)

    p = interactive(trained("lisa_iwslt")[0])
    assert p.returncode == 0, p.stderr[-2000:]
    assert sorted(int(i) for i in re.findall(r"^H-(\d+)\t", p.stdout, flags=re.M)) == [0, 1, 2]
    p = interactive(trained("pascal_iwslt")[0])
    assert p.returncode != 0 and "interactive translation needs syntax features" in p.stderr
