"""Synchronous syntactic attention (SyncAttn, Deguchi et al. 2021): the target-side dependency
attention D should agree with the source-side one E mapped through the encoder-decoder attention C."""
from __future__ import annotations

from typing import Tuple

import torch

from .precision import full_precision


def mapped_target_attention(E: torch.Tensor, C: torch.Tensor, tgt_pad: torch.Tensor) -> torch.Tensor:
    """D' = softmax over keys of causal-mask(C E Cᵀ) (Deguchi et al. 2021, SyncAttn).

    E (B, I, I) source DBSA attention, C (B, J, I) encoder-decoder attention (rows sum to 1 over real source
    keys, 0 on padding), tgt_pad (B, J) True at target padding → (B, J, J) float32; keys after the query and
    padding keys get 0. A padding query keeps its own position so that no row is empty (no NaN). Float32 also under
    autocast, which is switched off here (it would run the bmm in half precision, and CPU autocast the softmax too)."""
    with full_precision(C.device.type):
        C = C.float()
        mapped = torch.bmm(torch.bmm(C, E.float()), C.transpose(1, 2))  # (B, J, J)
        return torch.softmax(mapped.masked_fill(sync_masked(tgt_pad), float("-inf")), dim=-1)


def sync_masked(tgt_pad: torch.Tensor) -> torch.Tensor:
    """(B, J, J) True at the masked cells: keys after the query, padding keys (except a padding query's own)."""
    J = tgt_pad.size(1)
    idx = torch.arange(J, device=tgt_pad.device)
    future = idx.unsqueeze(0) > idx.unsqueeze(1)  # (J, J) key after query
    own = idx.unsqueeze(0) == idx.unsqueeze(1)
    return future.unsqueeze(0) | (tgt_pad.unsqueeze(1) & ~(own.unsqueeze(0) & tgt_pad.unsqueeze(2)))


def sync_loss(E: torch.Tensor, D: torch.Tensor, C: torch.Tensor, tgt_pad: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """L_sync = Σ_{t,q} (D'_{t,q} − D_{t,q})² over the unmasked cells of real target queries (Deguchi et al.
    2021, SyncAttn), with the number of real target positions (the loss is reported per target token).

    E (B, I, I), D (B, J, J) decoder DBSA attention, C (B, J, I), tgt_pad (B, J) → (sum (), count ())."""
    d_prime = mapped_target_attention(E, C, tgt_pad)  # (B, J, J)
    cells = ~sync_masked(tgt_pad) & ~tgt_pad.unsqueeze(2)  # (B, J, J)
    sq = (d_prime - D.float()).pow(2)
    return torch.where(cells, sq, torch.zeros_like(sq)).sum(), (~tgt_pad).sum()
