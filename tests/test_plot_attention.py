"""syntrans-plot attention: every drawn matrix is the attention the model computes, recomputed here by hand from
the layer's captured input and its weights (distance mask, gated distance, PASCAL, LISA, DBSA in the encoder and
the causal decoder); the predicted parents (× marks) are the argmax of the LISA head and of the mean of a layer's
DBSA heads; the checkpoint CLI, its summary, the --matrices file and the errors."""
import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import SMALL, build_task_and_model

import syntrans
from syntrans.cli.plot import main as plot_main
from syntrans.mechanisms.pascal import pascal_weights
from syntrans.modules.attention_record import record_attention, syntax_layers
from syntrans.plots.attention import plot_attention, predicted_agreement, sentence_attention
from syntrans.syntax.masks import local_range_mask

INDEX = 3  # a sentence of the test split (40 sentences)
# encoder layer 0: distance-mask heads 0-1 (fused path); layer 1: gated distance heads 0-1 (explicit path)
DISTANCE = ("gated_distance_transformer_iwslt_de_en", "--gate-layers", "1", "--distance-heads", "2")
# encoder layer 0: DBSA heads 0-1; layer 1: PASCAL head 0, LISA head 1; decoder layer 1: DBSA heads 0-1 (causal)
PARENTS = ("dbsa_transformer_wmt_en_de", "--pascal-layers", "1", "--pascal-heads", "1", "--lisa-layers", "1",
           "--dbsa-decoder-layers", "1", "--dbsa-heads", "2")
PARENT_HEADS = {("encoder", 0, 0): "DBSA", ("encoder", 0, 1): "DBSA", ("encoder", 1, 0): "PASCAL",
                ("encoder", 1, 1): "LISA", ("decoder", 1, 0): "DBSA", ("decoder", 1, 1): "DBSA"}


def model_cfg(data, arch, *extra):
    """The config fairseq-train would store for build_task_and_model(data, arch, *extra)."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data), "--user-dir", os.path.dirname(syntrans.__file__), "--task", "syntax_translation", "--arch", arch,
        *SMALL, *extra])
    return convert_namespace_to_omegaconf(args)


def save_checkpoint(model, cfg, path):
    """A checkpoint laid out like fairseq's Trainer.state_dict (no optimizer state)."""
    from omegaconf import OmegaConf

    torch.save({"args": None, "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
                "model": model.state_dict(), "extra_state": {},
                "optimizer_history": [{"criterion_name": "SyntaxLabelSmoothedCrossEntropyCriterion",
                                       "optimizer_name": "FairseqAdam", "lr_scheduler_state": {}, "num_updates": 0}]},
               path)


@pytest.fixture(scope="module")
def models(tiny_data, tmp_path_factory):
    """name → (task, model, checkpoint path) of the two models; DBSA's U moved off the identity (as if trained)."""
    root = tmp_path_factory.mktemp("attention")
    out = {}
    for name, (arch, *extra) in (("distance", DISTANCE), ("parents", PARENTS)):
        task, model = build_task_and_model(tiny_data, arch, *extra)
        torch.manual_seed(5)
        with torch.no_grad():
            for attn in syntax_layers(model).values():
                if "dbsa" in attn.block_keys:
                    attn.q_proj.U.add_(0.5 * torch.randn_like(attn.q_proj.U))
        ckpt = root / f"{name}.pt"
        save_checkpoint(model, model_cfg(tiny_data, arch, *extra), ckpt)
        out[name] = task, model, ckpt
    return out


def mechanism(model, key):
    """The model's active mechanism of this key (its built config: distance τ, PASCAL σ)."""
    return next(m for m in model.plan.active if m.key == key)


def run_capturing_inputs(model, task, index=INDEX):
    """sentence_attention, with the input x (T, 1, C) of every syntax layer's self-attention captured by a hook."""
    inputs = {}

    def hook(key):
        return lambda module, args, kwargs: inputs.__setitem__(key, kwargs["query"] if "query" in kwargs else args[0])

    handles = [attn.register_forward_pre_hook(hook(key), with_kwargs=True) for key, attn in syntax_layers(model).items()]
    try:
        attention = sentence_attention(model, task, "test", index)
    finally:
        for h in handles:
            h.remove()
    return attention, inputs


def projections(attn, x):
    """Plain per-head projections of x (T, 1, C): q, k (H, T, d), q without DBSA's U and unscaled."""
    H, d = attn.num_heads, attn.head_dim
    q = F.linear(x[:, 0], attn.q_proj.weight, attn.q_proj.bias).view(-1, H, d).transpose(0, 1)
    k = F.linear(x[:, 0], attn.k_proj.weight, attn.k_proj.bias).view(-1, H, d).transpose(0, 1)
    return q, k


def expected_matrix(side, layer, head, kind, attn, x, net, model):
    """The head's attention recomputed from its formula (the papers' equations, as in docs/methods.md), float64."""
    q, k = projections(attn, x)
    d = attn.head_dim
    T = x.size(0)
    qh, kh = q[head], k[head]  # (T, d)
    if kind == "DBSA":
        qh = qh @ attn.q_proj.U[head - attn.dbsa.heads.start]  # Q U Kᵀ/√d (Deguchi et al. 2019)
    scores = (qh * d ** -0.5) @ kh.T  # (T, T)
    if kind == "distance":  # softmax(QKᵀ/√d + log M), Hou et al. 2022 Eq. 7
        mask = local_range_mask(net["src_gaps"][0], mechanism(model, "distance").tau)  # (T, T)
        syn = torch.softmax(scores + torch.log(mask), -1)
        if attn.mixer is None:
            return syn, None
        g = attn.gate(x, torch.zeros(1, T, dtype=torch.bool))[0, head]  # the gate network on this sentence
        return g * syn + (1 - g) * torch.softmax(scores, -1), float(g)  # G·A_syn + (1 − G)·A_raw
    if kind == "PASCAL":  # S ⊙ N(j; p_i, σ²) before the softmax
        w = pascal_weights(net["src_parent_middle"], T, mechanism(model, "pascal").cfg.sigma)[0]
        return torch.softmax(scores * w, -1), None
    if kind == "LISA":  # [f(q); 1]ᵀ U f(k), f = leaky ReLU, unscaled
        fq = F.leaky_relu(q[head])
        fq = torch.cat([fq, torch.ones(T, 1)], -1)
        return torch.softmax(fq @ attn.lisa.U @ F.leaky_relu(kh).T, -1), None
    if side == "decoder":  # causal
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, -1), None


def panels(fig):
    return {ax.get_label(): ax for ax in fig.axes if ax.images}


def check_model(task, model, want_heads):
    attention, inputs = run_capturing_inputs(model, task)
    ds = task.dataset("test")
    net = ds.collater([ds[INDEX]])["net_input"]
    fig, matrices = plot_attention(attention)
    drawn = panels(fig)
    assert sorted(matrices) == sorted(want_heads)  # the syntax heads only, no stock head
    assert sorted(drawn) == sorted(f"{s} {layer} {h}" for s, layer, h in want_heads)
    src = [task.source_dictionary[int(t)] for t in net["src_tokens"][0]]
    tgt = [task.target_dictionary[int(t)] for t in net["prev_output_tokens"][0]]
    for h in attention.heads:
        key = (h.side, h.layer, h.head)
        assert h.kind == want_heads[key]
        ax = drawn[f"{h.side} {h.layer} {h.head}"]
        image = np.ma.getdata(ax.images[0].get_array())
        np.testing.assert_array_equal(image, matrices[key])
        attn = syntax_layers(model)[h.side, h.layer]
        want, gate = expected_matrix(h.side, h.layer, h.head, h.kind, attn, inputs[h.side, h.layer], net, model)
        np.testing.assert_allclose(image, want.detach().numpy(), rtol=0, atol=2e-6, err_msg=str(key))
        np.testing.assert_allclose(image.sum(-1), 1.0, rtol=0, atol=1e-5)  # every row over the real keys
        tokens = src if h.side == "encoder" else tgt
        assert image.shape == (len(tokens), len(tokens))
        assert [t.get_text() for t in ax.get_xticklabels()] == tokens
        assert [t.get_text() for t in ax.get_yticklabels()] == tokens
        if h.side == "decoder":
            assert (np.triu(image, 1) == 0).all()
        if gate is not None:
            assert h.gate == pytest.approx(gate, abs=1e-6) and f"G = {gate:.3f}" in ax.get_title()
        else:
            assert h.gate is None and "G =" not in ax.get_title()
    return attention, fig, net


def test_distance_and_gated_heads_equal_their_formula(models):
    task, model, _ = models["distance"]
    want = {("encoder", 0, 0): "distance", ("encoder", 0, 1): "distance",
            ("encoder", 1, 0): "distance", ("encoder", 1, 1): "distance"}
    attention, fig, _ = check_model(task, model, want)
    layer0, layer1 = syntax_layers(model)["encoder", 0], syntax_layers(model)["encoder", 1]
    # layer 0 can run fused (an additive block, no gate); layer 1's syntax heads are mixed by its gate
    assert layer0.mixer is None and all(b.additive for b in layer0.blocks)
    assert layer1.block_keys == ("distance",) and layer1.mixer_key == "gate"
    assert all(h.parents is None for h in attention.heads)
    gates = [h.gate for h in attention.heads if h.layer == 1]
    assert len(set(gates)) == 2 and all(0 < g < 1 for g in gates)
    assert model.training  # the mode is restored


def test_parent_heads_equal_their_formula_and_mark_gold_parents(models):
    task, model, _ = models["parents"]
    attention, fig, net = check_model(task, model, PARENT_HEADS)
    drawn = panels(fig)
    T, J = net["src_tokens"].size(1), net["prev_output_tokens"].size(1)
    gold = {"encoder 0 0": net["src_parent_chain"][0].double(), "encoder 0 1": net["src_parent_chain"][0].double(),
            "encoder 1 0": net["src_parent_middle"][0].double(), "encoder 1 1": net["src_parent_first"][0].double(),
            "decoder 1 0": net["tgt_parent_chain"][0].double(), "decoder 1 1": net["tgt_parent_chain"][0].double()}
    for label, parents in gold.items():
        rows = torch.arange(parents.numel())
        keep = parents >= 0
        if label.startswith("decoder"):
            keep &= parents <= rows  # the causal head can only score earlier parents
        marked = drawn[label].collections[0]
        assert marked.get_label() == ("p_i" if label == "encoder 1 0" else "gold parent")
        np.testing.assert_array_equal(np.asarray(marked.get_offsets()),
                                      torch.stack([parents[keep], rows[keep].double()], 1).numpy())
    assert int((net["src_parent_chain"][0] >= 0).sum()) == T - 1  # every real source token but EOS has a parent
    assert 0 < len(drawn["decoder 1 0"].collections[0].get_offsets()) < J


def gold_of(net, side, kind):
    """The gold parent per query row from the batch's features, NaN where none (decoder: later parents dropped)."""
    name = {"LISA": "src_parent_first", "DBSA": "src_parent_chain"}[kind] if side == "encoder" else "tgt_parent_chain"
    p = net[name][0].double()
    keep = p >= 0
    if side == "decoder":
        keep &= p <= torch.arange(p.numel())
    return torch.where(keep, p, torch.nan).numpy()


def expected_predicted(attention):
    """(side, layer, head) → the argmax row by row of the drawn matrices: the LISA head's own, a DBSA head's layer's
    mean over its DBSA heads (float64), NaN on the encoder's EOS row and the decoder's BOS row."""
    out = {}
    for h in attention.heads:
        if h.kind not in ("LISA", "DBSA"):
            continue
        same = [g.matrix.astype(np.float64) for g in attention.heads
                if (g.side, g.layer, g.kind) == (h.side, h.layer, "DBSA")] if h.kind == "DBSA" else [h.matrix]
        pred = np.mean(same, axis=0).argmax(-1).astype(np.float64)
        pred[-1 if h.side == "encoder" else 0] = np.nan
        out[h.side, h.layer, h.head] = pred
    return out


def test_predicted_parents_are_the_parse_argmax_and_marked_after_gold(models):
    task, model, _ = models["parents"]
    attention = sentence_attention(model, task, "test", INDEX)
    want = expected_predicted(attention)
    assert sorted(want) == [("decoder", 1, 0), ("decoder", 1, 1), ("encoder", 0, 0), ("encoder", 0, 1), ("encoder", 1, 1)]
    by_key = {(h.side, h.layer, h.head): h for h in attention.heads}
    for key, h in by_key.items():
        if key not in want:
            assert h.predicted is None  # PASCAL has a centre, not a prediction
            continue
        np.testing.assert_array_equal(h.predicted, want[key], err_msg=str(key))
    # the two DBSA heads of a layer disagree on some row, so the mean is what was read, not one head
    for side, layer in (("encoder", 0), ("decoder", 1)):
        a, b = by_key[side, layer, 0].matrix, by_key[side, layer, 1].matrix
        assert (a.argmax(-1) != b.argmax(-1)).any(), (side, layer)
    fig, _ = plot_attention(attention)
    drawn = panels(fig)
    for (side, layer, head), pred in want.items():
        ax = drawn[f"{side} {layer} {head}"]
        assert [c.get_label() for c in ax.collections] == ["gold parent", "predicted parent"]  # × drawn after ○
        q = np.flatnonzero(~np.isnan(pred))
        assert len(q) == len(pred) - 1
        np.testing.assert_array_equal(np.asarray(ax.collections[1].get_offsets()), np.stack([pred[q], q], 1))
    assert "× predicted parent" in fig.get_suptitle()
    agree = predicted_agreement(attention)
    ds = task.dataset("test")
    net = ds.collater([ds[INDEX]])["net_input"]
    assert list(agree) == [("encoder", 0, "DBSA"), ("encoder", 1, "LISA"), ("decoder", 1, "DBSA")]
    for (side, layer, kind), (hits, rows) in agree.items():
        gold = gold_of(net, side, kind)
        pred = want[side, layer, 1]  # the LISA head and the second DBSA head are head 1 of their layers
        both = ~np.isnan(gold) & ~np.isnan(pred)
        assert (hits, rows) == (int((gold[both] == pred[both]).sum()), int(both.sum())) and rows > 0


def test_lisa_oracle_predicts_every_gold_parent(models, monkeypatch):
    # with gold parents at evaluation the LISA head attends to them (one-hot rows): predicted = gold on every row
    task, model, _ = models["parents"]
    monkeypatch.setattr(syntax_layers(model)["encoder", 1].lisa, "gold_parents", True)
    attention = sentence_attention(model, task, "test", INDEX)
    hits, rows = predicted_agreement(attention)["encoder", 1, "LISA"]
    assert hits == rows == len(attention.src_tokens) - 1
    monkeypatch.undo()
    hits, rows = predicted_agreement(sentence_attention(model, task, "test", INDEX))["encoder", 1, "LISA"]
    assert hits < rows  # a random LISA head does not


def test_record_attention_keeps_probs_without_changing_the_model(models, tiny_data):
    task, model, _ = models["distance"]
    ds = task.dataset("test")
    batch = ds.collater([ds[i] for i in range(5)])  # left padding in a batch of 5
    net = batch["net_input"]
    enc = {k: v for k, v in net.items() if k != "prev_output_tokens"}
    model.eval()
    try:
        with torch.no_grad():
            plain = model.encoder(**enc)
            with record_attention(model) as probs:
                assert probs == {}  # filled as the encoder runs (called as a module)
                kept = model.encoder(**enc)["encoder_out"][0]
            after = model.encoder(**enc)  # the hooks are gone: a forward after the block keeps nothing
    finally:
        model.train()
    assert all(r.probs is None for r in plain["syntax"].layers.values())
    assert all(r.probs is None for r in after["syntax"].layers.values())
    plain = plain["encoder_out"][0]
    torch.testing.assert_close(kept, plain, rtol=0, atol=1e-5)
    assert sorted(probs) == [("encoder", 0), ("encoder", 1)]
    pad = net["src_tokens"].eq(task.source_dictionary.pad())  # (B, T)
    for p in probs.values():
        assert p.shape == (5, 4) + 2 * (net["src_tokens"].size(1),)
        assert p.masked_select(pad[:, None, None, :]).abs().max() == 0  # padding keys get nothing
        real = ~pad[:, None, :, None].expand_as(p)
        torch.testing.assert_close(p.sum(-1)[real[..., 0]], torch.ones(int(real[..., 0].sum())), rtol=0, atol=1e-5)
    assert not model.encoder._forward_pre_hooks and not model.encoder._forward_hooks
    assert not model.decoder._forward_pre_hooks and not model.decoder._forward_hooks


def test_cli_from_checkpoint(models, tiny_data, tmp_path, capsys):
    for name, argv in (("distance", ["--sentence-index", str(INDEX)]), ("parents", [])):  # default: sentence 0 of test
        task, model, ckpt = models[name]
        png, npz = tmp_path / f"{name}.png", tmp_path / f"{name}.npz"
        assert plot_main(["attention", "--checkpoint", str(ckpt), "--data", str(tiny_data), *argv, "--device", "cpu",
                          "--out", str(png), "--matrices", str(npz)]) == 0
        summary = capsys.readouterr().out
        ref = sentence_attention(model, task, "test", INDEX if argv else 0)  # the in-memory model it was saved from
        assert str(png) in summary and f"{len(ref.heads)} syntax heads" in summary and "split 'test'" in summary
        if name == "distance":
            assert "predicted" not in summary
        else:  # one count per parse, from the gold features and the argmax of the drawn matrices
            ds = task.dataset("test")
            net = ds.collater([ds[0]])["net_input"]
            want = expected_predicted(ref)
            for side, layer, kind in (("encoder", 0, "DBSA"), ("encoder", 1, "LISA"), ("decoder", 1, "DBSA")):
                gold, pred = gold_of(net, side, kind), want[side, layer, 1]
                both = ~np.isnan(gold) & ~np.isnan(pred)
                hits = int((gold[both] == pred[both]).sum())
                assert f"{kind} {side} layer {layer}: predicted = gold on {hits}/{int(both.sum())} rows" in summary
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        with np.load(npz, allow_pickle=False) as f:
            assert f["src_tokens"].tolist() == ref.src_tokens and f["tgt_tokens"].tolist() == ref.tgt_tokens
            for h in ref.heads:
                key = f"{h.side}_l{h.layer}_h{h.head}"
                np.testing.assert_allclose(f[key], h.matrix, rtol=0, atol=1e-6)
                if h.gate is not None:
                    assert math.isclose(float(f[key + "_gate"]), h.gate, abs_tol=1e-6)
                assert (key + "_parents" in f.files) == (h.parents is not None)
                assert (key + "_predicted" in f.files) == (h.predicted is not None)
                if h.predicted is not None:
                    np.testing.assert_array_equal(f[key + "_predicted"], h.predicted)


def test_errors(models, tiny_data, tmp_path, capsys):
    _, _, ckpt = models["distance"]
    out = str(tmp_path / "a.png")
    assert plot_main(["attention", "--checkpoint", str(ckpt), "--data", str(tiny_data), "--sentence-index", "40",
                      "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("syntrans-plot attention: error: ") and "has 40 sentences" in err and "found 40" in err
    missing = tmp_path / "nope.pt"
    assert plot_main(["attention", "--checkpoint", str(missing), "--data", str(tiny_data), "--out", out]) == 2
    assert f"{missing}: no such checkpoint file" in capsys.readouterr().err
    assert plot_main(["attention", "--checkpoint", str(ckpt), "--data", str(tiny_data), "--out", str(tmp_path / "a.txt")]) == 2
    assert "unsupported image type '.txt'" in capsys.readouterr().err
    assert not os.path.exists(out)
    task, plain = build_task_and_model(tiny_data, "syntax_transformer")
    with pytest.raises(ValueError, match="no syntax heads"):
        sentence_attention(plain, task, "test", 0)
    with pytest.raises(SystemExit) as e:
        plot_main(["attention", "--data", str(tiny_data), "--out", out])  # no --checkpoint
    assert e.value.code == 2
