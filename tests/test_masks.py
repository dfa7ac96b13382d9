"""Syntactic local range masks (Hou et al. 2022, Algorithm 2 and Eq. 6–7) against Python-loop references."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syntrans.syntax import local_range_log_mask, local_range_mask

pytestmark = pytest.mark.fast

FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- references (plain Python)

def brute_mask(g, factor):
    """M[i, j] with loops: 1 for |i − j| ≤ 1, else the product of factor(reference gap, g_k) over the
    gaps between i and j (reference g_{i−1} to the left, g_i to the right)."""
    T = len(g) + 1
    M = [[0.0] * T for _ in range(T)]
    for i in range(T):
        for j in range(T):
            if abs(i - j) <= 1:
                M[i][j] = 1.0
                continue
            ref, ks = (g[i - 1], range(j, i - 1)) if j < i - 1 else (g[i], range(i + 1, j))
            p = 1.0
            for k in ks:
                p *= factor(ref, g[k])
            M[i][j] = p
    return M


def brute_hard(g):
    """Algorithm 2 with loops: a range stops at a gap larger than the reference; ties do not stop it."""
    return brute_mask(g, lambda ref, gk: 1.0 if gk <= ref else 0.0)


def sigmoid(x):
    # float64, stable on both sides
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def brute_soft(g, tau):
    """Eq. 6–7 with loops in float64: products of σ(2(g_ref − g_k)/τ)."""
    return brute_mask(g, lambda ref, gk: sigmoid(2.0 * (ref - gk) / tau))


def brute_soft_log(g, tau):
    """Σ log σ(·) with loops in float64 (finite even where the product underflows)."""
    def logsig(x):
        return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))

    T = len(g) + 1
    L = [[0.0] * T for _ in range(T)]
    for i in range(T):
        for j in range(T):
            if j < i - 1:
                L[i][j] = sum(logsig(2.0 * (g[i - 1] - g[k]) / tau) for k in range(j, i - 1))
            elif j > i + 1:
                L[i][j] = sum(logsig(2.0 * (g[i] - g[m]) / tau) for m in range(i + 1, j))
    return L


def t64(x):
    return torch.tensor(x, dtype=torch.float64)


# --------------------------------------------------------------------------- strategies

tied_gaps = st.integers(1, 14).flatmap(lambda t1: st.lists(st.integers(0, 3), min_size=t1, max_size=t1))


@st.composite
def batches(draw, lo=0, hi=3):
    B = draw(st.integers(1, 3))
    t1 = draw(st.integers(0, 12))
    rows = [draw(st.lists(st.integers(lo, hi), min_size=t1, max_size=t1)) for _ in range(B)]
    return rows


# --------------------------------------------------------------------------- hand-checked example

def test_hand_example():
    # tokens 0..4, gaps g = [2, 1, 3, 1]
    g = [2, 1, 3, 1]
    M = local_range_mask(torch.tensor(g))
    # row 3: left reference g_2 = 3 → g_1 = 1, g_0 = 2 ≤ 3 → j = 0, 1 open; right: j = 4 adjacent
    # row 0: right reference g_0 = 2 → j = 2 needs g_1 = 1 ≤ 2 ✓; j = 3 needs g_2 = 3 ≤ 2 ✗
    # row 1: left j < 0 none; right reference g_1 = 1 → j = 3 needs g_2 = 3 ✗
    # row 4: left reference g_3 = 1 → j = 2 needs g_2 = 3 ✗
    # row 2: left reference g_1 = 1 → j = 0 needs g_0 = 2 ✗; right reference g_2 = 3 → j = 4 needs g_3 = 1 ✓
    expected = [
        [1, 1, 1, 0, 0],
        [1, 1, 1, 0, 0],
        [0, 1, 1, 1, 1],
        [1, 1, 1, 1, 1],
        [0, 0, 0, 1, 1],
    ]
    assert M.tolist() == expected


def test_ties_do_not_stop_a_range():
    # all gaps equal: every range is open
    M = local_range_mask(torch.tensor([2, 2, 2, 2]))
    assert torch.equal(M, torch.ones(5, 5))


def test_single_token_and_two_tokens():
    assert local_range_mask(torch.zeros(0, dtype=torch.long)).tolist() == [[1.0]]
    assert local_range_mask(torch.tensor([7])).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert local_range_mask(torch.zeros(2, 0, dtype=torch.long)).shape == (2, 1, 1)


# --------------------------------------------------------------------------- properties

@FAST
@given(tied_gaps)
def test_hard_equals_brute_force_on_tied_gaps(g):
    M = local_range_mask(torch.tensor(g))
    assert M.dtype == torch.float32
    assert M.shape == (len(g) + 1, len(g) + 1)
    assert M.tolist() == brute_hard(g)


@FAST
@given(batches())
def test_hard_batched_shape_and_values(rows):
    gaps = torch.tensor(rows, dtype=torch.long).reshape(len(rows), -1)
    M = local_range_mask(gaps)
    T = gaps.shape[-1] + 1
    assert M.shape == (len(rows), T, T)
    for b, g in enumerate(rows):
        assert M[b].tolist() == brute_hard(g)
    # extra leading dimensions (B, H, T − 1) → (B, H, T, T)
    M4 = local_range_mask(gaps.unsqueeze(1).expand(-1, 2, -1))
    assert M4.shape == (len(rows), 2, T, T)
    assert torch.equal(M4[:, 0], M) and torch.equal(M4[:, 1], M)


@FAST
@given(tied_gaps, st.sampled_from([0.1, 0.5, 1.0, 3.0, 10.0]))
def test_soft_equals_brute_force_product(g, tau):
    M = local_range_mask(torch.tensor(g, dtype=torch.float64), tau=tau)
    ref = t64(brute_soft([float(x) for x in g], tau))
    assert M.dtype == torch.float64
    torch.testing.assert_close(M, ref, rtol=1e-5, atol=1e-7)


@FAST
@given(st.integers(1, 12).flatmap(lambda t1: st.permutations(list(range(t1)))))
def test_soft_tends_to_hard_on_tie_free_gaps(perm):
    g = [float(x) for x in perm]  # distinct: every comparison differs by at least 1
    soft = local_range_mask(torch.tensor(g), tau=1e-3).double()
    hard = t64(brute_hard(g))
    assert (soft - hard).abs().max().item() < 1e-6


@FAST
@given(st.integers(0, 12).flatmap(lambda t1: st.lists(st.floats(-3000, 3000, allow_nan=False), min_size=t1, max_size=t1)),
       st.sampled_from([None, 1e-3, 0.5, 5.0]))
def test_near_diagonal_is_exactly_one(g, tau):
    M = local_range_mask(torch.tensor(g, dtype=torch.float32), tau=tau)
    T = len(g) + 1
    for i in range(T):
        for j in range(max(0, i - 1), min(T, i + 2)):
            assert M[i, j].item() == 1.0


@FAST
@given(st.integers(1, 14).flatmap(
    lambda t1: st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0, 999.0, 2000.0]), min_size=t1, max_size=t1)),
       st.sampled_from([None, 1e-3, 0.1, 1.0, 10.0]))
def test_float16_mask_and_log(g, tau):
    gaps = torch.tensor(g, dtype=torch.float16)
    M = local_range_mask(gaps, tau=tau)
    assert M.dtype == torch.float16
    assert torch.isfinite(M).all() and (M >= 0).all() and (M <= 1).all()
    logM = torch.log(M)
    assert not torch.isnan(logM).any()
    assert torch.equal(torch.isneginf(logM), M == 0)
    if tau is None:
        assert M.float().tolist() == brute_hard(g)
    else:
        ref = t64(brute_soft(g, tau))
        # float16 resolution: absolute error bounded by half an ulp near 1 plus underflow near 0
        torch.testing.assert_close(M.double(), ref, rtol=2e-3, atol=1e-4)


def test_float16_large_gaps_hard():
    g = [1.0, 999.0, 2.0, 2000.0, 1.0]
    M = local_range_mask(torch.tensor(g, dtype=torch.float16))
    assert M.dtype == torch.float16
    assert M.float().tolist() == brute_hard(g)
    logM = torch.log(M)
    assert not torch.isnan(logM).any()
    assert torch.equal(torch.isneginf(logM), M == 0)


@FAST
@given(st.integers(1, 12).flatmap(
    lambda t1: st.lists(st.sampled_from([0, 1, 2, 3, 999, 2000]), min_size=t1, max_size=t1)),
       st.sampled_from([None, 1e-3, 0.1, 1.0, 10.0]))
def test_log_mask_matches_log_of_brute_force(g, tau):
    gaps = torch.tensor(g, dtype=torch.float32)
    L = local_range_log_mask(gaps, tau=tau)
    assert L.dtype == torch.float32
    assert not torch.isnan(L).any()
    assert (L <= 0).all()
    if tau is None:
        with np.errstate(divide="ignore"):
            ref = np.log(np.array(brute_hard(g)))  # 0 / −inf
        assert torch.equal(torch.isneginf(L), torch.from_numpy(np.isneginf(ref)))
        assert (L[torch.isfinite(L)] == 0).all()
        return
    prod = np.array(brute_soft([float(x) for x in g], tau))
    with np.errstate(divide="ignore"):
        ref = torch.from_numpy(np.log(prod))
    finite = torch.isfinite(ref)
    torch.testing.assert_close(L.double()[finite], ref[finite], rtol=1e-5, atol=1e-5)
    # where the float64 product underflows, the log mask is −inf or extremely negative
    assert (L.double()[~finite] < -700).all()
    # and it always matches the Σ log σ reference (finite everywhere)
    ref_log = t64(brute_soft_log([float(x) for x in g], tau))
    torch.testing.assert_close(L.double(), ref_log, rtol=1e-5, atol=1e-4)


@FAST
@given(batches(0, 5), st.sampled_from([None, 0.3, 2.0]))
def test_batch_independence(rows, tau):
    gaps = torch.tensor(rows, dtype=torch.float32).reshape(len(rows), -1)
    together = local_range_mask(gaps, tau=tau)
    for b in range(len(rows)):
        alone = local_range_mask(gaps[b], tau=tau)
        torch.testing.assert_close(together[b], alone, rtol=0, atol=1e-7)
        alone_b1 = local_range_mask(gaps[b:b + 1], tau=tau)[0]
        torch.testing.assert_close(together[b], alone_b1, rtol=0, atol=1e-7)


def test_batch_of_two_different_sequences():
    a = [3, 1, 1, 2, 0, 3]
    b = [0, 2, 2, 2, 1, 0]
    both = local_range_mask(torch.tensor([a, b]))
    assert both[0].tolist() == brute_hard(a)
    assert both[1].tolist() == brute_hard(b)
    assert not torch.equal(both[0], both[1])
    assert torch.equal(both[0], local_range_mask(torch.tensor(a)))
    assert torch.equal(both[1], local_range_mask(torch.tensor(b)))


def test_integer_gaps_give_float32():
    assert local_range_mask(torch.tensor([1, 2, 3])).dtype == torch.float32
    assert local_range_mask(torch.tensor([1, 2, 3], dtype=torch.int32), tau=1.0).dtype == torch.float32
