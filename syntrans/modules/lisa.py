"""LISA's parent-attention head (Strubell et al. 2018, as adapted by Bugliarello & Okazaki 2020), and its two losses:
the parent log-likelihood of a bi-affine head (``--lisa-loss ce``, Bugliarello & Okazaki 2020, §3.1) or the squared L2
distance of a stock dot-product head to a 0/1 parent mask (``--lisa-loss l2``, Hou et al., gated self-attention,
§2.2 and §5.2, their LISA baseline)."""
from __future__ import annotations

from typing import Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .precision import full_precision, to_dtype_clamped

#: ``--lisa-loss``: ce, the bi-affine head's parent log-likelihood; l2, a stock head's squared distance to the parent mask
LISA_LOSSES = ("ce", "l2")


class BiaffineScorer(nn.Module):
    """s_ij = [f(W_q x_i); 1]ᵀ U f(W_k x_j), f = leaky ReLU (Bugliarello & Okazaki 2020, their LISA baseline).

    W_q and W_k are the LISA head's own query and key projections (its slice of the layer's q_proj and
    k_proj); U ∈ ℝ^{(d+1)×d} is this module's only parameter, d the head dimension.
    """

    def __init__(self, head_dim: int):
        super().__init__()
        self.U = nn.Parameter(torch.empty(head_dim + 1, head_dim))
        nn.init.xavier_uniform_(self.U)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """q: (B, T, d), k: (B, S, d) unscaled head projections → scores (B, T, S) in q's dtype.

        Computed in float32 with autocast off, then clamped into q's dtype: unlike QKᵀ/√d these scores are not
        scaled, so they grow with d and the activations and can pass float16's 65504 (+inf there would make the
        head's softmax NaN). One head's (B, T, S), so the float32 costs little; the result is cast back so that the
        layer's (B, H, T, S) scores keep their dtype."""
        work = torch.promote_types(q.dtype, torch.float32)  # float32, or float64 for float64 inputs
        with full_precision(q.device.type):
            fq = F.leaky_relu(q.to(work))
            fq = torch.cat([fq, fq.new_ones(fq.shape[:-1] + (1,))], dim=-1)  # (B, T, d+1)
            scores = torch.bmm(fq @ self.U.to(work), F.leaky_relu(k.to(work)).transpose(1, 2))  # (B, T, S)
        return to_dtype_clamped(scores, q.dtype)


def gold_parent_rows(log_probs: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """The oracle head of ``--lisa-gold-parents``: one-hot rows on the gold parent where a query has one,
    the head's own log-probabilities elsewhere (EOS, padding). log_probs (B, T, S), parents (B, T) → (B, T, S)."""
    has = parents >= 0  # (B, T)
    one_hot = torch.full_like(log_probs, float("-inf"))
    one_hot.scatter_(-1, parents.clamp(min=0).unsqueeze(-1), 0.0)
    return torch.where(has.unsqueeze(-1), one_hot, log_probs)


def parent_loss(log_probs: torch.Tensor, parents: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LISA loss −Σ_i log A[i, parent(i)] (Bugliarello & Okazaki 2020, §3.1; LISA's ``ce`` loss) over the queries that
    have a parent (real tokens: no pad, no EOS), with the number of such queries and of those whose
    argmax key is the gold parent. log_probs (B, T, S) float, parents (B, T) long (−1: none) → three scalars."""
    has = parents >= 0  # (B, T)
    picked = log_probs.gather(-1, parents.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (B, T)
    loss = -torch.where(has, picked, torch.zeros_like(picked)).sum()  # pads may point at −inf keys
    hits = ((log_probs.argmax(-1) == parents) & has).sum()
    return loss, has.sum(), hits


def parent_l2_loss(probs: torch.Tensor, parents: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LISA loss Σ_i Σ_j (A_ij − M_ij)², M_i the 0/1 row with its 1 on token i's parent (Hou et al., gated
    self-attention, §2.2 and §5.2: "squared L2 distance between the label and computed attention"), over the queries
    that have a parent (real tokens: no pad, no EOS), with the number of such queries and of those whose argmax key
    is the gold parent. Padded keys have A = 0 and M = 0, so the sum over all keys is the sum over the real ones.
    probs (B, T, S) float, parents (B, T) long (−1: none) → three scalars."""
    has = parents >= 0  # (B, T)
    mask = F.one_hot(parents.clamp(min=0), probs.size(-1)).to(probs.dtype)  # (B, T, S) M
    rows = (probs - mask).pow(2).sum(-1)  # (B, T)
    loss = torch.where(has, rows, torch.zeros_like(rows)).sum()
    hits = ((probs.argmax(-1) == parents) & has).sum()
    return loss, has.sum(), hits
