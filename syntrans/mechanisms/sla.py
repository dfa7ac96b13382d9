"""Syntax-aware local attention heads, SLA (Li et al. 2021, "Improving BERT with Syntax-aware Local Attention", as Hou
et al., "Learning to Adaptively Incorporate External Syntax …" (the paper of the syntax mixer), §2.1 and §5.2 describe
and re-implement it): in chosen heads of chosen encoder layers each token attends only to the tokens whose distance in
the source's dependency tree (the shortest path length between their words) is at most a threshold m:
softmax(QKᵀ/√d + log M) with M[i, j] = 1 if D(i, j) ≤ m, else 0 (log M: 0 / −inf).

Subwords of one word are at distance 0 of each other (:func:`syntrans.syntax.dependency_paths.subword_path_lengths`).
A token always sees itself; EOS sees only itself and is in no other token's window; padding keys stay masked as in
stock attention, and padding queries are left unrestricted (their rows are never read). Words of two sentences of one
line have no path: they are never in each other's window.

The paper combines this local attention with the global (stock) attention of the same head by a learned per-head
weight, "without any regularization" (§5.2): that is the mixer of syntax heads (Hou et al., Eq. 4-6 and 10) with no
BatchNorm, no pre-warm-up and no dropout on the syntax attention, which the preset ``sla_transformer_iwslt_de_en``
switches on over these heads. These heads alone (no mixer) are the hard local attention.

An additive mechanism: its heads run in the fused SDPA kernel with log M as the bias; log M is formed once per batch,
(B, T, T), from two per-token features (``src_word_first``: each token's word as the position of the word's first
subword; ``src_parent_first``: its head word's first subword) and shared by every layer.
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
from dataclasses import dataclass, field
from typing import List

import torch
from fairseq.dataclass import FairseqDataclass

from ..modules.blocks import HeadBlock, LogMaskHeads
from .base import FeatureNeeds, Mechanism, check_option, is_number, required_feature
from .layer_lists import resolve_layers

#: the window's default threshold m (ours: Hou et al. do not state it; see docs/methods.md)
DEFAULT_THRESHOLD = 2


@dataclass
class SlaConfig(FairseqDataclass):
    """SLA heads (Li et al. 2021, as Hou et al. describe it): attention within dependency-tree distance ≤ m."""

    layers: List[int] = field(
        default_factory=list,
        metadata={"help": "0-based encoder layers with SLA heads (comma-separated, or 'all'); empty: none"},
    )
    heads: int = field(default=0, metadata={"help": "number of SLA heads per chosen layer (after the heads of the "
                                                    "mechanisms before it in the registry)"})
    threshold: int = field(
        default=DEFAULT_THRESHOLD,
        metadata={"help": "m: a token attends to the tokens whose words are at most m dependency arcs away (ours: "
                          "not stated by the papers)"},
    )


def tree_window(word_first: torch.Tensor, parent_first: torch.Tensor, pad_mask: torch.Tensor,
                threshold: int) -> torch.Tensor:
    """Which keys each query may attend to: D(i, j) ≤ m, D the dependency path length between the words of tokens i
    and j (Hou et al., the mixer's paper, §5.2), for a padded batch.

    word_first (B, T) long: the position of the first subword of token i's word (−1: EOS, padding); parent_first
    (B, T) long: the first subword of its head word (its own word's for a root, −1: EOS, padding); both in padded
    coordinates; pad_mask (B, T) True at padding. Returns (B, T, T) bool: every token sees itself, EOS only itself,
    padding queries everything (their rows are never read). Reachability within m steps of the word tree over token
    positions: m boolean matrix products."""
    B, T = word_first.shape
    valid = word_first >= 0  # (B, T) real subword tokens
    node = word_first.clamp(min=0)  # (B, T)
    arc = valid & (parent_first >= 0) & (parent_first != node)  # (B, T) a token whose word has a head word
    b = torch.arange(B, device=word_first.device).unsqueeze(1).expand(B, T)[arc]
    u, v = node[arc], parent_first[arc]
    adjacency = torch.zeros(B, T, T, dtype=torch.float32, device=word_first.device)
    adjacency[b, u, v] = 1.0
    adjacency[b, v, u] = 1.0  # (B, T, T): the word tree's arcs between first-subword positions, both directions
    reach = torch.eye(T, dtype=torch.bool, device=word_first.device).expand(B, T, T)
    for _ in range(int(threshold)):  # reach[b, x, y]: y within the steps taken so far from x
        reach = reach | (torch.bmm(reach.float(), adjacency) > 0)
    rows = reach.gather(1, node.unsqueeze(-1).expand(B, T, T))  # (B, T, T) rows[b, i, :] = reach[b, node_i, :]
    window = rows.gather(2, node.unsqueeze(1).expand(B, T, T))  # (B, T, T) reach[b, node_i, node_j]
    window = window & valid.unsqueeze(2) & valid.unsqueeze(1)
    window = window | torch.eye(T, dtype=torch.bool, device=word_first.device)  # a token (EOS too) sees itself
    return window | pad_mask.unsqueeze(2)  # padding queries: no restriction


def window_log_mask(word_first: torch.Tensor, parent_first: torch.Tensor, pad_mask: torch.Tensor, threshold: int,
                    dtype: torch.dtype) -> torch.Tensor:
    """log M of :func:`tree_window`: 0 inside the window, −inf outside (Hou et al., the mixer's paper, Eq. 8-9 with a
    0/1 mask), (B, T, T) in ``dtype``."""
    window = tree_window(word_first, parent_first, pad_mask, threshold)
    return torch.zeros(window.shape, dtype=dtype, device=window.device).masked_fill(~window, float("-inf"))


class SlaHeads(LogMaskHeads):
    """softmax(QKᵀ/√d + log M) with M the dependency-tree window (Li et al. 2021 as Hou et al. §5.2 describe it) in
    each of the block's heads."""

    key = "sla"
    heads_name = "SLA"
    needs = "tree window (the encoder prepares it from src_word_first and src_parent_first)"


class Sla(Mechanism):
    """The SLA mechanism: its heads follow those of the mechanisms before it in the registry, in the chosen encoder
    layers; the source's word and head-word positions as its features."""

    key = "sla"
    Config = SlaConfig
    title = "SLA (Li et al. 2021, as Hou et al. re-implement it)"

    def __init__(self, cfg: SlaConfig, shape):
        super().__init__(cfg, shape)
        self.layers = resolve_layers(cfg.layers, shape.encoder_layers, "--sla-layers")
        H = shape.encoder_heads
        check_option(not self.layers or (is_number(cfg.heads, True) and 1 <= cfg.heads <= H), "--sla-heads",
                     f"must lie in 1..{H} (attention heads)", cfg.heads)
        check_option(is_number(cfg.threshold, True) and cfg.threshold >= 0, "--sla-threshold",
                     "is a number of dependency arcs, an integer >= 0", cfg.threshold)

    @property
    def active(self) -> bool:
        return bool(self.layers)

    def heads(self, side: str, layer: int) -> int:
        return int(self.cfg.heads) if side == "encoder" and layer in self.layers else 0

    def block(self, side: str, layer: int, num_heads: int, head_dim: int) -> HeadBlock:
        return SlaHeads(num_heads)

    def features(self, side: str) -> FeatureNeeds:
        if side == "encoder" and self.active:
            return FeatureNeeds(required={"src_word_first", "src_parent_first"})
        return FeatureNeeds()

    def prepare(self, side, features, tokens, pad_mask, dtype, training):
        if side != "encoder" or not self.active:
            return None
        why = "the SLA heads"
        word_first = required_feature(features, "src_word_first", tuple(tokens.shape), why).long()
        parent_first = required_feature(features, "src_parent_first", tuple(tokens.shape), why).long()
        return window_log_mask(word_first, parent_first, pad_mask, int(self.cfg.threshold), dtype)  # (B, T, T)


__all__ = ["DEFAULT_THRESHOLD", "Sla", "SlaConfig", "SlaHeads", "tree_window", "window_log_mask"]
