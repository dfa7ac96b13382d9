"""Head bias of the distance-mask method (Hou et al. 2022): log M in the first k heads, 0 elsewhere."""
from __future__ import annotations

from typing import Optional

import torch

from ..syntax.masks import local_range_log_mask


def distance_log_mask(gaps: torch.Tensor, pad_mask: torch.Tensor, tau: Optional[float], dtype: torch.dtype) -> torch.Tensor:
    """log M (Hou et al. 2022, Eq. 6–7 / Alg. 2) of a padded batch, (B, T, T) in ``dtype``.

    gaps: (B, T−1) token gaps padded like the tokens; pad_mask: (B, T) True at padding. Rows of padding
    queries are 0, so no row is ever fully masked.
    """
    log_m = local_range_log_mask(gaps, tau)  # (B, T, T) float32
    return log_m.masked_fill(pad_mask.unsqueeze(-1), 0.0).to(dtype)


def distance_head_bias(gaps: torch.Tensor, pad_mask: torch.Tensor, num_heads: int, syntax_heads: int,
                       tau: Optional[float], dtype: torch.dtype) -> torch.Tensor:
    """Additive score bias (B·H, T, T): log M (Hou et al. 2022, Eq. 6–7) in heads 0…k−1, 0 in the others."""
    return spread_over_heads(distance_log_mask(gaps, pad_mask, tau, dtype), num_heads, syntax_heads)


def spread_over_heads(log_m: torch.Tensor, num_heads: int, heads: int) -> torch.Tensor:
    """(B, T, S) → (B·H, T, S): ``log_m`` in heads 0…heads−1, 0 in the others (fairseq's batch-major head rows)."""
    B, T, S = log_m.shape
    bias = log_m.new_zeros(B, num_heads, T, S)
    bias[:, :heads] = log_m.unsqueeze(1)
    return bias.view(B * num_heads, T, S)
