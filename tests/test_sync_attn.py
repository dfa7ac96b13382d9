"""SyncAttn (Deguchi et al. 2021): L_sync = Σ (D' − D)², D' = softmax(causal-mask(C E Cᵀ)), against a per-sentence
double loop on a padded batch (source left-padded, target right- or left-padded)."""
import math

import pytest
import torch

from syntrans.mechanisms.sync_attn import sync_loss

pytestmark = pytest.mark.fast


def rows_softmax(n_rows, n_cols, g, causal=False):
    """A random row-stochastic matrix; causal: row t only over columns ≤ t."""
    s = torch.randn(n_rows, n_cols, generator=g, dtype=torch.float64)
    if causal:
        s = s.masked_fill(torch.ones(n_rows, n_cols).triu(1).bool(), float("-inf"))
    return torch.softmax(s, -1)


def hand_loss(E, D, C):
    """Σ_t Σ_{q≤t} (D'[t,q] − D[t,q])², D'[t] = softmax over q ≤ t of (C E Cᵀ)[t, q], by loops."""
    J, n_src = C.shape
    mapped = [[sum(C[t, a] * E[a, b] * C[q, b] for a in range(n_src) for b in range(n_src)) for q in range(J)] for t in range(J)]
    total = 0.0
    for t in range(J):
        z = sum(math.exp(mapped[t][q]) for q in range(t + 1))
        for q in range(t + 1):
            total += (math.exp(mapped[t][q]) / z - float(D[t, q])) ** 2
    return total


@pytest.mark.parametrize("left_pad_target", [False, True])
def test_sync_loss_equals_double_loop(left_pad_target):
    g = torch.Generator().manual_seed(0)
    src_len, tgt_len = [5, 3], [4, 6]
    n_src, J = max(src_len), max(tgt_len)
    E = torch.rand(2, n_src, n_src, generator=g, dtype=torch.float64)  # padding rows/cells: arbitrary junk
    D = torch.rand(2, J, J, generator=g, dtype=torch.float64)
    C = torch.rand(2, J, n_src, generator=g, dtype=torch.float64)
    tgt_pad = torch.zeros(2, J, dtype=torch.bool)
    want, parts = 0.0, []
    for b in range(2):
        n, m = src_len[b], tgt_len[b]
        e, d, c = rows_softmax(n, n, g), rows_softmax(m, m, g, causal=True), rows_softmax(m, n, g)
        s = slice(n_src - n, n_src)  # source left-padded
        t = slice(J - m, J) if left_pad_target else slice(0, m)
        E[b, s, s] = e
        C[b, :, :] = 0.0  # padding source keys get no cross-attention
        C[b, t, s] = c
        C[b, [i for i in range(J) if not (t.start <= i < t.stop)]] = 1.0 / n  # padding target rows: some distribution
        D[b, t, t] = d
        tgt_pad[b] = True
        tgt_pad[b, t] = False
        parts.append(hand_loss(e, d, c))
        want += parts[-1]
    loss, count = sync_loss(E, D, C, tgt_pad)
    assert int(count) == sum(tgt_len)
    assert loss.item() == pytest.approx(want, rel=1e-5)
    assert all(p > 0 for p in parts)  # both sentences contribute


def test_sync_loss_is_zero_when_D_matches_and_gradients_are_finite():
    """D = D' gives 0; with a left-padded target (padding rows have no earlier real key) gradients stay finite."""
    g = torch.Generator().manual_seed(1)
    E = rows_softmax(4, 4, g).unsqueeze(0)
    C = torch.cat([torch.full((2, 4), 0.25, dtype=torch.float64), rows_softmax(3, 4, g)]).unsqueeze(0)  # (1, 5, 4)
    tgt_pad = torch.tensor([[True, True, False, False, False]])
    from syntrans.mechanisms.sync_attn import mapped_target_attention

    d_prime = mapped_target_attention(E, C, tgt_pad)
    loss, _ = sync_loss(E, d_prime, C, tgt_pad)
    assert loss.item() == 0.0
    D = torch.rand(1, 5, 5, dtype=torch.float64, generator=g, requires_grad=True)
    C = C.clone().requires_grad_(True)
    E = E.clone().requires_grad_(True)
    loss, _ = sync_loss(E, D, C, tgt_pad)
    loss.backward()
    assert loss.item() > 0
    for x in (D, C, E):
        assert torch.isfinite(x.grad).all()
    assert D.grad[0, :2].abs().sum() == 0  # padding rows of D are not in the loss
    assert D.grad[0].triu(1).abs().sum() == 0  # nor future cells
