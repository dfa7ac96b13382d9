"""Dependency-based self-attention (DBSA, Deguchi et al. 2019): bi-affine heads trained to attend
to each token's dependency parent, in the encoder and (causally) in the decoder.

A DBSA head scores A = softmax(Q U Kᵀ/√d) with a learned U ∈ ℝ^{d×d} per head. Since Q U Kᵀ = (Q U) Kᵀ, the
head is a stock attention head whose query is multiplied by U: :class:`BiaffineQueryProjection` is the layer's
``q_proj`` and applies U after the stock projection, so fairseq's incremental decoding (its key/value cache, beam
reordering) computes DBSA unchanged; full-sequence self-attention forms the scores explicitly
(:meth:`~syntrans.modules.syntax_attention.SyntaxMultiheadAttention.explicit_scores_needed`).
"""
from __future__ import annotations

import math
from typing import Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .precision import named_precision


class BiaffineQueryProjection(nn.Module):
    """The layer's query projection followed by Q_h ← Q_h U_h on the DBSA heads (Deguchi et al. 2019:
    A_h = softmax(Q_h U_h K_hᵀ/√d_k)).

    It holds the stock ``q_proj``'s own ``weight`` and ``bias`` (the same parameters, so the checkpoint keys stay
    ``…q_proj.weight``/``…q_proj.bias``) plus ``U`` (n, d, d) for the n heads of ``heads``. U starts as the identity
    (our choice: before training the DBSA heads are the stock heads), so building it draws no random numbers.
    """

    def __init__(self, stock: nn.Linear, num_heads: int, heads: slice):
        super().__init__()
        if stock._forward_pre_hooks or stock._forward_hooks:
            raise ValueError("DBSA heads replace the query projection and cannot keep its hooks (e.g. --quant-noise-pq)")
        self.in_features, self.out_features = stock.in_features, stock.out_features
        self.weight = stock.weight  # (C, C_in)
        self.bias = stock.bias  # (C,) or None
        self.num_heads = num_heads
        self.head_dim = self.out_features // num_heads
        self.dbsa = heads
        n = heads.stop - heads.start
        self.U = nn.Parameter(torch.eye(self.head_dim).repeat(n, 1, 1))  # (n, d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (…, C_in) → (…, C): the stock projection, the DBSA heads' slices multiplied by their U."""
        q = F.linear(x, self.weight, self.bias)  # (…, C)
        heads = q.view(q.shape[:-1] + (self.num_heads, self.head_dim))  # (…, H, d)
        s = self.dbsa
        with named_precision("the DBSA heads' bi-affine query (Deguchi et al. 2019)", x):
            # in q's dtype: the scores Q U Kᵀ are scaled by 1/√d as a stock head's (LISA's bi-affine ones are not)
            biaffine = torch.einsum("...hd,hde->...he", heads[..., s, :], self.U.to(q.dtype))  # (…, n, d)
        return torch.cat([heads[..., : s.start, :], biaffine, heads[..., s.stop:, :]], dim=-2).flatten(-2)


def causal_parents(parents: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Decoder arcs whose parent follows the dependent cannot be scored under the causal mask (Deguchi et al.
    2019): they are dropped (set to −1) and counted. parents (B, T) long, −1 = none → (kept (B, T), dropped ())."""
    T = parents.size(1)
    later = parents > torch.arange(T, device=parents.device)  # (B, T); −1 never counts
    return parents.masked_fill(later, -1), later.sum()


def dbsa_log_probs(scores: torch.Tensor) -> torch.Tensor:
    """log of the DBSA heads' mean attention, log (1/n) Σ_h softmax(s_h), from their masked scores.

    scores (B, n, T, S) with −inf at masked keys → (B, T, S) float32. With several DBSA heads the parse
    distribution is their average (our choice, the same average SyncAttn takes as E and D)."""
    log_p = torch.log_softmax(scores.float(), dim=-1)  # (B, n, T, S)
    n = scores.size(1)
    if n == 1:
        return log_p[:, 0]
    # a key masked in every head (padding, the causal future) stays −inf, kept out of logsumexp: its backward
    # at an all −inf slice is NaN
    dead = torch.isneginf(log_p).all(dim=1)  # (B, T, S)
    mean = torch.logsumexp(log_p.masked_fill(dead.unsqueeze(1), 0.0), dim=1) - math.log(n)  # (B, T, S)
    return mean.masked_fill(dead, float("-inf"))


def gold_rows(probs: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """The oracle of ``--dbsa-gold-parents``: every DBSA head's row of a query with a gold parent becomes one-hot on
    that parent (the mean attention, the parse, too); rows without one (EOS, padding) keep the heads' own.
    probs (B, n, T, S) float, parents (B, T) long (−1: none) → (B, n, T, S)."""
    has = (parents >= 0)[:, None, :, None]  # (B, 1, T, 1)
    one_hot = F.one_hot(parents.clamp(min=0), probs.size(-1)).to(probs.dtype).unsqueeze(1)  # (B, 1, T, S)
    return torch.where(has, one_hot, probs)
