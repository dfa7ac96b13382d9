"""NSD (Ma et al. 2019) in the model: input embedding modes and syntactic PE against their formulas, L_dist's
pairwise term against a double loop, clipping of unseen values, per-token features, the value range fixed from
the training split, and target NSD in incremental decoding and beam search."""
import math

import numpy as np
import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator
from helpers import build_task_and_model

from syntrans.data.features import BOS_NSD, NO_NSD
from syntrans.modules.nsd_layers import NsdInput, nsd_losses
from syntrans.syntax.align import pieces_per_word
from syntrans.syntax.nsd import nsd

C = 8


@pytest.mark.fast
def test_input_modes_equal_their_formulas():
    torch.manual_seed(0)
    values = torch.tensor([[BOS_NSD, -2, 0, 3, NO_NSD]])
    x = torch.randn(1, 5, C)
    for mode in ("concat", "add", "linear", "none"):
        layer = NsdInput(mode, C, 3, v_min=-2, v_max=3, spe=True, spe_lambda=40.0)
        out = layer(x, values)
        for t, v in enumerate(values[0].tolist()):
            row = {BOS_NSD: 1, NO_NSD: 0}.get(v, v + 2 + 2)  # rows: 0 none, 1 BOS, 2 + (v − v_min)
            e = layer.embed.weight[row] if mode != "none" else None
            want = {"concat": lambda: torch.cat([x[0, t, : C - 3], e]), "add": lambda: x[0, t] + e,
                    "linear": lambda: layer.proj.weight @ torch.cat([x[0, t], e]) + layer.proj.bias,
                    "none": lambda: x[0, t]}[mode]()
            shifted = v - (-2) + 1 if v > NO_NSD else 0  # d' = d − v_min + 1, 0 without a value
            spe = torch.zeros(C)
            if shifted:
                for j in range(0, C, 2):
                    angle = shifted / (2 * math.pi * 40.0 ** (j / C))
                    spe[j], spe[j + 1] = math.sin(angle), math.cos(angle)
            torch.testing.assert_close(out[0, t], want + spe, atol=1e-5, rtol=1e-5)
        if mode != "none":
            assert torch.equal(layer.embed.weight[0], torch.zeros_like(layer.embed.weight[0]))  # no value: zero row


@pytest.mark.fast
def test_unseen_values_are_clipped_and_counted():
    layer = NsdInput("add", C, 0, v_min=-1, v_max=2)
    values = torch.tensor([[-5, -1, 2, 7, NO_NSD]])
    out = layer(torch.zeros(1, 5, C), values)
    assert layer.clipped == 2
    torch.testing.assert_close(out[0, 0], layer.embed.weight[2])  # −5 → −1, the first class
    torch.testing.assert_close(out[0, 3], layer.embed.weight[2 + 3])  # 7 → 2, the last class
    logits = torch.zeros(1, 5, 4)
    *_, count, clipped = nsd_losses(logits, values, -1, 2)
    assert int(count) == 4 and int(clipped) == 2


@pytest.mark.fast
def test_dist_loss_equals_a_double_loop():
    """L_dist = Σ(d − d̂)² + Σ_{j>i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊ per sentence, over real tokens only."""
    g = torch.Generator().manual_seed(1)
    v_min, v_max = -2, 3
    values = torch.tensor([[1, -2, 3, 0, NO_NSD], [NO_NSD, NO_NSD, 2, 2, -1]])  # padding on either side
    logits = torch.randn(2, 5, v_max - v_min + 1, generator=g)
    ce, dist, count, _ = nsd_losses(logits, values, v_min, v_max)
    p = torch.softmax(logits, -1)
    want_ce = want_dist = 0.0
    for b in range(2):
        real = [t for t in range(5) if values[b, t] > NO_NSD]
        d = {t: float(values[b, t]) for t in real}
        dh = {t: sum(float(p[b, t, k]) * (v_min + k) for k in range(p.size(-1))) for t in real}
        for t in real:
            want_ce -= math.log(float(p[b, t, int(values[b, t]) - v_min]))
            want_dist += (d[t] - dh[t]) ** 2
        for i in real:
            for j in real:
                if j > i:
                    sign = (d[i] > d[j]) - (d[i] < d[j])
                    want_dist += max(0.0, 1 - sign * (dh[i] - dh[j]))
    assert int(count) == 7
    assert float(ce) == pytest.approx(want_ce, rel=1e-5)
    assert float(dist) == pytest.approx(want_dist, rel=1e-5)


# ---- the model on the tiny synthetic corpus ----

def nsd_model(data, arch="nsd_transformer_base", *extra):
    task, model = build_task_and_model(data, arch, "--nsd-embed-dim", "8", *extra)
    task.load_dataset("valid")
    return task, model.eval(), task.dataset("valid")


def word_values(side, index, kind="dD"):
    """NSD of each word of one (single-sentence) line of the synthetic corpus, from its heads, by :func:`nsd`."""
    heads = side["head"][index].tolist()
    return nsd(heads, kind)


def test_features_carry_each_words_value_on_every_subword(tiny_data):
    _, _, ds = nsd_model(tiny_data)
    item = ds[3]
    src_w = word_values(ds.src_side, 3)
    pieces = pieces_per_word(ds.src_side["word"][3])
    assert item["src_nsd_dD"].tolist() == [v for v, n in zip(src_w, pieces) for _ in range(n)] + [NO_NSD]
    tgt_w = word_values(ds.tgt_side, 3)
    sub = [v for v, n in zip(tgt_w, pieces_per_word(ds.tgt_side["word"][3])) for _ in range(n)]
    assert item["tgt_nsd_in_dD"].tolist() == [BOS_NSD] + sub  # decoder input: BOS, y_1 … y_n
    assert item["tgt_nsd_out_dD"].tolist() == sub + [NO_NSD]  # labels of the target tokens; EOS has none
    assert len(sub) + 1 == len(item["target"]) and len(pieces) > 0 and max(pieces) > 1  # some word has several pieces


def test_value_range_is_the_training_splits(tiny_data):
    task, model, _ = nsd_model(tiny_data)
    task.load_dataset("train")
    ds = task.dataset("train")
    for side, nsd_side in ((ds.src_side, model.encoder.nsd), (ds.tgt_side, model.decoder.nsd)):
        values = [v for i in range(len(ds)) for v in word_values(side, i)]
        assert (nsd_side.v_min, nsd_side.v_max) == (min(values), max(values))
    assert model.decoder.nsd_classifier.out.out_features == model.decoder.nsd.v_max - model.decoder.nsd.v_min + 1


def forced_steps(model, net, tokens):
    """Decode one sentence step by step along ``tokens`` (1, n; EOS last) with fairseq's incremental state:
    per-step log-prob of the next token, and the NSD fed at each step (BOS first, then predictions)."""
    enc = model.encoder.forward_torchscript(net)
    state, scores, fed = {}, [], []
    prev = torch.cat([tokens.new_full((1, 1), model.decoder.dictionary.eos()), tokens[:, :-1]], dim=1)
    for t in range(tokens.size(1)):
        out = model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)
        fed.append(int(model.decoder.project_in_dim.last_fed))  # recorded by the record_fed fixture
        lp = model.get_normalized_probs(out, log_probs=True)[0, -1]
        scores.append(float(lp[tokens[0, t]]))
    return scores, fed, prev


@pytest.fixture
def record_fed(monkeypatch):
    """Remember the NSD value the decoder's input layer got at its last call (the current step)."""
    from syntrans.modules import nsd_layers

    original = nsd_layers.NsdInput.forward

    def forward(self, x, values=None):
        v = self.values if values is None else values
        out = original(self, x, values)
        self.last_fed = v[:, -1].clone()
        return out

    monkeypatch.setattr(nsd_layers.NsdInput, "forward", forward)


def test_incremental_decoding_equals_a_full_forward_fed_the_same_nsd(tiny_data, record_fed):
    task, model, ds = nsd_model(tiny_data)
    sample = ds.collater([ds[5]])
    net = {k: v for k, v in sample["net_input"].items() if k not in ("prev_output_tokens", "tgt_nsd_in_dD", "tgt_nsd_out_dD")}
    tokens = sample["target"]  # the reference as the forced path
    with torch.no_grad():
        scores, fed, prev = forced_steps(model, net, tokens)
        assert fed[0] == BOS_NSD and len(set(fed[1:])) > 1  # predictions, not constants
        full = model(prev_output_tokens=prev, tgt_nsd_in_dD=torch.tensor([fed]), **net)
        lp = model.get_normalized_probs(full, log_probs=True)[0]
        want = lp.gather(-1, tokens[0].unsqueeze(-1)).squeeze(-1)
        torch.testing.assert_close(torch.tensor(scores), want, atol=1e-4, rtol=1e-4)
        # the gold NSD sequence instead gives other scores: the fed values matter
        gold = model(prev_output_tokens=prev, tgt_nsd_in_dD=sample["net_input"]["tgt_nsd_in_dD"], **net)
        assert not torch.allclose(model.get_normalized_probs(gold, log_probs=True)[0], lp, atol=1e-3)


def test_beam_search_keeps_each_hypothesis_nsd_history(tiny_data, record_fed):
    """Every hypothesis of a beam of 4 scores exactly as decoding its own tokens alone: its NSD inputs were its
    own predictions, whatever reordering the beam did."""
    task, model, ds = nsd_model(tiny_data)
    sample = ds.collater([ds[i] for i in (5, 9)])
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=12)
    with torch.no_grad():
        hypos = gen.generate([model], sample)
    net = {k: v for k, v in sample["net_input"].items() if k not in ("prev_output_tokens", "tgt_nsd_in_dD", "tgt_nsd_out_dD")}
    distinct = 0
    for b, hyps in enumerate(hypos):
        one = {k: v[b:b + 1] for k, v in net.items()}
        distinct += len({tuple(h["tokens"].tolist()) for h in hyps})
        for h in hyps:
            with torch.no_grad():
                scores, _, _ = forced_steps(model, one, h["tokens"].unsqueeze(0))
            torch.testing.assert_close(torch.tensor(scores), h["positional_scores"], atol=1e-4, rtol=1e-4)
    assert distinct >= 6  # the hypotheses diverge


def test_generation_needs_no_target_nsd_but_teacher_forcing_does(tiny_data):
    task, model, ds = nsd_model(tiny_data)
    sample = ds.collater([ds[i] for i in range(3)])
    net = dict(sample["net_input"])
    del net["tgt_nsd_in_dD"]
    with pytest.raises(ValueError, match="tgt_nsd_in_dD"):
        model(**net)
    model.train()
    net = dict(sample["net_input"])
    del net["tgt_nsd_out_dD"]
    with pytest.raises(ValueError, match="tgt_nsd_out_dD"):
        model(**net)


@pytest.mark.parametrize("arch,extra,message", [
    ("nsd_transformer", ("--nsd-tgt-input", "linear"), "--nsd-tgt-output"),  # nothing would feed decoding
    ("nsd_transformer_base", ("--nsd-kind", "dX"), "--nsd-kind"),
    ("nsd_transformer_base", ("--nsd-src-input", "multiply"), "--nsd-src-input"),
    ("nsd_transformer_base", ("--nsd-embed-dim", "32", "--nsd-src-input", "concat"), "--nsd-embed-dim"),
])
def test_bad_nsd_settings_are_refused(tiny_data, arch, extra, message):
    with pytest.raises(ValueError, match=message):
        build_task_and_model(tiny_data, arch, *extra)


def test_source_only_model_reads_only_source_features(tiny_data):
    task, model, _ = nsd_model(tiny_data, "nsd_src_transformer_base")
    assert model.syntax_features() == {"src_nsd_dD"}
    assert model.optional_syntax_features() == {"src_nsd_dD"}
    assert not model.decoder.nsd.active and model.decoder.project_in_dim is None
    np.testing.assert_equal(model.encoder.nsd.input, "linear")
