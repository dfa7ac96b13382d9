"""Distance-mask attention: the syntax heads compute softmax(QKᵀ/√d + log M) and every other head is
bit-identical to fairseq's stock attention with the same weights."""
import math

import pytest
import torch
from fairseq.modules import MultiheadAttention

from syntrans.modules.distance_bias import distance_head_bias
from syntrans.modules.syntax_attention import SyntaxMultiheadAttention

pytestmark = pytest.mark.fast


def brute_log_mask(g, tau):
    """Eq. 6-7 / Algorithm 2 with loops (float64), log space."""
    T = len(g) + 1
    out = torch.zeros(T, T, dtype=torch.float64)
    for i in range(T):
        for j in range(T):
            if abs(i - j) <= 1:
                continue
            ks, ref = (range(j, i - 1), g[i - 1]) if j < i else (range(i + 1, j), g[i])
            if tau is None:
                out[i, j] = 0.0 if all(g[k] <= ref for k in ks) else -math.inf
            else:
                out[i, j] = sum(math.log(1 / (1 + math.exp(-2 * (ref - g[k]) / tau))) for k in ks)
    return out


def pair(embed=16, heads=4, seed=0):
    torch.manual_seed(seed)
    stock = MultiheadAttention(embed, heads, self_attention=True).eval()
    ours = MultiheadAttention(embed, heads, self_attention=True).eval()
    ours.__class__ = SyntaxMultiheadAttention
    ours.init_syntax()
    ours.load_state_dict(stock.state_dict())
    return stock, ours


def batch(B=3, T=9, embed=16, seed=1):
    """Inputs (T, B, C), left padding (B, T) with lengths T, T-3, 2 and random gaps (B, T-1)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, B, embed, generator=g)
    lengths = [T, T - 3, 2][:B]
    pad = torch.tensor([[t < T - n for t in range(T)] for n in lengths])
    gaps = torch.randint(2, 7, (B, T - 1), generator=g)
    return x, pad, gaps, lengths


@pytest.mark.parametrize("tau", [None, 10.0, 1.0])
def test_syntax_heads_equal_hand_softmax(tau):
    H, k, C = 4, 2, 16
    stock, ours = pair(C, H)
    x, pad, gaps, lengths = batch(embed=C)
    B, T = pad.shape
    ours.syntax_bias = distance_head_bias(gaps, pad, H, k, tau, x.dtype)
    out, _ = ours(x, x, x, key_padding_mask=pad, need_weights=False)

    d = C // H
    q = (x @ stock.q_proj.weight.T + stock.q_proj.bias) * d ** -0.5
    kk = x @ stock.k_proj.weight.T + stock.k_proj.bias
    v = x @ stock.v_proj.weight.T + stock.v_proj.bias
    for b in range(B):
        p = T - lengths[b]  # real tokens sit at p..T-1 (left padding)
        real_gaps = gaps[b, p:].tolist()
        logm = brute_log_mask(real_gaps, tau).float()
        ctx = []
        for h in range(H):
            sl = slice(h * d, (h + 1) * d)
            s = q[p:, b, sl] @ kk[p:, b, sl].T  # real queries × real keys
            if h < k:
                s = s + logm
            ctx.append(torch.softmax(s, -1) @ v[p:, b, sl])
        expect = torch.cat(ctx, -1) @ stock.out_proj.weight.T + stock.out_proj.bias
        torch.testing.assert_close(out[p:, b], expect, atol=1e-5, rtol=1e-5)


def test_other_heads_bit_identical_to_stock():
    H, k, C = 4, 2, 16
    stock, ours = pair(C, H)
    # read only the non-syntax heads: zero the output projection's columns of heads 0..k-1 in both
    with torch.no_grad():
        for m in (stock, ours):
            m.out_proj.weight[:, : k * (C // H)] = 0.0
    x, pad, gaps, _ = batch(embed=C)
    ours.syntax_bias = distance_head_bias(gaps, pad, H, k, 10.0, x.dtype)
    a, _ = stock(x, x, x, key_padding_mask=pad, need_weights=False)
    b, _ = ours(x, x, x, key_padding_mask=pad, need_weights=False)
    assert torch.equal(a, b)
    # and the syntax heads did change something when their columns are read
    stock2, ours2 = pair(C, H)
    ours2.syntax_bias = ours.syntax_bias
    assert not torch.allclose(stock2(x, x, x, key_padding_mask=pad, need_weights=False)[0],
                              ours2(x, x, x, key_padding_mask=pad, need_weights=False)[0])


def test_without_bias_is_stock_bitwise():
    stock, ours = pair()
    x, pad, _, _ = batch()
    assert torch.equal(stock(x, x, x, key_padding_mask=pad, need_weights=False)[0],
                       ours(x, x, x, key_padding_mask=pad, need_weights=False)[0])


def test_padding_query_rows_get_no_bias_and_no_nan():
    x, pad, gaps, _ = batch()
    bias = distance_head_bias(gaps, pad, 4, 4, None, torch.float32).view(3, 4, 9, 9)
    assert torch.all(bias.permute(0, 2, 1, 3)[pad] == 0)  # rows of padding queries, every head
    stock, ours = pair()
    ours.syntax_bias = bias.view(12, 9, 9)
    out, _ = ours(x, x, x, key_padding_mask=pad, need_weights=False)
    assert torch.isfinite(out).all()


def test_bias_dtype_and_shape_follow_request():
    x, pad, gaps, _ = batch()
    b = distance_head_bias(gaps, pad, 4, 3, 10.0, torch.float16)
    assert b.dtype == torch.float16 and b.shape == (12, 9, 9)
    assert torch.all(b.view(3, 4, 9, 9)[:, 3] == 0)  # head 3 is not a syntax head
    assert not torch.isnan(b).any()
