"""Distance-mask heads (Hou et al. 2022, "Syntax-guided Localized Self-attention by Constituency Syntactic
Distance"): in chosen heads of chosen encoder layers, attention = softmax(QKᵀ/√d + log M) with M the syntactic local
range mask of the source's constituency distances (Eq. 6–7 / Algorithm 2, :mod:`syntrans.syntax.masks`).

An additive mechanism: its heads run in the fused SDPA kernel with log M as the bias (no per-head (B, H, T, S)
tensor; log M is formed once per batch, (B, T, T), and shared by every layer).
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
from dataclasses import dataclass, field
from typing import List, Optional

import torch
from fairseq.dataclass import FairseqDataclass

from ..modules.blocks import HeadBlock, LogMaskHeads
from ..syntax.masks import local_range_log_mask
from .base import FeatureNeeds, check_option, is_number, required_feature
from .encoder_heads import EncoderHeads


@dataclass
class DistanceMaskConfig(FairseqDataclass):
    """Distance-mask heads (Hou et al. 2022): attention = softmax(QKᵀ/√d + log M) in chosen heads."""

    layers: List[int] = field(
        default_factory=list,
        metadata={"help": "0-based encoder layers with distance-mask heads (comma-separated, or 'all'); empty: none"},
    )
    heads: int = field(default=0, metadata={"help": "number of distance-mask heads per chosen layer: heads 0..k-1"})
    tau: float = field(default=10.0, metadata={"help": "temperature τ of the soft mask (Eq. 6-7)"})
    hard: bool = field(default=False, metadata={"help": "use the hard 0/1 mask of Algorithm 2 instead of the soft one"})


def distance_log_mask(gaps: torch.Tensor, pad_mask: torch.Tensor, tau: Optional[float], dtype: torch.dtype) -> torch.Tensor:
    """log M (Hou et al. 2022, Eq. 6–7 / Alg. 2) of a padded batch, (B, T, T) in ``dtype``.

    gaps: (B, T−1) token gaps padded like the tokens; pad_mask: (B, T) True at padding. Rows of padding queries are
    0, so no row is ever fully masked.
    """
    log_m = local_range_log_mask(gaps, tau)  # (B, T, T) float32
    return log_m.masked_fill(pad_mask.unsqueeze(-1), 0.0).to(dtype)


class DistanceHeads(LogMaskHeads):
    """softmax(QKᵀ/√d + log M) (Hou et al. 2022, Eq. 7) in each of the block's heads."""

    key = "distance"
    heads_name = "distance-mask"
    needs = "log M (the encoder prepares it from src_gaps)"


class DistanceMask(EncoderHeads):
    """The distance-mask mechanism: heads 0…k−1 of the chosen encoder layers, the source's gaps as its feature."""

    key = "distance"
    Config = DistanceMaskConfig
    title = "distance-mask (Hou et al. 2022)"

    def __init__(self, cfg: DistanceMaskConfig, shape):
        super().__init__(cfg, shape)
        check_option(is_number(cfg.tau) and cfg.tau > 0, "--distance-tau",
                     "(the soft mask's temperature τ, Eq. 6-7) must be > 0", cfg.tau)
        self.tau = None if cfg.hard else float(cfg.tau)

    def block(self, side: str, layer: int, num_heads: int, head_dim: int) -> HeadBlock:
        return DistanceHeads(num_heads)

    def features(self, side: str) -> FeatureNeeds:
        return FeatureNeeds(required={"src_gaps"}) if side == "encoder" and self.active else FeatureNeeds()

    def prepare(self, side, features, tokens, pad_mask, dtype, training):
        if side != "encoder" or not self.active:
            return None
        B, T = tokens.shape
        gaps = required_feature(features, "src_gaps", (B, T - 1), "the distance-mask heads")
        return distance_log_mask(gaps, pad_mask, self.tau, dtype)  # (B, T, T)
