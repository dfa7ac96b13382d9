"""Syntax-aware local attention heads, SLA (Li et al. 2021, "Improving BERT with Syntax-aware Local Attention", as Hou
et al., "Learning to Adaptively Incorporate External Syntax …" (the paper of the syntax mixer), §2.1 and §5.2 describe
and re-implement it): in chosen heads of chosen encoder layers each token attends only to the tokens whose distance in
the source's dependency tree (the shortest path length between their words) is at most a threshold m:
softmax(QKᵀ/√d + log M) with M[i, j] = 1 if D(i, j) ≤ m, else 0 (log M: 0 / −inf).

Subwords of one word are at distance 0 of each other (:func:`syntrans.syntax.dependency_paths.subword_path_lengths`).
A token always sees itself; EOS sees only itself and is in no other token's window (ours); padding keys stay masked as
in stock attention, and padding queries are left unrestricted (their rows are never read). Words of two sentences of
one line have no path: they are never in each other's window. The window itself is built in
:mod:`syntrans.syntax.sla_window` (pure torch).

The gated paper combines this local attention with the global (stock) attention by "a naive gating network … at each
attention head of each layer", "without any regularization" (§5.2), and states no more of its form. Our reading is
that paper's own gate network (Hou et al., Eq. 4-6 and 10: one G per sentence and head) with no BatchNorm, no
pre-warm-up and no dropout on the syntax attention, which the preset ``sla_transformer_iwslt_de_en`` switches on over
these heads. These heads alone (no mixer) are the hard local attention.

Li et al.'s released code (github.com/Neutralzz/syntax_aware_local_attention, ``src/dataset.py`` and the model)
differs in these ways, each an option here (off by default):

* ``window="neighbours"``: the window of token i is the union of the windows of the words i−1, i and i+1 (the linear
  neighbours of its word), D'(i, j) = min_{k ∈ {w−1, w, w+1}} D(k, j) ≤ m; their default m is 3. Ours restricts the
  neighbours to the token's own tree; ``window="neighbours-unrestricted"`` takes them unconditionally, as the code.
* ``boundary_visible``: EOS is in every token's window and sees every token, as the code's [CLS] and [SEP]; by
  default (ours) EOS sees only itself.
* ``token_gate``: the gate is per token and layer, g_i = σ(w·x_i + b) with one Linear(d → 1) shared by the layer's
  syntax heads (x_i the layer's input at token i): A[i, :] = g_i·A_syn[i, :] + (1 − g_i)·A_raw[i, :]
  (:class:`TokenGate`). It replaces the gate mechanism's per-head gate on its layers (one mixer per layer).

An additive mechanism: its heads run in the fused SDPA kernel with log M as the bias; log M is formed once per batch,
(B, T, T), from two per-token features (``src_word_first``: each token's word as the position of the word's first
subword; ``src_parent_first``: its head word's first subword) and shared by every layer.
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
from dataclasses import dataclass, field
from typing import Dict, List

import torch
import torch.nn as nn
from fairseq.dataclass import FairseqDataclass

from ..modules.aux_losses import report_aux_metric
from ..modules.blocks import LINEAR_DEFAULT, HeadBlock, LayerMixer, LogMaskHeads, SideInputs
from ..modules.layer_report import MixerReport
from ..modules.precision import full_precision, named_precision
from ..syntax.sla_window import WINDOWS, tree_window, window_log_mask
from .base import FeatureNeeds, check_choice, check_option, is_number, reports_of, required_feature
from .encoder_heads import EncoderHeads

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
    window: str = field(
        default="word",
        metadata={"help": "word: the distances from the token's own word (Hou et al., gated self-attention, §5.2); "
                          "neighbours: the union of the windows of its word and of the word's two linear neighbours "
                          "within its own tree (Li et al. 2021's released code, src/dataset.py, without the tree "
                          "restriction: ours); neighbours-unrestricted: the same union over i-1 and i+1 whatever "
                          "tree they are in, as Li et al. 2021's released code takes them"},
    )
    boundary_visible: bool = field(
        default=False,
        metadata={"help": "EOS sees every real token and is in every token's window, as Li et al. 2021's released "
                          "code (src/dataset.py) treats [CLS] and [SEP]; off (ours): EOS sees only itself"},
    )
    token_gate: bool = field(
        default=False,
        metadata={"help": "mix the SLA heads with stock attention by one gate per token and layer, sigmoid(Linear(d, 1)) "
                          "of the layer input shared by the heads (Li et al.'s released code), instead of --gate-layers"},
    )


class SlaHeads(LogMaskHeads):
    """softmax(QKᵀ/√d + log M) with M the dependency-tree window (Li et al. 2021 as Hou et al. §5.2 describe it) in
    each of the block's heads."""

    key = "sla"
    heads_name = "SLA"
    needs = "tree window (the encoder prepares it from src_word_first and src_parent_first)"


@dataclass
class TokenGateReport(MixerReport):
    """What a token-gated layer's mixer reports: one gate per token, shared by the layer's syntax heads (no gate per
    head: :attr:`weights_per_head` is None)."""

    values: torch.Tensor  # (B, T) g_i of each token, detached
    pad: torch.Tensor  # (B, T) True at padding


class TokenGate(LayerMixer):
    """One gate per token and layer shared by the layer's syntax heads (Li et al.'s released SLA code): g_i =
    σ(w·x_i + b), one Linear(d → 1) of the layer input x_i, and A[i, :] = g_i·A_syn[i, :] + (1 − g_i)·A_raw[i, :]
    for every syntax head. The gate runs in float32 with autocast off (a (T, B, C) → (T, B) projection)."""

    key = "sla_gate"
    Report = TokenGateReport

    def __init__(self, embed_dim: int):
        super().__init__()
        self.proj = nn.Linear(embed_dim, 1)

    def initialisation(self) -> Dict[str, str]:
        return {"proj.": f"w, b: {LINEAR_DEFAULT} (ours: neither Li et al. nor Hou et al. state one)"}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (T, B, C) the layer input → g (B, T) ∈ (0, 1), in the projection's dtype."""
        with named_precision("the SLA token gate (Li et al.)", x), full_precision(x.device.type):
            return torch.sigmoid(self.proj(x.to(self.proj.weight.dtype))).squeeze(-1).t()

    def _mix(self, syn: torch.Tensor, raw: torch.Tensor, x: torch.Tensor, pad: torch.Tensor):
        g = self(x)  # (B, T)
        mixed = torch.lerp(raw, syn, g.to(syn.dtype)[:, None, :, None])  # (B, n, T, S|d): raw + g·(syn − raw)
        return mixed, self.Report(g.detach(), pad)

    def mix(self, p_syn, p_raw, x, pad, inputs: SideInputs, syntax_keep=None):
        """p_* (B, n, T, S): each query row mixed by its token's gate (no syntax dropout: ``syntax_keep`` is None)."""
        return self._mix(p_syn, p_raw, x, pad)

    def mix_outputs(self, o_syn, o_raw, x, pad, inputs: SideInputs):
        """o_* (B, n, T, d): the mix is per query row, so it is the same on the heads' outputs."""
        return self._mix(o_syn, o_raw, x, pad)


class Sla(EncoderHeads):
    """The SLA mechanism: its heads follow those of the mechanisms before it in the registry, in the chosen encoder
    layers; the source's word and head-word positions as its features."""

    key = "sla"
    Config = SlaConfig
    title = "SLA (Li et al. 2021, as Hou et al. re-implement it)"
    name = "SLA"

    def __init__(self, cfg: SlaConfig, shape):
        super().__init__(cfg, shape)
        check_option(is_number(cfg.threshold, True) and cfg.threshold >= 0, "--sla-threshold",
                     "is a number of dependency arcs, an integer >= 0", cfg.threshold)
        check_choice("--sla-window", cfg.window, WINDOWS)
        check_option(isinstance(cfg.boundary_visible, bool), "--sla-boundary-visible", "is a switch (True or False)",
                     cfg.boundary_visible)
        check_option(isinstance(cfg.token_gate, bool), "--sla-token-gate", "is a switch (True or False)",
                     cfg.token_gate)

    def block(self, side: str, layer: int, num_heads: int, head_dim: int) -> HeadBlock:
        return SlaHeads(num_heads)

    def mixes(self, side: str, layer: int) -> bool:
        return bool(self.cfg.token_gate) and side == "encoder" and layer in self.layers

    def mixer(self, side: str, layer: int, embed_dim: int, num_heads: int):
        return TokenGate(embed_dim) if self.mixes(side, layer) else None

    def report(self, side, layers, extra, training):
        """At evaluation the mean token gate of every token-gated layer, over real tokens."""
        if training:
            return
        for i, rep in sorted(reports_of(layers, TokenGate.key).items()):
            real = ~rep.pad  # (B, T)
            report_aux_metric(extra, f"sla_gate_l{i}", rep.values.float()[real].sum(), real.sum())

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
        return window_log_mask(word_first, parent_first, pad_mask, int(self.cfg.threshold), dtype,
                               neighbours=self.cfg.window,
                               boundary_visible=bool(self.cfg.boundary_visible))  # (B, T, T)


__all__ = ["DEFAULT_THRESHOLD", "Sla", "SlaConfig", "SlaHeads", "TokenGate", "TokenGateReport", "WINDOWS", "tree_window",
           "window_log_mask"]
