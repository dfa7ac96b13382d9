"""Head bias of the distance-mask method (Hou et al. 2022): log M in the first k heads, 0 elsewhere."""
from __future__ import annotations

from typing import Optional

import torch

from ..syntax.masks import local_range_log_mask


def distance_head_bias(gaps: torch.Tensor, pad_mask: torch.Tensor, num_heads: int, syntax_heads: int,
                       tau: Optional[float], dtype: torch.dtype) -> torch.Tensor:
    """Additive score bias (B·H, T, T): log M (Hou et al. 2022, Eq. 6–7 / Alg. 2) in heads 0…k−1, 0 in the others.

    gaps: (B, T−1) token gaps padded like the tokens; pad_mask: (B, T) True at padding. Rows of padding
    queries get no bias, so no row is ever fully masked.
    """
    B, T = pad_mask.shape
    log_m = local_range_log_mask(gaps, tau)  # (B, T, T) float32
    log_m = log_m.masked_fill(pad_mask.unsqueeze(-1), 0.0).to(dtype)
    bias = log_m.new_zeros(B, num_heads, T, T)
    bias[:, :syntax_heads] = log_m.unsqueeze(1)
    return bias.view(B * num_heads, T, T)
