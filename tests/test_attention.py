"""Distance-mask attention: the syntax heads compute softmax(QKᵀ/√d + log M) and every other head is
bit-identical to fairseq's stock attention with the same weights; both kernels (fused SDPA with the bias, and the
explicit reference path) give the same numbers."""
import math

import pytest
import torch
from fairseq.modules import MultiheadAttention

from syntrans.mechanisms.distance import DistanceHeads, distance_log_mask
from syntrans.modules.blocks import SideInputs
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


def pair(embed=16, heads=4, seed=0, k=2):
    """fairseq's stock attention and ours with k distance-mask heads, the same weights."""
    torch.manual_seed(seed)
    stock = MultiheadAttention(embed, heads, self_attention=True).eval()
    ours = SyntaxMultiheadAttention(embed, heads, self_attention=True, blocks=[DistanceHeads(k)]).eval()
    ours.load_state_dict(stock.state_dict())
    return stock, ours


def inputs(gaps, pad, tau, dtype=torch.float32, backend="auto"):
    """The side's inputs of the distance-mask heads: log M of the batch."""
    return SideInputs(pad_mask=pad, data={"distance": distance_log_mask(gaps, pad, tau, dtype)}, backend=backend)


def batch(B=3, T=9, embed=16, seed=1):
    """Inputs (T, B, C), left padding (B, T) with lengths T, T-3, 2 and random gaps (B, T-1)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, B, embed, generator=g)
    lengths = [T, T - 3, 2][:B]
    pad = torch.tensor([[t < T - n for t in range(T)] for n in lengths])
    gaps = torch.randint(2, 7, (B, T - 1), generator=g)
    return x, pad, gaps, lengths


@pytest.mark.parametrize("backend", ["auto", "explicit"])
@pytest.mark.parametrize("tau", [None, 10.0, 1.0])
def test_syntax_heads_equal_hand_softmax(tau, backend):
    H, k, C = 4, 2, 16
    stock, ours = pair(C, H)
    x, pad, gaps, lengths = batch(embed=C)
    B, T = pad.shape
    out, _, _ = ours(x, x, x, key_padding_mask=pad, need_weights=False, inputs=inputs(gaps, pad, tau, backend=backend))

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
    a, _ = stock(x, x, x, key_padding_mask=pad, need_weights=False)
    b, _, _ = ours(x, x, x, key_padding_mask=pad, need_weights=False, inputs=inputs(gaps, pad, 10.0))
    assert torch.equal(a, b)
    # and the syntax heads did change something when their columns are read
    stock2, ours2 = pair(C, H)
    assert not torch.allclose(stock2(x, x, x, key_padding_mask=pad, need_weights=False)[0],
                              ours2(x, x, x, key_padding_mask=pad, need_weights=False, inputs=inputs(gaps, pad, 10.0))[0])


def test_zero_bias_is_stock_bitwise():
    """A log M of zeros leaves the distance heads stock: the whole layer equals fairseq's, bit for bit."""
    stock, ours = pair()
    x, pad, _, _ = batch()
    zero = SideInputs(pad_mask=pad, data={"distance": torch.zeros(3, 9, 9)})
    assert torch.equal(stock(x, x, x, key_padding_mask=pad, need_weights=False)[0],
                       ours(x, x, x, key_padding_mask=pad, need_weights=False, inputs=zero)[0])


def test_padding_query_rows_get_no_bias_and_no_nan():
    x, pad, gaps, _ = batch()
    log_m = distance_log_mask(gaps, pad, None, torch.float32)  # (B, T, T)
    assert torch.all(log_m[pad] == 0)  # rows of padding queries
    for backend in ("auto", "explicit"):
        stock, ours = pair(k=4)
        out, _, _ = ours(x, x, x, key_padding_mask=pad, need_weights=False, inputs=inputs(gaps, pad, None, backend=backend))
        assert torch.isfinite(out).all()


def test_bias_dtype_and_shape_follow_request():
    x, pad, gaps, _ = batch()
    log_m = distance_log_mask(gaps, pad, 10.0, torch.float16)
    assert log_m.dtype == torch.float16 and log_m.shape == (3, 9, 9)
    assert not torch.isnan(log_m).any()
    bias = DistanceHeads(3).bias(SideInputs(pad_mask=pad, data={"distance": log_m}), torch.float32)
    assert bias.dtype == torch.float32 and bias.shape == (3, 1, 9, 9)  # one bias shared by the block's heads
