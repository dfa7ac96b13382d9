"""The kernels a syntax layer runs on, each against the explicit reference path (every head's scores formed, in
fairseq's order of operations):

* ``auto`` (stock heads and blocks whose probabilities the step does not need in SDPA; the rest explicit) gives the
  same outputs, gradients and reports as ``explicit`` for every block, alone and together, gated or not, in training
  and evaluation;
* flex attention's score modifications (PASCAL's S ⊙ W, the distance mask's bias) give the explicit path's outputs
  (torch runs flex attention's forward on CPU; its backward needs CUDA and is compared there);
* heads without syntax form no (B, H, T, S) tensor: the largest allocation of a layer with one syntax head of eight
  is one head's scores, not the layer's;
* a method's heads whose probabilities the step does not need (parse heads at evaluation, the distance mask's bias)
  form no scores of their own.
"""
import dataclasses

import pytest
import torch
from helpers import side_inputs, syntax_attention
from torch.profiler import ProfilerActivity, profile

from syntrans.mechanisms.dbsa import DbsaHeads
from syntrans.mechanisms.distance import DistanceHeads, distance_log_mask
from syntrans.mechanisms.gate import SyntaxGate
from syntrans.mechanisms.lisa import LisaHead
from syntrans.mechanisms.pascal import PascalHeads, PascalInputs
from syntrans.modules.attention_kernels import flex, softmax_probs

pytestmark = pytest.mark.fast

C, H = 32, 8
D = C // H


def batch(T=9, lengths=(9, 6, 2), seed=1):
    """x (T, B, C), left padding, every mechanism's inputs (random gaps; parents: the next real token, the last the
    root pointing at itself)."""
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    x = torch.randn(T, B, C, generator=g)
    pad = torch.tensor([[t < T - n for t in range(T)] for n in lengths])
    gaps = torch.randint(1, 7, (B, T - 1), generator=g)
    parents = torch.full((B, T), -1)
    for b, n in enumerate(lengths):
        off = T - n
        for i in range(n - 1):
            parents[b, off + i] = off + min(i + 1, n - 2)
    data = {"distance": distance_log_mask(gaps, pad, 10.0, torch.float32),
            "pascal": PascalInputs(torch.where(parents >= 0, parents.double() + 0.5, parents.double()), 1.0),
            "lisa": parents, "dbsa": parents}
    return x, pad, data


LAYOUTS = {
    "distance": lambda: [DistanceHeads(3)],
    "pascal": lambda: [PascalHeads(5, 0.0)],
    "lisa": lambda: [LisaHead(D, "ce", False)],
    "lisa_l2": lambda: [LisaHead(D, "l2", False)],
    "dbsa": lambda: [DbsaHeads(2, False, False)],
    "all": lambda: [DistanceHeads(2), PascalHeads(2, 0.0), LisaHead(D, "ce", False), DbsaHeads(1, False, False)],
}


def run(attn, x, pad, data, backend, keep=()):
    """output (T, B, C), report, and the gradients of (output·weights + the parent losses) w.r.t. the parameters."""
    attn.zero_grad(set_to_none=True)
    out, _, report = attn(x, x, x, key_padding_mask=pad, need_weights=False,
                          inputs=side_inputs(pad, keep=keep, backend=backend, **data))
    w = torch.linspace(-1, 1, out.numel()).view_as(out)
    loss = (out * w).sum() + sum(r.loss for r in report.mechanisms.values() if getattr(r, "loss", None) is not None)
    if attn.training:
        loss.backward()
    grads = {n: p.grad.clone() for n, p in attn.named_parameters() if p.grad is not None}
    return out, report, grads


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("layout, gated", [(name, False) for name in LAYOUTS] +
                         [(name, True) for name in LAYOUTS if name not in ("dbsa", "all")])  # DBSA heads: never gated
def test_auto_equals_explicit(layout, train, gated):
    x, pad, data = batch()
    if not train:  # evaluation: no parents, the parse heads need no probabilities and run fused
        data = {k: v for k, v in data.items() if k not in ("lisa", "dbsa")}
    attn = syntax_attention(C, H, LAYOUTS[layout](), mixer=SyntaxGate(C, H, 8) if gated else None, train=train)
    a_out, a_rep, a_grads = run(attn, x, pad, data, "auto")
    e_out, e_rep, e_grads = run(attn, x, pad, data, "explicit")
    torch.testing.assert_close(a_out, e_out, rtol=1e-5, atol=1e-6)
    a_rep, e_rep = a_rep.mechanisms, e_rep.mechanisms
    assert set(a_rep) == set(e_rep)
    for key in a_rep:
        assert type(a_rep[key]) is type(e_rep[key])
        for field in dataclasses.fields(a_rep[key]):
            got, want = getattr(a_rep[key], field.name), getattr(e_rep[key], field.name)
            assert (got is None) == (want is None), (key, field.name)
            if got is not None:
                torch.testing.assert_close(got.float(), want.float(), rtol=1e-5, atol=1e-5)
    assert set(a_grads) == set(e_grads) and (a_grads or not train)
    for n in a_grads:
        torch.testing.assert_close(a_grads[n], e_grads[n], rtol=1e-4, atol=1e-6, msg=n)


def test_auto_and_explicit_differ_in_kernels_not_in_numbers():
    """The two paths are really different code: under ``auto`` the stock heads leave no probabilities to keep, so
    asking for them (keep "probs") puts the whole layer on the explicit path, which then equals ``explicit``."""
    x, pad, data = batch()
    attn = syntax_attention(C, H, LAYOUTS["all"]())
    _, rep, _ = run(attn, x, pad, {k: v for k, v in data.items() if k not in ("lisa", "dbsa")}, "auto", keep=("probs",))
    probs = rep.probs
    assert probs.shape == (3, H, 9, 9)
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, H, 9))


@pytest.mark.parametrize("key", ["pascal", "distance"])
def test_flex_score_modification_equals_the_explicit_path(key):
    """flex attention with the block's score_mod (eager, forward only on CPU) against the explicit block."""
    x, pad, data = batch(T=16, lengths=(16, 11, 5))
    block = PascalHeads(3, 0.0) if key == "pascal" else DistanceHeads(3)
    attn = syntax_attention(C, H, [block])
    inputs = side_inputs(pad, backend="explicit", **data)
    T, B, _ = x.shape
    with torch.no_grad():
        q = attn.q_proj(x).view(T, B, H, D).permute(1, 2, 0, 3)[:, :3]
        k = attn.k_proj(x).view(T, B, H, D).permute(1, 2, 0, 3)[:, :3]
        v = attn.v_proj(x).view(T, B, H, D).permute(1, 2, 0, 3)[:, :3]
        fused, lse = flex(q, k, v, block.score_mod(inputs), pad, scale=attn.scaling, return_lse=True, compiled=False)
        ref, probs = attn._explicit(x, q, k, v, pad, None, inputs, {}, blocks=[block])
        scores = block.scores((q * attn.scaling) @ k.transpose(-1, -2), q, k, inputs)
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
    # every row, the padding queries' too (they attend to the real keys)
    torch.testing.assert_close(fused, ref, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(lse, torch.logsumexp(scores, -1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout, causal", [("dbsa", False), ("dbsa2", False), ("lisa", False), ("dbsa", True),
                                            ("dbsa2", True)])  # LISA heads are encoder heads
def test_parse_losses_from_the_log_sum_exp_equal_the_explicit_ones(layout, causal):
    """A parse head's loss from a fused kernel's log-sum-exp and the gathered parent score (flex attention's
    reference on CPU, forward only) equals the explicit path's, and so do its hits and its heads' output."""
    T = 12
    x, pad, data = batch(T=T, lengths=(12, 9, 4))
    if causal:  # a decoder: right padding, the causal mask, parents that may point forward (dropped)
        pad = torch.tensor([[t >= n for t in range(T)] for n in (12, 9, 4)])
        g = torch.Generator().manual_seed(3)
        data["dbsa"] = torch.where(~pad, torch.randint(0, T, (3, T), generator=g) % (~pad).sum(1, keepdim=True), -1)
    blocks = {"dbsa": [DbsaHeads(1, causal, False)], "dbsa2": [DbsaHeads(2, causal, False)],
              "lisa": [LisaHead(D, "ce", False)]}[layout]
    attn = syntax_attention(C, H, blocks, train=True)
    mask = torch.triu(torch.full((T, T), float("-inf")), 1) if causal else None
    out = {}
    with torch.no_grad():
        for backend in ("flex", "explicit"):
            o, _, rep = attn(x, x, x, key_padding_mask=pad, need_weights=False, attn_mask=mask,
                             inputs=side_inputs(pad, backend=backend, **data))
            out[backend] = (o, rep.mechanisms[blocks[0].key].stats)
    torch.testing.assert_close(out["flex"][0], out["explicit"][0], rtol=1e-4, atol=1e-5)
    for got, want in zip(out["flex"][1], out["explicit"][1]):
        torch.testing.assert_close(got.float(), want.float(), rtol=1e-4, atol=1e-4)
    assert out["flex"][1][1] > 0  # some queries have a parent


@pytest.mark.skipif(not torch.cuda.is_available(), reason="flex attention's backward needs CUDA")
@pytest.mark.parametrize("key", ["pascal", "distance", "dbsa", "lisa"])
def test_flex_backward_equals_the_explicit_path_on_cuda(key):
    """On CUDA the auto path runs PASCAL and the distance mask as flex score modifications, and the parse heads' loss
    from flex attention's log-sum-exp: outputs, losses and every gradient equal the explicit path's."""
    x, pad, data = batch(T=64, lengths=(64, 40, 7))
    x, pad = x.cuda(), pad.cuda()
    data = {"distance": data["distance"].cuda(), "pascal": PascalInputs(data["pascal"].positions.cuda(), 1.0),
            "lisa": data["lisa"].cuda(), "dbsa": data["dbsa"].cuda()}
    block = {"pascal": lambda: PascalHeads(3, 0.0), "distance": lambda: DistanceHeads(3),
             "dbsa": lambda: DbsaHeads(2, False, False), "lisa": lambda: LisaHead(D, "ce", False)}[key]()
    attn = syntax_attention(C, H, [block]).cuda().train()
    got = {}
    for backend in ("auto", "explicit"):
        attn.zero_grad(set_to_none=True)
        out, _, rep = attn(x, x, x, key_padding_mask=pad, need_weights=False,
                           inputs=side_inputs(pad, backend=backend, **data))
        loss = out.square().sum() + sum(r.loss for r in rep.mechanisms.values() if getattr(r, "loss", None) is not None)
        loss.backward()
        got[backend] = (out, loss, {n: p.grad.clone() for n, p in attn.named_parameters()})
    torch.testing.assert_close(got["auto"][0], got["explicit"][0], rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(got["auto"][1], got["explicit"][1], rtol=1e-3, atol=1e-3)
    for n, g in got["explicit"][2].items():
        torch.testing.assert_close(got["auto"][2][n], g, rtol=1e-3, atol=1e-4, msg=n)


def largest_allocation(fn) -> int:
    """The largest single CPU allocation (bytes) made while ``fn`` runs, from torch's profiler."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    sizes = [e.nbytes() for e in prof.profiler.kineto_results.events()
             if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]
    return max(sizes)


@pytest.mark.parametrize("layout, syntax_heads", [("dbsa", 1), ("lisa", 1), ("pascal", 2)])
def test_heads_without_syntax_form_no_full_score_tensor(layout, syntax_heads):
    """Training step of a layer whose syntax heads need their probabilities (parent losses, PASCAL's product): the
    largest tensor is the syntax heads' (B, n, T, S), well below the (B, H, T, S) of all heads (the layer's other
    tensors are O(B·T·C))."""
    T, B = 96, 4
    x, pad, data = batch(T=T, lengths=(T, T - 5, 60, 30))
    blocks = {"dbsa": [DbsaHeads(1, False, False)], "lisa": [LisaHead(D, "ce", False)],
              "pascal": [PascalHeads(2, 0.0)]}[layout]
    attn = syntax_attention(C, H, blocks, train=True)
    biggest = largest_allocation(lambda: run(attn, x, pad, data, "auto"))
    one_head = B * T * T * 4  # one head's float32 scores
    assert biggest <= 2 * syntax_heads * one_head < H * one_head, (biggest, one_head)
    explicit = largest_allocation(lambda: run(attn, x, pad, data, "explicit"))
    assert explicit >= H * one_head  # the reference path does form every head's: the measure can see it


@pytest.mark.parametrize("layout, train, inputs, most", [
    ("lisa", False, (), 0.5), ("dbsa", False, (), 0.5),  # at evaluation (no parents): no (B, T, S) tensor at all
    ("distance", True, ("distance",), 1.0), ("distance", False, ("distance",), 1.0),  # the shared bias, no more
])
def test_syntax_heads_run_fused_where_their_probabilities_are_not_needed(layout, train, inputs, most):
    """README: a method's heads run fused wherever the step does not need their probabilities: the parse heads at
    evaluation and the distance-mask heads (an additive bias) in training too form no scores of their own; the
    explicit path forms all eight heads'."""
    T, B = 96, 4
    x, pad, data = batch(T=T, lengths=(T, T - 5, 60, 30))
    attn = syntax_attention(C, H, LAYOUTS[layout](), train=train)
    data = {k: v for k, v in data.items() if k in inputs}
    one_head = B * T * T * 4  # one head's float32 scores
    assert largest_allocation(lambda: run(attn, x, pad, data, "auto")) <= most * one_head
    assert largest_allocation(lambda: run(attn, x, pad, data, "explicit")) >= H * one_head


def test_fully_masked_rows_get_zero_probabilities_and_gradients():
    """A query row whose keys are all masked (a left-padded target's padding query under the causal mask) gets zero
    probabilities and zero gradients, not NaN; the other rows are the plain softmax, bit for bit."""
    scores = torch.randn(2, 3, 4, 5, dtype=torch.float64, requires_grad=True)  # (B, h, T, S)
    masked = scores.masked_fill(torch.tensor([True] * 5).view(1, 1, 1, 5) & (torch.arange(4) == 1).view(1, 1, 4, 1),
                                float("-inf"))  # query 1 of every head: every key masked
    p = softmax_probs(masked)
    assert torch.equal(p[:, :, 1], torch.zeros(2, 3, 5, dtype=torch.float32))
    rows = [0, 2, 3]
    assert torch.equal(p[:, :, rows], torch.softmax(scores.detach().float()[:, :, rows], -1))
    (p * torch.randn_like(p)).sum().backward()
    assert torch.isfinite(scores.grad).all() and torch.equal(scores.grad[:, :, 1], torch.zeros(2, 3, 5, dtype=torch.float64))


def test_dropout_masks_drawn_at_once_are_independent_inverted_dropout():
    """attention_kernels.dropout_keeps: each mask keeps an element with probability 1 − rate, element by element
    independently, also across the masks drawn together, and scales the kept by 1/(1 − rate) (dropped applies it);
    rate 0 gives no mask; the draw follows torch's seed."""
    from syntrans.modules.attention_kernels import dropout_keeps, dropped

    cpu = torch.device("cpu")
    torch.manual_seed(3)
    (ka, sa), none, (kb, sb) = dropout_keeps([(400, 500), (3,), (400, 500)], [0.4, 0.0, 0.25], cpu)
    assert none is None and ka.shape == kb.shape == (400, 500) and ka.dtype == kb.dtype == torch.bool
    assert sa == pytest.approx(1 / 0.6) and sb == pytest.approx(1 / 0.75)
    # 200 000 draws: a frequency is within 0.005 of its probability (> 4 standard deviations)
    assert abs(ka.float().mean().item() - 0.6) < 0.005 and abs(kb.float().mean().item() - 0.75) < 0.005
    assert abs((ka & kb).float().mean().item() - 0.6 * 0.75) < 0.005  # independent of each other
    assert abs((ka[:, 1:] & ka[:, :-1]).float().mean().item() - 0.36) < 0.005  # and of their neighbours
    x = torch.rand(400, 500)
    assert torch.equal(dropped(x, (ka, sa)), torch.where(ka, x * sa, torch.zeros(())))
    assert abs(dropped(torch.ones(400, 500), (ka, sa)).mean().item() - 1.0) < 0.01  # inverted: the mean is kept
    torch.manual_seed(3)
    again = dropout_keeps([(400, 500), (3,), (400, 500)], [0.4, 0.0, 0.25], cpu)
    assert torch.equal(again[0][0], ka) and torch.equal(again[2][0], kb)
