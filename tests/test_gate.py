"""Syntax gates (Hou et al., gated self-attention): A = G·A_syn + (1 − G)·A_raw with G from a max-pooled,
BatchNormed gate network; its limits, padding, pre-warm-up and syntax ignoring."""
import argparse

import pytest
import torch
from fairseq.modules import MultiheadAttention
from helpers import side_inputs, syntax_attention

from syntrans.mechanisms.distance import DistanceHeads, distance_log_mask
from syntrans.mechanisms.gate import SyntaxGate, masked_max_pool
from syntrans.mechanisms.pascal import PascalHeads, PascalInputs
from syntrans.mechanisms.plan import SyntaxPlan
from syntrans.models.config import model_config
from syntrans.models.syntax_transformer import model_shape

C, H = 16, 4


def batch(seed=1):
    """(T, B, C) inputs of two sentences (9 and 5 tokens, left-padded), padding and random gaps."""
    g = torch.Generator().manual_seed(seed)
    T, lengths = 9, [9, 5]
    x = torch.randn(T, 2, C, generator=g)
    pad = torch.tensor([[t < T - n for t in range(T)] for n in lengths])
    gaps = torch.randint(2, 7, (2, T - 1), generator=g)
    return x, pad, gaps


def gated(mode="gated", heads=H, dropout=0.0, warmup=0, seed=0):
    torch.manual_seed(seed)  # the gate network's weights, then the attention's (syntax_attention seeds again)
    gate = SyntaxGate(C, H, 8, mode=mode, warmup_epochs=warmup, syntax_dropout=dropout)
    return syntax_attention(C, H, blocks=[DistanceHeads(heads)], mixer=gate, seed=seed)


def distance_inputs(x, pad, gaps, backend="auto"):
    return side_inputs(pad, backend=backend, distance=distance_log_mask(gaps, pad, 10.0, x.dtype))


def run(attn, x, pad, gaps, **kw):
    """(output, head weights (H, B, T, S), report)."""
    return attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                inputs=distance_inputs(x, pad, gaps), **kw)


@pytest.mark.fast
def test_pure_equals_the_distance_mask_attention():
    x, pad, gaps = batch()
    attn = gated("pure", heads=2)
    out, w, _ = run(attn, x, pad, gaps)
    ref = syntax_attention(C, H, blocks=[DistanceHeads(2)])
    ref.load_state_dict({k: v for k, v in attn.state_dict().items() if not k.startswith("gate.")})
    _, w_ref, _ = ref(x, x, x, key_padding_mask=pad, need_weights=True, inputs=distance_inputs(x, pad, gaps))
    out_ref, _, _ = ref(x, x, x, key_padding_mask=pad, need_weights=False,
                        inputs=distance_inputs(x, pad, gaps, "auto"))  # fused path: the distance heads in SDPA
    torch.testing.assert_close(w.mean(0), w_ref, atol=1e-6, rtol=1e-5)  # head-averaged weights
    torch.testing.assert_close(out, out_ref, atol=1e-6, rtol=1e-5)
    # the gated layer's own fused path at evaluation (both sides fused, mixed by G ≡ 1) and its explicit one
    fused, _, rep = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=distance_inputs(x, pad, gaps, "auto"))
    explicit, _, _ = attn(x, x, x, key_padding_mask=pad, need_weights=False,
                          inputs=distance_inputs(x, pad, gaps, "explicit"))
    assert torch.all(rep.mechanisms["gate"].values == 1)
    torch.testing.assert_close(fused, out_ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(explicit, out, atol=1e-6, rtol=1e-5)


@pytest.mark.fast
def test_avg_is_the_mean_of_syntax_and_stock_softmax():
    x, pad, gaps = batch()
    attn = gated("avg", heads=3)
    _, w, _ = run(attn, x, pad, gaps)
    d = C // H
    q = (x @ attn.q_proj.weight.T + attn.q_proj.bias) * d ** -0.5
    k = x @ attn.k_proj.weight.T + attn.k_proj.bias
    log_m = distance_log_mask(gaps, pad, 10.0, x.dtype)
    for b in range(2):
        p = int(pad[b].sum())
        for h in range(H):
            s = q[p:, b, h * d:(h + 1) * d] @ k[p:, b, h * d:(h + 1) * d].T
            raw = torch.softmax(s, -1)
            expect = 0.5 * torch.softmax(s + log_m[b, p:, p:], -1) + 0.5 * raw if h < 3 else raw
            torch.testing.assert_close(w[h, b, p:, p:], expect, atol=1e-6, rtol=1e-5)


@pytest.mark.fast
@pytest.mark.parametrize("mode", ["pure", "avg"])
def test_constant_gates_have_no_parameters_and_load_older_checkpoints(mode, caplog):
    """Pure and avg gates build no network: every parameter of the layer takes a gradient from the loss (torch's DDP
    without --find-unused-parameters needs that). A state dict written when they still held an unused network
    loads, its gate tensors named in the log, and gives the same attention."""
    x, pad, gaps = batch()
    attn = gated(mode, heads=2)
    assert list(attn.gate.parameters()) == [] and list(attn.gate.buffers()) == []
    out, _, _ = run(attn, x, pad, gaps)
    out.sum().backward()
    assert all(p.grad is not None for p in attn.parameters())
    older = dict(attn.state_dict())
    network = SyntaxGate(C, H, 8, mode="gated").state_dict()  # what an older constant gate saved as well
    older.update({f"gate.{k}": v for k, v in network.items()})
    fresh = gated(mode, heads=2, seed=5)
    with caplog.at_level("INFO", logger="syntrans.mechanisms.gate"):
        fresh.load_state_dict(older)  # strict: nothing else is left out
    assert f"--gate-mode {mode}: the checkpoint's gate network gate.* ({len(network)} tensors) is not used" \
        in caplog.text
    torch.testing.assert_close(run(fresh, x, pad, gaps)[0], out, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        fresh.load_state_dict({**older, "gate.fc3.weight": torch.zeros(1)})  # only the gate network is left out


@pytest.mark.fast
def test_closed_gate_is_bitwise_stock_attention():
    """G ≡ 0 (BatchNorm shifted far negative, running statistics at evaluation): fairseq's own attention."""
    x, pad, gaps = batch()
    attn = gated()
    with torch.no_grad():
        attn.gate.bn.bias.fill_(-1e4)
    stock = MultiheadAttention(C, H, self_attention=True).eval()
    stock.load_state_dict({k: v for k, v in attn.state_dict().items() if not k.startswith("gate.")})
    stock.skip_embed_dim_check = True  # fairseq's unfused path, the order of operations ours follows
    out, w, report = run(attn, x, pad, gaps)
    assert report.mechanisms["gate"].values.shape == (2, H)
    assert torch.all(report.mechanisms["gate"].values == 0)
    out_s, w_s = stock(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True)
    assert torch.equal(out, out_s) and torch.equal(w, w_s)


@pytest.mark.fast
def test_max_pool_ignores_padding():
    x, pad, gaps = batch()
    pooled = masked_max_pool(x, pad)
    for b in range(2):
        p = int(pad[b].sum())
        assert torch.equal(pooled[b], x[p:, b].max(0).values)
    attn = gated()
    g1 = run(attn, x, pad, gaps)[2].mechanisms["gate"].values.clone()
    y = x.clone()
    y[: int(pad[1].sum()), 1] = 1e3  # huge values at sentence 1's padding positions
    assert torch.equal(run(attn, y, pad, gaps)[2].mechanisms["gate"].values, g1)


@pytest.mark.fast
def test_warmup_freezes_the_gate_network_then_trains_it():
    x, pad, gaps = batch()
    attn = gated(warmup=2).train()
    gate_params = {n: p.detach().clone() for n, p in attn.gate.named_parameters()}
    other = attn.q_proj.weight.detach().clone()
    opt = torch.optim.Adam(attn.parameters(), lr=1e-2, weight_decay=1e-2)

    def step():
        opt.zero_grad()
        out, _, _ = run(attn, x, pad, gaps)
        out.pow(2).sum().backward()
        opt.step()

    for epoch in (1, 2):  # pre-warm-up: frozen, although weight decay applies to every parameter with a gradient
        attn.gate.set_epoch(epoch)
        assert attn.gate.frozen
        step()
        for n, p in attn.gate.named_parameters():
            assert torch.equal(p, gate_params[n]), n
    assert not torch.equal(attn.q_proj.weight, other)  # the rest of the layer trained
    attn.gate.set_epoch(3)
    assert not attn.gate.frozen
    step()
    assert any(not torch.equal(p, gate_params[n]) for n, p in attn.gate.named_parameters())


@pytest.mark.fast
def test_syntax_ignoring_only_in_training():
    x, pad, gaps = batch()
    a, b = gated(dropout=0.0), gated(dropout=0.9)
    b.load_state_dict(a.state_dict())
    assert torch.equal(run(a, x, pad, gaps)[0], run(b, x, pad, gaps)[0])  # evaluation: no syntax dropout
    b.train()
    a.train()
    torch.manual_seed(0)
    wa = run(a, x, pad, gaps)[1]
    torch.manual_seed(0)
    wb = run(b, x, pad, gaps)[1]
    assert not torch.allclose(wa, wb)


@pytest.mark.fast
def test_batchnorm_uses_running_statistics_at_evaluation():
    """A sentence's gates do not depend on the rest of the batch at evaluation (they do in training)."""
    x, pad, gaps = batch()
    attn = gated()
    both = run(attn, x, pad, gaps)[2].mechanisms["gate"].values.clone()
    y = x.clone()
    y[:, 0] = torch.randn(y[:, 0].shape, generator=torch.Generator().manual_seed(5))  # another first sentence
    other = run(attn, y, pad, gaps)[2].mechanisms["gate"].values
    assert torch.equal(other[1], both[1]) and not torch.allclose(other[0], both[0])
    one = run(attn, x[:, 1:], pad[1:], gaps[1:])[2].mechanisms["gate"].values
    # alone: the same up to rounding (the gate's linear layers round a 1-row batch differently from a 2-row one)
    torch.testing.assert_close(one[0], both[1], rtol=0, atol=1e-6)
    attn.train()
    train_both = run(attn, x, pad, gaps)[2].mechanisms["gate"].values.clone()
    assert not torch.allclose(train_both, both)
    train_other = run(attn, y, pad, gaps)[2].mechanisms["gate"].values
    assert not torch.allclose(train_other[1], train_both[1], rtol=0, atol=1e-6)  # batch statistics in training


def plan(**flags):
    """The SyntaxPlan of a 2 + 2-layer model with H heads and these flat (command-line) mechanism options."""
    cfg = model_config(argparse.Namespace(encoder_layers=2, decoder_layers=2, encoder_attention_heads=H,
                                           decoder_attention_heads=H, encoder_embed_dim=C, decoder_embed_dim=C,
                                           **flags))
    return SyntaxPlan(cfg, model_shape(cfg))


@pytest.mark.fast
def test_gated_layer_needs_syntax_heads_and_mode_is_checked():
    with pytest.raises(ValueError, match="--gate-layers: encoder layer 1 has no syntax heads to gate"):
        plan(gate_layers="1", distance_layers="0", distance_heads=2)
    assert [m.key for m, _ in plan(gate_layers="0", distance_layers="0", distance_heads=2).heads["encoder", 0]] == \
        ["distance"]  # gating a layer with syntax heads is fine
    with pytest.raises(ValueError, match="--gate-mode must be one of"):
        plan(gate_layers="0", distance_layers="0", distance_heads=2, gate_mode="sometimes")


def test_validation_logs_gate_values_per_layer_and_head(tiny_data):
    from helpers import build_task_and_model, first_batch

    task, model = build_task_and_model(tiny_data, "gated_distance_transformer_iwslt_de_en", "--distance-heads", "2",
                                       "--gate-layers", "1")
    sample = first_batch(task, "valid", 5)
    model.eval()
    with torch.no_grad():
        _, extra = model(**sample["net_input"])
    metrics = extra["aux_metrics"]
    assert sorted(metrics) == ["gate_l1h0", "gate_l1h1"]
    g = extra["syntax"].encoder.layers[1].mechanisms["gate"].values
    assert g.shape == (5, 2)
    assert extra["syntax"].encoder.layers[1].mechanisms["gate"].weights_per_head is g  # what the figures draw
    assert metrics["gate_l1h1"]["value"].item() == pytest.approx(g[:, 1].sum().item())
    assert metrics["gate_l1h1"]["ntokens"] == 5
    model.train()
    _, extra = model(**sample["net_input"])
    assert "aux_metrics" not in extra  # training logs stay short


@pytest.mark.fast
def test_gate_mixes_pascal_attention_too():
    """The gate is a mechanism of its own: over PASCAL heads, pure = PASCAL and avg = mean of PASCAL and stock."""
    x, pad, _ = batch()
    parents = torch.where(pad, torch.tensor(-1.0), torch.tensor(7.5))  # every real token's parent at 7.5
    syntax = side_inputs(pad, pascal=PascalInputs(parents, 1.0))
    weights = {}
    for name, blocks, gate in (("pascal", [PascalHeads(2, 0.0)], None),
                               ("stock", [], None),
                               ("pure", [PascalHeads(2, 0.0)], SyntaxGate(C, H, 8, mode="pure")),
                               ("avg", [PascalHeads(2, 0.0)], SyntaxGate(C, H, 8, mode="avg"))):
        attn = syntax_attention(C, H, blocks=blocks, mixer=gate, seed=0)
        attn.skip_embed_dim_check = True  # the stock row: fairseq's unfused path
        weights[name] = attn(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                             inputs=syntax)[1]
    assert torch.equal(weights["pure"], weights["pascal"])
    torch.testing.assert_close(weights["avg"][:2], 0.5 * (weights["pascal"][:2] + weights["stock"][:2]))
    assert torch.equal(weights["avg"][2:], weights["stock"][2:])
    assert not torch.allclose(weights["pascal"][:2], weights["stock"][:2])


@pytest.mark.fast
def test_training_mix_draws_both_dropout_masks_at_once_and_follows_the_formula():
    """In training the gated heads attend with drop_a(G·drop_s(A_syn) + (1 − G)·A_raw): syntax ignoring (rate 0.4) and
    attention dropout (rate 0.25), their two masks drawn in one draw (attention_kernels.dropout_keeps) from the
    layer's random stream. The layer's output and its gradients are this formula's, computed here from the same
    draw; every head is gated (the layer's stock heads would draw SDPA's own mask)."""
    from syntrans.modules.attention_kernels import dropout_keeps

    x, pad, gaps = batch()
    torch.manual_seed(0)
    gate = SyntaxGate(C, H, 8, syntax_dropout=0.4)
    attn = syntax_attention(C, H, blocks=[DistanceHeads(H)], mixer=gate, dropout=0.25, train=True)
    inputs = distance_inputs(x, pad, gaps)
    torch.manual_seed(7)
    out = attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=inputs)[0]
    out.square().sum().backward()
    grads = {n: p.grad.clone() for n, p in attn.named_parameters()}
    attn.zero_grad()

    T, B, _ = x.shape
    d = C // H
    q, k, v = (p(x).view(T, B, H, d).permute(1, 2, 0, 3) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
    raw = (q * attn.scaling) @ k.transpose(-1, -2)  # (B, H, T, S)
    padded = pad[:, None, None, :]
    p_syn = torch.softmax((raw + inputs.get("distance").unsqueeze(1)).masked_fill(padded, float("-inf")), -1)
    p_raw = torch.softmax(raw.masked_fill(padded, float("-inf")), -1)
    torch.manual_seed(7)
    g = gate(x, pad)  # the gate's BatchNorm draws nothing; the draw below is the layer's one draw
    (keep_s, scale_s), (keep_a, scale_a) = dropout_keeps([tuple(p_syn.shape), tuple(p_syn.shape)], [0.4, 0.25],
                                                         raw.device)
    assert scale_s == pytest.approx(1 / 0.6) and scale_a == pytest.approx(1 / 0.75)
    mixed = g[:, :, None, None] * (p_syn * keep_s * scale_s) + (1 - g[:, :, None, None]) * p_raw
    want = attn.out_proj(((mixed * keep_a * scale_a) @ v).permute(2, 0, 1, 3).reshape(T, B, C))
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-6)
    want.square().sum().backward()
    for n, p in attn.named_parameters():
        torch.testing.assert_close(grads[n], p.grad, rtol=1e-3, atol=1e-5, msg=n)  # BatchNorm: cancellations
