"""NSD (Ma et al. 2019) in the model: input embedding modes and syntactic PE against their formulas, L_dist
against a double loop, the presets' sides, clipping of unseen values, per-token features, the value range fixed from
the training split, and target NSD in incremental decoding and beam search."""
import ast
import math
import re

import numpy as np
import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator
from helpers import build_task_and_model

from syntrans.data.features import BOS_NSD, NO_NSD
from syntrans.mechanisms.nsd import NsdInput, NsdSettings, nsd_classes, nsd_losses, warn_clipped
from syntrans.syntax.align import pieces_per_word
from syntrans.syntax.nsd_labels import nsd

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
                for j in range(0, C, 2):  # j = 2k: Ma et al. 2019, Eq. 15-16
                    angle = 2 * math.pi * shifted / 40.0 ** (j / C)
                    spe[j], spe[j + 1] = math.sin(angle), math.cos(angle)
            torch.testing.assert_close(out[0, t], want + spe, atol=1e-5, rtol=1e-5)
        if mode != "none":
            assert torch.equal(layer.embed.weight[0], torch.zeros_like(layer.embed.weight[0]))  # no value: zero row


@pytest.mark.fast
def test_spe_pair_k_has_period_lambda_to_the_2k_over_d():
    """Ma et al. 2019, Eq. 15-16: PE_{2k} = sin(2π d'/λ^{2k/d}), PE_{2k+1} = cos(…), "the periods vary from 1 to
    λ_SPE": pair k repeats after exactly λ^{2k/d} and is negated after half of it; pair 0 has period 1."""
    dim, lam = 16, 40.0
    layer = NsdInput("none", dim, 0, v_min=-3, v_max=5, spe=True, spe_lambda=lam)
    d = 7.0  # a shifted value d'
    for k in range(dim // 2):
        period = lam ** (2 * k / dim)
        pe = layer.spe_table(torch.tensor([[d, d + period, d + period / 2]], dtype=torch.float64))  # (1, 3, dim)
        pair = pe[0, :, 2 * k: 2 * k + 2].double()  # (3, 2) the (sin, cos) of pair k
        torch.testing.assert_close(pair[1], pair[0], atol=1e-6, rtol=0)
        torch.testing.assert_close(pair[2], -pair[0], atol=1e-6, rtol=0)
        assert float(pe[0, 0, 2 * k]) == pytest.approx(math.sin(2 * math.pi * d / period), abs=1e-6)
        assert float(pe[0, 0, 2 * k + 1]) == pytest.approx(math.cos(2 * math.pi * d / period), abs=1e-6)
    pe = layer.spe_table(torch.tensor([[1.0, 2.0, 3.0, 2.5, 0.0]]))
    torch.testing.assert_close(pe[0, :3, :2], torch.tensor([[0.0, 1.0]] * 3), atol=1e-6, rtol=0)  # integer d': period 1
    torch.testing.assert_close(pe[0, 3, :2], torch.tensor([0.0, -1.0]), atol=1e-6, rtol=0)
    assert float(pe[0, 0, 2]) == pytest.approx(math.sin(2 * math.pi / lam ** (2 / dim)), abs=1e-6)  # pair 1, d' = 1
    assert not pe[0, 4].any()  # d' = 0: no value, no encoding


@pytest.mark.fast
def test_default_nsd_embedding_is_the_model_dimension():
    """Ma et al. 2019, Eq. 10: e ∈ ℝ^d and W_f ∈ ℝ^{d×2d}; --nsd-embed-dim 0 (the default) gives that, concat
    gives half of the model dimension to each part, an explicit k is kept."""
    dim = 16
    linear = NsdInput("linear", dim, 0, v_min=-2, v_max=3)
    assert linear.embed.weight.shape[1] == dim and tuple(linear.proj.weight.shape) == (dim, 2 * dim)
    assert NsdInput("concat", dim, 0, v_min=-2, v_max=3).embed.weight.shape[1] == dim // 2
    assert NsdInput("add", dim, 4, v_min=-2, v_max=3).embed.weight.shape[1] == dim
    assert NsdInput("linear", dim, 4, v_min=-2, v_max=3).embed.weight.shape[1] == 4
    assert NsdInput("concat", dim, 4, v_min=-2, v_max=3).embed.weight.shape[1] == 4
    with pytest.raises(ValueError, match="--nsd-embed-dim"):  # checked where the mechanism's options are
        nsd_plan(dim, nsd_src_input="concat", nsd_embed_dim=dim)
    with pytest.raises(ValueError, match="--nsd-embed-dim"):
        nsd_plan(dim, nsd_src_input="linear", nsd_embed_dim=-1)


def nsd_plan(dim, **flat):
    """The plan (every option checked) of a model of dimension ``dim`` with source NSD values in -2..3 and ``flat``."""
    import argparse

    from syntrans.models.config import model_config

    return model_config(argparse.Namespace(encoder_embed_dim=dim, decoder_embed_dim=dim, nsd_src_min=-2, nsd_src_max=3,
                                           **flat)).plan


@pytest.mark.fast
def test_unseen_values_are_clipped_and_counted(caplog):
    layer = NsdInput("add", C, 0, v_min=-1, v_max=2)
    values = torch.tensor([[-5, -1, 2, 7, NO_NSD]])
    out = layer(torch.zeros(1, 5, C), values)
    assert int(nsd_classes(values, layer.v_min, layer.v_max)[2]) == 2  # the count the model warns about
    with caplog.at_level("WARNING", logger="syntrans.nsd"):
        warn_clipped(values, NsdSettings("encoder", input="add", v_min=-1, v_max=2))
    assert [r.message for r in caplog.records] == [
        "2 src NSD value(s) outside the training range [-1, 2] clipped to it"]
    torch.testing.assert_close(out[0, 0], layer.embed.weight[2])  # −5 → −1, the first class
    torch.testing.assert_close(out[0, 3], layer.embed.weight[2 + 3])  # 7 → 2, the last class
    logits = torch.zeros(1, 5, 4)
    *_, count, clipped = nsd_losses(logits, values, -1, 2)
    assert int(count) == 4 and int(clipped) == 2


@pytest.mark.fast
def test_dist_loss_equals_a_double_loop():
    """L_dist (Ma et al. 2019, Eq. 19) with each term O(1) per token: Σ_i (d_i − d̂_i)² / σ² (σ² the variance of the
    sentence's gold values) + Σ_i 1/(n − 1) Σ_{j≠i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊ per sentence of n real tokens,
    over real tokens only; L_entdist (Eq. 20) the classifier's cross-entropy."""
    g = torch.Generator().manual_seed(1)
    v_min, v_max = -2, 3
    values = torch.tensor([[1, -2, 3, 0, NO_NSD], [NO_NSD, NO_NSD, 2, 2, -1]])  # padding on either side
    logits = torch.randn(2, 5, v_max - v_min + 1, generator=g)
    ce, dist, count, _ = nsd_losses(logits, values, v_min, v_max)
    p = torch.softmax(logits, -1)
    # each sentence's gold values: [1, −2, 3, 0] (mean 0.5, variance 13/4) and [2, 2, −1] (mean 1, variance 2)
    variances = [13 / 4, 2.0]  # both ≥ 1: used as they are
    want_ce = want_square = want_hinge = 0.0
    for b in range(2):
        variance = variances[b]
        real = [t for t in range(5) if values[b, t] > NO_NSD]
        d = {t: float(values[b, t]) for t in real}
        dh = {t: sum(float(p[b, t, k]) * (v_min + k) for k in range(p.size(-1))) for t in real}
        for t in real:
            want_ce -= math.log(float(p[b, t, int(values[b, t]) - v_min]))
            want_square += (d[t] - dh[t]) ** 2 / variance
        for i in real:  # each token's hinge averaged over its pairs with the other n − 1 tokens of its sentence
            others = [j for j in real if j != i]
            for j in others:
                a, c = min(i, j), max(i, j)  # the pair (a, c), a before c, as in Σ_{i, j>i}
                sign = (d[a] > d[c]) - (d[a] < d[c])
                want_hinge += max(0.0, 1 - sign * (dh[a] - dh[c])) / len(others)
    assert int(count) == 7
    assert float(ce) == pytest.approx(want_ce, rel=1e-5)
    assert float(dist) == pytest.approx(want_square + want_hinge, rel=1e-5)


@pytest.mark.fast
def test_dist_loss_of_one_token_sentences_and_constant_values():
    """No pairs in a one-token sentence (no division by n − 1 = 0), and a sentence of equal gold values (or of one)
    takes σ² = 1."""
    v_min, v_max = 0, 3
    values = torch.tensor([[2, NO_NSD], [2, 2]])
    logits = torch.zeros(2, 2, 4)  # uniform: d̂ = 1.5 everywhere
    _, dist, count, _ = nsd_losses(logits, values, v_min, v_max)
    # squares: 3 × (2 − 1.5)² / 1; the second sentence's one pair has equal gold values: hinge 1, averaged 2/(2−1)
    assert int(count) == 3
    assert float(dist) == pytest.approx(3 * 0.25 + 2.0, rel=1e-6)


def printed_dist_by_loops(logits, values, v_min, v_max):
    """Eq. 19 as printed (Ma et al. 2019), by loops over each sentence's real tokens: Σ_i (d_i − d̂_i)² +
    Σ_{i, j>i} [1 − sign(d_i − d_j)(d̂_i − d̂_j)]₊, summed over the sentences; d̂ the classifier's expected value."""
    p = torch.softmax(logits.float(), -1)
    total = 0.0
    for b in range(values.size(0)):
        real = [t for t in range(values.size(1)) if values[b, t] > NO_NSD]
        d = {t: float(min(max(int(values[b, t]), v_min), v_max)) for t in real}
        dh = {t: sum(float(p[b, t, k]) * (v_min + k) for k in range(p.size(-1))) for t in real}
        total += sum((d[t] - dh[t]) ** 2 for t in real)
        for x, i in enumerate(real):
            for j in real[x + 1:]:
                sign = (d[i] > d[j]) - (d[i] < d[j])
                total += max(0.0, 1 - sign * (dh[i] - dh[j]))
    return total


@pytest.mark.fast
def test_dist_loss_as_printed_equals_a_double_loop():
    """--nsd-dist-norm printed: L_dist exactly as Eq. 19 prints it, on a batch padded on either side; the hinge sums
    every pair once (i < j), unscaled, so it exceeds our per-sentence normalisation here."""
    g = torch.Generator().manual_seed(1)
    v_min, v_max = -2, 3
    values = torch.tensor([[1, -2, 3, 0, NO_NSD], [NO_NSD, NO_NSD, 2, 2, -1]])
    logits = torch.randn(2, 5, v_max - v_min + 1, generator=g)
    ce, dist, count, _ = nsd_losses(logits, values, v_min, v_max, "printed")
    ce_ours, dist_ours, _, _ = nsd_losses(logits, values, v_min, v_max, "sentence")
    assert int(count) == 7 and float(ce) == float(ce_ours)  # L_entdist does not depend on the scaling
    assert float(dist) == pytest.approx(printed_dist_by_loops(logits, values, v_min, v_max), rel=1e-5)
    assert float(dist) > float(dist_ours)
    with pytest.raises(ValueError, match="--nsd-dist-norm must be one of sentence, printed, found 'mean'"):
        nsd_plan(C, nsd_src_output=True, nsd_dist_norm="mean")


@pytest.mark.parametrize("norm", ["sentence", "printed"])
def test_dist_norm_flag_scales_the_models_dist_loss(tiny_data, norm):
    """--nsd-dist-norm reaches the model's reported L_dist: with printed, the loss equals Eq. 19 by loops over the
    classifier's own logits on a padded batch of the synthetic corpus; with sentence (the default), it does not."""
    extra_flags = ("--nsd-dist-norm", norm) if norm == "printed" else ()
    task, model, ds = nsd_model(tiny_data, "nsd_transformer", "--nsd-src-output", *extra_flags)
    (mech,) = [m for m in model.plan.active if m.key == "nsd"]
    assert mech.cfg.dist_norm == norm
    seen = []
    model.encoder.nsd.classifier.register_forward_hook(lambda mod, args, out: seen.append(out.detach()))
    sample = ds.collater([ds[i] for i in range(4)])
    with torch.no_grad():
        _, extra = model(**sample["net_input"])
    (logits,) = seen  # (B, T, V)
    labels = sample["net_input"]["src_nsd_dD"]
    assert bool((labels == NO_NSD).sum(1).ne(1).any())  # padded: some row has more than its EOS without a value
    c = model.encoder.nsd.classifier
    printed = printed_dist_by_loops(logits, labels, c.v_min, c.v_max)
    got = float(extra["aux_losses"]["nsd_src_dist"]["loss"])
    if norm == "printed":
        assert got == pytest.approx(printed, rel=1e-5)
    else:
        assert got < printed


SIDE_FIELDS = {side: {f"nsd_{side}_input": "linear", f"nsd_{side}_spe": True, f"nsd_{side}_output": True}
               for side in ("src", "tgt")}


@pytest.mark.fast
@pytest.mark.parametrize("arch, want", [
    ("nsd_src_transformer_base", SIDE_FIELDS["src"]),  # Table 1 En→Ja, En→Zh: English source parsed (§4.1)
    ("nsd_tgt_transformer_base", SIDE_FIELDS["tgt"]),  # Table 1 Ja→En, Zh→En: English target parsed (§4.1)
    ("nsd_transformer_base", {**SIDE_FIELDS["src"], **SIDE_FIELDS["tgt"]}),  # both: a combination
])
def test_presets_set_only_their_sides_fields(arch, want):
    """Each NSD preset switches on dD input W(x‖e)+b, the syntactic PE and the output on its side(s) only, with
    λ_SPE 40 and the paper's unweighted loss (Eq. 17); every other field is the bare nsd_transformer's."""
    import argparse
    import dataclasses

    from fairseq.models import ARCH_CONFIG_REGISTRY

    from syntrans.mechanisms.registry import MECHANISMS
    from syntrans.models.config import model_config

    def fields(args):
        """Every field of the typed config the preset leaves, the mechanism groups' as flat ``<group>_<field>``."""
        typed = model_config(args)
        groups = {M.key for M in MECHANISMS} | {"preset"}
        return typed, {**{f.name: getattr(typed, f.name) for f in dataclasses.fields(typed) if f.name not in groups},
                       **{f"{M.key}_{k}": v for M in MECHANISMS for k, v in dataclasses.asdict(getattr(typed, M.key)).items()}}

    bare = argparse.Namespace()
    ARCH_CONFIG_REGISTRY["nsd_transformer"](bare)
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](args)
    (_, bare_fields), (typed, arch_fields) = fields(bare), fields(args)
    assert set(arch_fields) == set(bare_fields)
    changed = {k: v for k, v in arch_fields.items() if bare_fields[k] != v}
    assert changed == want
    assert typed.preset == arch
    assert {k: getattr(args, k) for k in want} == want  # the preset's own flat settings, nothing else
    nsd = typed.nsd
    assert (nsd.kind, nsd.spe_lambda, nsd.ce_weight, nsd.dist_weight) == ("dD", 40.0, 1.0, 1.0)


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
    for side, nsd_side, feature in ((ds.src_side, model.encoder.nsd, "src_nsd_dD"),
                                    (ds.tgt_side, model.decoder.nsd, "tgt_nsd_out_dD")):
        values = [v for i in range(len(ds)) for v in word_values(side, i)]
        s = nsd_side.settings
        assert (s.v_min, s.v_max) == (min(values), max(values))
        assert task.value_range(s.side, feature) == (min(values), max(values))
        assert (nsd_side.input.v_min, nsd_side.input.v_max) == (s.v_min, s.v_max)
        assert nsd_side.classifier.out.out_features == s.v_max - s.v_min + 1
    assert model.decoder.project_in_dim is None  # the target input is the decoder's NSD side, not fairseq's hook


def forced_steps(model, net, tokens):
    """Decode one sentence step by step along ``tokens`` (1, n; EOS last) with fairseq's incremental state:
    per-step log-prob of the next token, and the NSD fed at each step (BOS first, then predictions)."""
    enc = model.encoder.forward_torchscript(net)
    state, scores, fed = {}, [], []
    prev = torch.cat([tokens.new_full((1, 1), model.decoder.dictionary.eos()), tokens[:, :-1]], dim=1)
    for t in range(tokens.size(1)):
        out = model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)
        fed.append(int(model.decoder.nsd.input.last_fed))  # recorded by the record_fed fixture
        lp = model.get_normalized_probs(out, log_probs=True)[0, -1]
        scores.append(float(lp[tokens[0, t]]))
    return scores, fed, prev


@pytest.fixture
def record_fed(monkeypatch):
    """Remember the NSD value the decoder's input layer got at its last call (the current step)."""
    from syntrans.mechanisms import nsd as nsd_module

    original = nsd_module.NsdInput.forward

    def forward(self, x, values):
        out = original(self, x, values)
        self.last_fed = values[:, -1].clone()
        return out

    monkeypatch.setattr(nsd_module.NsdInput, "forward", forward)


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
    ("nsd_src_transformer_base", ("--nsd-dist-weight", "-1"), "--nsd-dist-weight"),
])
def test_bad_nsd_settings_are_refused(tiny_data, arch, extra, message):
    with pytest.raises(ValueError, match=message):
        build_task_and_model(tiny_data, arch, *extra)


def test_source_only_model_reads_only_source_features(tiny_data):
    task, model, _ = nsd_model(tiny_data, "nsd_src_transformer_base")
    assert model.syntax_needs().required == {"src_nsd_dD"}
    assert model.syntax_needs().optional == {"src_nsd_dD"}
    nsd_plan = next(m for m in model.plan.mechanisms if m.key == "nsd")
    assert nsd_plan.sides["encoder"].active and not nsd_plan.sides["decoder"].active
    assert not hasattr(model.decoder, "nsd") and model.decoder.project_in_dim is None
    s = model.encoder.nsd.settings
    assert (s.side, s.short, s.kind, s.input, s.spe, s.output) == ("encoder", "src", "dD", "linear", True, True)
    np.testing.assert_equal(model.encoder.nsd.input.mode, "linear")


def test_output_trained_with_l_nmt_only_is_accepted(tiny_data, caplog):
    """Table 1's "O" row with Eq. 18 only (L_NMT): an output classifier with both NSD loss weights 0 builds, says
    that it stays untrained, and reports its losses with weight 0 (nothing added to the loss)."""
    with caplog.at_level("INFO", logger="syntrans.nsd"):
        task, model, ds = nsd_model(tiny_data, "nsd_transformer", "--nsd-src-output", "--nsd-ce-weight", "0",
                                    "--nsd-dist-weight", "0")
    assert any("src NSD classifier" in r.message and "not trained" in r.message for r in caplog.records), caplog.text
    sample = ds.collater([ds[i] for i in range(3)])
    _, extra = model(**sample["net_input"])
    losses = extra["aux_losses"]
    assert {losses[k]["weight"] for k in ("nsd_src_ce", "nsd_src_dist")} == {0.0}
    assert float(losses["nsd_src_ce"]["loss"].detach()) > 0


def test_checkpoint_of_another_nsd_embedding_size_names_the_flag(tiny_data):
    """A state dict whose NSD embedding is k = 8 wide does not load into the default (k = model dim) model: the error
    names --nsd-embed-dim and the override that loads it; with that override it loads."""
    _, small = build_task_and_model(tiny_data, "nsd_transformer_base", "--nsd-embed-dim", "8")
    task, default = build_task_and_model(tiny_data, "nsd_transformer_base")
    assert default.encoder.nsd.input.embed.weight.shape[1] == 32  # SMALL's model dimension
    with pytest.raises(ValueError, match=r"--nsd-embed-dim.*--model-overrides \"\{'nsd': \{'embed_dim': 8\}\}\"") as e:
        default.load_state_dict(small.state_dict())
    _, again = build_task_and_model(tiny_data, "nsd_transformer_base", "--nsd-embed-dim", "8", seed=2)
    again.load_state_dict(small.state_dict())
    torch.testing.assert_close(again.decoder.nsd.input.embed.weight, small.decoder.nsd.input.embed.weight)
    # the override the error names, applied as fairseq applies --model-overrides to a checkpoint's (nested) model
    # config, builds a model the state dict loads into
    from fairseq.dataclass.utils import overwrite_args_by_name
    from omegaconf import OmegaConf

    overrides = ast.literal_eval(re.search(r'--model-overrides "(.*)"', str(e.value)).group(1))
    cfg = OmegaConf.create({"model": OmegaConf.structured(default.cfg)})
    overwrite_args_by_name(cfg, overrides)
    torch.manual_seed(3)
    overridden = task.build_model(cfg.model)
    overridden.load_state_dict(small.state_dict())
    torch.testing.assert_close(overridden.encoder.nsd.input.embed.weight, small.encoder.nsd.input.embed.weight)
