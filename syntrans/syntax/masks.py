"""Syntactic local range masks of Hou et al. 2022 (Algorithm 2, Eq. 6–7), batched and vectorised."""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F


def local_range_log_mask(gaps: torch.Tensor, tau: Optional[float] = None) -> torch.Tensor:
    """log M for gaps (..., T−1) → (..., T, T) in float32: 0/−inf (hard) or Σ log σ terms (soft).

    Hou et al. 2022, Eq. 6–7 in log space: for j < i−1, log M[i,j] = Σ_{k=j}^{i−2} log σ(2(g_{i−1} − g_k)/τ);
    for j > i+1, log M[i,j] = Σ_{m=i+1}^{j−1} log σ(2(g_i − g_m)/τ); |i − j| ≤ 1 gives 0. With ``tau=None``
    (Algorithm 2) each term is 0 when g_k ≤ the reference gap and −inf otherwise (ties do not stop a range).
    σ(2x/τ) = (tanh(x/τ) + 1)/2 is Eq. 6's α with x = reference gap − g_k: a term tends to 1 while g_k stays below
    the reference gap, the direction of Algorithm 2 (the range grows until a larger gap). Eq. 6 as printed,
    tanh((d_i − d_j)/τ), has its operands the other way round, which would widen the range at the larger gaps
    that Algorithm 2 stops at: we follow Algorithm 2.
    """
    g = gaps.to(torch.float64)  # float64 prefix sums: differences of large sums stay exact enough
    *lead, t1 = g.shape
    T = t1 + 1
    # reference gaps: left of token i it is g_{i−1}, right of it g_i; pad the ends (never used there)
    pad = g.new_zeros(*lead, 1)
    ref_left = torch.cat([pad, g], dim=-1)   # (..., T): g_{i−1}
    ref_right = torch.cat([g, pad], dim=-1)  # (..., T): g_i
    if tau is None:
        # counts of blocking gaps, so that a prefix sum stays exact
        term_l = (g.unsqueeze(-2) > ref_left.unsqueeze(-1)).double()   # (..., T, T−1)
        term_r = (g.unsqueeze(-2) > ref_right.unsqueeze(-1)).double()
    else:
        term_l = -F.logsigmoid(2.0 * (ref_left.unsqueeze(-1) - g.unsqueeze(-2)) / tau)   # −log σ ≥ 0
        term_r = -F.logsigmoid(2.0 * (ref_right.unsqueeze(-1) - g.unsqueeze(-2)) / tau)
    # exclusive prefix sums over k: C[i, m] = Σ_{k<m} term[i, k], shape (..., T, T)
    zeros = term_l.new_zeros(*lead, T, 1)
    c_l = torch.cat([zeros, term_l.cumsum(-1)], dim=-1)
    c_r = torch.cat([zeros, term_r.cumsum(-1)], dim=-1)
    idx = torch.arange(T, device=g.device)
    i, j = idx.view(T, 1), idx.view(1, T)
    # left: Σ_{k=j}^{i−2} = C[i, i−1] − C[i, j]; right: Σ_{m=i+1}^{j−1} = C[i, j] − C[i, i+1]
    left = c_l.gather(-1, (i - 1).clamp(min=0).expand(T, 1).expand(*lead, T, 1)) - c_l
    right = c_r - c_r.gather(-1, (i + 1).clamp(max=T - 1).expand(*lead, T, 1))
    cost = torch.where(j < i - 1, left, torch.where(j > i + 1, right, torch.zeros_like(left)))
    cost = cost.clamp(min=0)  # cancellation in the prefix-sum difference can leave −1e-7
    if tau is None:
        return torch.where(cost > 0.5, torch.full_like(cost, float("-inf")), torch.zeros_like(cost)).float()
    return (-cost).float()


def local_range_mask(gaps: torch.Tensor, tau: Optional[float] = None) -> torch.Tensor:
    """Mask M (..., T, T) in ``gaps``' float dtype (float32 for integer gaps), Hou et al. 2022 Alg. 2 / Eq. 6–7.

    ``tau=None``: the hard 0/1 mask of Algorithm 2; a float τ: the soft mask of Eq. 6–7. Computed in
    log space in float32 and exponentiated, so log(M) is −inf exactly where M is 0 and never NaN.
    """
    dtype = gaps.dtype if gaps.is_floating_point() else torch.float32
    return local_range_log_mask(gaps, tau).exp().to(dtype)
