"""PASCAL (Bugliarello & Okazaki 2020): Gaussian parent weights multiply the scaled scores of the PASCAL
heads, on the right (sentence, head) rows for any head count, with parents following left padding."""
import argparse
import math

import numpy as np
import pytest
import torch
from fairseq.modules import MultiheadAttention
from helpers import side_inputs, syntax_attention

from syntrans.mechanisms.pascal import PascalConfig, PascalHeads, PascalInputs, ignore_parents, pascal_weights
from syntrans.mechanisms.plan import SyntaxPlan
from syntrans.models.config import model_config
from syntrans.models.syntax_transformer import model_shape
from syntrans.syntax import subword_parents

C, H = 16, 4


def modules(blocks=(), seed=0):
    """fairseq's attention and ours with these head blocks, the same weights."""
    torch.manual_seed(seed)
    stock = MultiheadAttention(C, H, self_attention=True).eval()
    ours = syntax_attention(C, H, blocks=blocks)
    ours.load_state_dict(stock.state_dict())
    return stock, ours


def pascal_inputs(pad, parents, backend="auto"):
    return side_inputs(pad, backend=backend, pascal=PascalInputs(parents, 1.0))


def batch(seed=1):
    """Two sentences of 7 and 4 tokens (EOS last), left-padded to T = 7; parents per sentence position."""
    g = torch.Generator().manual_seed(seed)
    T = 7
    x = torch.randn(T, 2, C, generator=g)
    lengths = [7, 4]
    # sentence-relative parents of the real tokens (EOS: none); x.5 values as PASCAL's middle mode gives
    rel = [[1.0, 3.0, 3.0, 3.0, 5.5, 3.0, -1.0], [2.0, 2.0, 2.0, -1.0]]
    pad = torch.tensor([[t < T - n for t in range(T)] for n in lengths])
    parents = torch.full((2, T), -1.0)
    for b, r in enumerate(rel):
        off = T - lengths[b]
        parents[b, off:] = torch.tensor([p + off if p >= 0 else -1.0 for p in r])
    return x, pad, parents, lengths, rel


@pytest.mark.fast
def test_weights_are_the_gaussian_density():
    parents = torch.tensor([[2.5, -1.0]])
    w = pascal_weights(parents, 5, 1.5)
    for j in range(5):
        expect = math.exp(-0.5 * ((j - 2.5) / 1.5) ** 2) / (1.5 * math.sqrt(2 * math.pi))
        assert w[0, 0, j].item() == pytest.approx(expect, rel=1e-6)
    assert torch.all(w[0, 1] == 1.0)  # a query without parent (EOS, padding) keeps its scores


def hand_heads(ours, x, pad, rel, lengths, pascal):
    """Per sentence, real tokens only, no batch: each head's softmax; PASCAL heads multiply by N(j; p_i, 1)."""
    d = C // H
    T = x.size(0)
    q = (x @ ours.q_proj.weight.T + ours.q_proj.bias) * d ** -0.5
    k = x @ ours.k_proj.weight.T + ours.k_proj.bias
    out = []
    for b, n in enumerate(lengths):
        p = T - n
        probs = []
        for h in range(H):
            sl = slice(h * d, (h + 1) * d)
            s = q[p:, b, sl] @ k[p:, b, sl].T  # (n, n) scaled scores
            if h in pascal:
                for i, par in enumerate(rel[b]):
                    if par >= 0:
                        w = torch.tensor([math.exp(-0.5 * (j - par) ** 2) / math.sqrt(2 * math.pi) for j in range(n)])
                        s[i] = s[i] * w
            probs.append(torch.softmax(s, -1))
        out.append(torch.stack(probs))  # (H, n, n)
    return out


@pytest.mark.fast
@pytest.mark.parametrize("h_p", [1, 2, 3])
def test_pascal_heads_equal_hand_computation(h_p):
    """Batch of two sentences of different lengths, h_P < H: the weights of sentence b land on its rows."""
    _, ours = modules([PascalHeads(h_p, 0.0)])
    x, pad, parents, lengths, rel = batch()
    _, weights, _ = ours(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                         inputs=pascal_inputs(pad, parents))  # (H, B, T, S)
    expect = hand_heads(ours, x, pad, rel, lengths, range(h_p))
    for b, n in enumerate(lengths):
        p = x.size(0) - n
        torch.testing.assert_close(weights[:, b, p:, p:], expect[b], atol=1e-6, rtol=1e-5)
        assert torch.all(weights[:, b, p:, :p] == 0)  # padding keys get nothing


@pytest.mark.fast
@pytest.mark.parametrize("backend", ["auto", "explicit"])
def test_pascal_output_equals_hand_computation(backend):
    _, ours = modules([PascalHeads(1, 0.0)])
    x, pad, parents, lengths, rel = batch()
    out, _, _ = ours(x, x, x, key_padding_mask=pad, need_weights=False, inputs=pascal_inputs(pad, parents, backend))
    probs = hand_heads(ours, x, pad, rel, lengths, [0])
    d = C // H
    v = x @ ours.v_proj.weight.T + ours.v_proj.bias
    for b, n in enumerate(lengths):
        p = x.size(0) - n
        ctx = torch.cat([probs[b][h] @ v[p:, b, h * d:(h + 1) * d] for h in range(H)], -1)
        torch.testing.assert_close(out[p:, b], ctx @ ours.out_proj.weight.T + ours.out_proj.bias, atol=1e-5, rtol=1e-5)


@pytest.mark.fast
def test_stock_heads_match_fairseq_unfused_attention_bitwise():
    """Heads without syntax in a PASCAL layer compute exactly what fairseq's own unfused path computes."""
    stock, ours = modules([PascalHeads(2, 0.0)])
    stock.skip_embed_dim_check = True  # fairseq's switch to its unfused code path
    x, pad, parents, _, _ = batch()
    _, w_stock = stock(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True)
    _, w_ours, _ = ours(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True,
                        inputs=pascal_inputs(pad, parents))
    assert torch.equal(w_stock[2:], w_ours[2:])
    assert not torch.allclose(w_stock[:2], w_ours[:2])


@pytest.mark.fast
def test_parent_ignoring_q1_is_stock_and_q0_is_pascal():
    stock, ours = modules([PascalHeads(3, 0.0)])
    _, ours_q1 = modules([PascalHeads(3, 1.0)])  # the same weights, parent ignoring q = 1
    stock.skip_embed_dim_check = True
    x, pad, parents, _, _ = batch()
    syntax = pascal_inputs(pad, parents, "explicit")  # fairseq's unfused order of operations, bitwise

    def run(attn):
        return attn(x, x, x, key_padding_mask=pad, need_weights=False, inputs=syntax)[0]

    pascal_eval = run(ours)
    ours.train()  # dropout is 0: training differs from evaluation only by parent ignoring
    assert torch.equal(run(ours), pascal_eval)
    ours_q1.train()
    ignored = run(ours_q1)
    assert torch.equal(ignored, stock(x, x, x, key_padding_mask=pad, need_weights=False)[0])
    assert not torch.allclose(ignored, pascal_eval)
    # the fused path (backend "auto") computes the same up to rounding
    auto = pascal_inputs(pad, parents, "auto")
    torch.testing.assert_close(ours_q1(x, x, x, key_padding_mask=pad, need_weights=False, inputs=auto)[0], ignored,
                               atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(ours(x, x, x, key_padding_mask=pad, need_weights=False, inputs=auto)[0], pascal_eval,
                               atol=1e-6, rtol=1e-5)
    ours_q1.eval()  # evaluation never ignores
    assert torch.equal(run(ours_q1), pascal_eval)


@pytest.mark.fast
def test_parent_ignoring_replaces_whole_rows_with_probability_q():
    torch.manual_seed(0)
    w = pascal_weights(torch.rand(64, 50) * 40, 50, 1.0)
    out = ignore_parents(w, 0.3, training=True)
    ones = (out == 1).all(-1)  # (B, T) rows replaced
    kept = (out == w).all(-1)
    assert torch.all(ones | kept)  # each row is either untouched or all ones
    assert abs(ones.float().mean().item() - 0.3) < 0.03
    assert torch.equal(ignore_parents(w, 0.3, training=False), w)


@pytest.mark.parametrize("left_pad", [True, False])
def test_collated_parents_follow_left_padding(tiny_data, left_pad):
    """Each row's parents are its own sentence's subword parents shifted by its left padding (none when the
    source is right-padded)."""
    from helpers import build_task_and_model

    # fairseq's flag --left-pad-source switches its default (True) off
    task, model = build_task_and_model(tiny_data, "pascal_transformer_iwslt_de_en", *(() if left_pad else ("--left-pad-source",)))
    assert task.cfg.left_pad_source is left_pad
    task.load_dataset("valid")
    ds = task.dataset("valid")
    ids = list(range(6))
    sample = ds.collater([ds[i] for i in ids])
    tokens, parents = sample["net_input"]["src_tokens"], sample["net_input"]["src_parent_middle"]
    assert bool((tokens == task.source_dictionary.pad()).any())  # some row is padded
    for row, i in enumerate(sample["id"].tolist()):
        words = np.asarray(ds.src_side["word"][i])
        pieces = np.bincount(words).tolist()
        expect = subword_parents(np.asarray(ds.src_side["head"][i]).tolist(), pieces, "middle")
        n = len(expect) + 1  # + EOS
        off = tokens.size(1) - n if left_pad else 0
        real = slice(off, off + n)
        assert torch.all(tokens[row, real] != task.source_dictionary.pad())
        assert parents[row, real][:-1].tolist() == [p + off for p in expect]
        assert parents[row, real][-1].item() == -1  # EOS: no parent
        assert int((parents[row] == -1).sum()) == tokens.size(1) - n + 1  # padding: none either
        assert off <= parents[row, real][:-1].min().item() and parents[row, real].max().item() < off + n - 1


# ------------------------------------------------------------------ the paper's ablations (§3.2 Table 3b, App. B)

def hand_weight(kind, sigma, par, j):
    """d_tj by hand: the Gaussian density N(j; p, σ²) (Eq. 3), or 1 on the parent's middle token(s) |j − p| < 1 and 0
    elsewhere ("parent-only", Table 3b)."""
    if kind == "parent-only":
        return 1.0 if abs(j - par) < 1 else 0.0
    return math.exp(-0.5 * ((j - par) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def hand_ablation(ours, x, rel, lengths, n_pascal, kind, op, sigma):
    """Per sentence, real tokens only: each head's softmax; the first n_pascal heads take n_tj = s_tj · d_tj (Eq. 2)
    or s_tj + d_tj (App. B) on the rows with a parent, each score by its own loop."""
    d = C // H
    T = x.size(0)
    q = (x @ ours.q_proj.weight.T + ours.q_proj.bias) * d ** -0.5
    k = x @ ours.k_proj.weight.T + ours.k_proj.bias
    out = []
    for b, n in enumerate(lengths):
        p = T - n
        probs = []
        for h in range(H):
            sl = slice(h * d, (h + 1) * d)
            s = (q[p:, b, sl] @ k[p:, b, sl].T).tolist()  # (n, n) scaled scores as lists
            if h < n_pascal:
                for i, par in enumerate(rel[b]):
                    for j in range(n):
                        w = hand_weight(kind, sigma, par, j) if par >= 0 else 1.0
                        s[i][j] = s[i][j] + w if op == "add" else s[i][j] * w
            probs.append(torch.softmax(torch.tensor(s), -1))
        out.append(torch.stack(probs))  # (H, n, n)
    return out


@pytest.mark.fast
def test_parent_only_weights_by_hand():
    """1 on the parent's middle token, both middle subwords at an x.5 middle, 0 elsewhere; no parent: ones."""
    w = pascal_weights(torch.tensor([[2.0, 2.5, 0.0, -1.0]]), 5, 1.0, "parent-only")
    assert w[0].tolist() == [[0, 0, 1, 0, 0], [0, 0, 1, 1, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]]
    with pytest.raises(ValueError, match="unknown PASCAL weights 'parent'"):
        pascal_weights(torch.zeros(1, 2), 2, 1.0, "parent")


@pytest.mark.fast
@pytest.mark.parametrize("kind, op, sigma", [("gaussian", "multiply", 2.0), ("gaussian", "add", 1.0),
                                             ("parent-only", "multiply", 1.0), ("parent-only", "add", 1.0),
                                             ("gaussian", "add", 3.0)])
def test_ablations_equal_hand_computation(kind, op, sigma):
    """Each option (σ, parent-only, addition) on a padded batch of two sentences against a loop over scores; under
    parent-only with multiplication a non-parent score becomes 0, not −∞: its key keeps softmax weight."""
    _, ours = modules([PascalHeads(2, 0.0, op)])
    x, pad, parents, lengths, rel = batch()
    syntax = side_inputs(pad, backend="explicit", pascal=PascalInputs(parents, sigma, kind))
    _, weights, _ = ours(x, x, x, key_padding_mask=pad, need_weights=True, need_head_weights=True, inputs=syntax)
    expect = hand_ablation(ours, x, rel, lengths, 2, kind, op, sigma)
    for b, n in enumerate(lengths):
        p = x.size(0) - n
        torch.testing.assert_close(weights[:, b, p:, p:], expect[b], atol=1e-6, rtol=1e-5)
        assert torch.all(weights[:, b, p:, :p] == 0)  # padding keys get nothing
    if kind == "parent-only" and op == "multiply":
        assert torch.all(weights[:2, 0] > 0)  # every real key of sentence 0 keeps some weight (exp(0) / Z)
    # the output, explicit and under flex attention's score modification (torch's eager reference off CUDA)
    d = C // H
    v = x @ ours.v_proj.weight.T + ours.v_proj.bias
    for backend in ("explicit", "flex"):
        syntax = side_inputs(pad, backend=backend, pascal=PascalInputs(parents, sigma, kind))
        with torch.no_grad():  # flex attention runs forward only on CPU
            out = ours(x, x, x, key_padding_mask=pad, need_weights=False, inputs=syntax)[0]
        for b, n in enumerate(lengths):
            p = x.size(0) - n
            ctx = torch.cat([expect[b][h] @ v[p:, b, h * d:(h + 1) * d] for h in range(H)], -1)
            torch.testing.assert_close(out[p:, b], ctx @ ours.out_proj.weight.T + ours.out_proj.bias, atol=1e-5,
                                       rtol=1e-5, msg=backend)


@pytest.mark.fast
def test_default_options_are_the_papers_product_bit_for_bit():
    """The defaults (Gaussian, multiplication) compute exactly S ⊙ N(j; p_i, σ²), the weights formed in the test."""
    x, pad, parents, _, _ = batch()
    block = PascalHeads(2, 0.0)
    assert block.op == "multiply" and PascalInputs(parents, 1.0).kind == "gaussian"
    assert (PascalConfig().weights, PascalConfig().op, PascalConfig().sigma) == ("gaussian", "multiply", 1.0)
    j = torch.arange(7.0)
    w = torch.exp(-0.5 * (j - parents.unsqueeze(-1)) ** 2) / math.sqrt(2 * math.pi)
    w = torch.where(parents.unsqueeze(-1) < 0, torch.ones_like(w), w)  # (B, T, S)
    s = torch.randn(2, 2, 7, 7)
    assert torch.equal(block.scores(s, None, None, side_inputs(pad, pascal=PascalInputs(parents, 1.0))),
                       s * w.unsqueeze(1))


@pytest.mark.fast
def test_ignored_rows_leave_the_softmax_unchanged_under_addition():
    """Parent ignoring sets a row of W to ones (§2.1): under addition every key of the row gains 1, so the row's
    softmax is the stock one (up to rounding)."""
    stock, ours = modules([PascalHeads(3, 1.0, "add")])
    x, pad, parents, _, _ = batch()
    ours.train()  # dropout 0: parent ignoring with q = 1 is the only training effect
    got = ours(x, x, x, key_padding_mask=pad, need_weights=False,
               inputs=side_inputs(pad, backend="explicit", pascal=PascalInputs(parents, 1.0, "parent-only")))[0]
    torch.testing.assert_close(got, stock(x, x, x, key_padding_mask=pad, need_weights=False)[0], atol=1e-6, rtol=1e-5)


@pytest.mark.fast
def test_ablation_flags_reach_the_heads_and_the_weights():
    """--pascal-op and --pascal-weights (flat config) build heads that add and inputs with parent-only weights; a
    bad value is refused naming its flag."""
    def plan(**flat):
        cfg = model_config(argparse.Namespace(encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                               decoder_attention_heads=4, encoder_embed_dim=C, decoder_embed_dim=C,
                                               pascal_layers="0", pascal_heads=2, **flat))
        return SyntaxPlan(cfg, model_shape(cfg))

    p = plan(pascal_op="add", pascal_weights="parent-only", pascal_sigma=2.0)
    block = next(b for b in p.sides["encoder"].layer(0).blocks(C // 4) if isinstance(b, PascalHeads))
    assert block.op == "add"
    mech = next(m for m in p.active if m.key == "pascal")
    parents = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    inputs = mech.prepare("encoder", {"src_parent_middle": parents}, torch.zeros(1, 2, dtype=torch.long),
                          torch.zeros(1, 2, dtype=torch.bool), torch.float32, False)
    assert inputs.weights().tolist() == [[[0.0, 1.0], [1.0, 1.0]]]
    assert (inputs.kind, inputs.sigma) == ("parent-only", 2.0)
    with pytest.raises(ValueError, match="--pascal-op must be one of multiply, add, found 'sum'"):
        plan(pascal_op="sum")
    with pytest.raises(ValueError, match="--pascal-weights must be one of gaussian, parent-only, found 'uniform'"):
        plan(pascal_weights="uniform")


@pytest.mark.fast
def test_too_many_syntax_heads_is_a_clear_error():
    cfg = model_config(argparse.Namespace(encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                           decoder_attention_heads=4, encoder_embed_dim=C, decoder_embed_dim=C,
                                           distance_layers="0", distance_heads=2, pascal_layers="0", pascal_heads=2,
                                           lisa_layers="0"))
    with pytest.raises(ValueError, match="encoder layer 0 has 4 heads but its syntax heads ask for 2 distance-mask "
                                         r"\+ 2 PASCAL \+ 1 LISA"):
        SyntaxPlan(cfg, model_shape(cfg))
