"""The parses a model's parent-attention heads predict: which layers have them (:func:`parse_layers`), keeping
their probabilities during a forward (:func:`keep_parse_probs`), and the predicted parent of every query row
(:func:`rows_to_heads`, :func:`sentence_heads`).

Two mechanisms are trained to attend to each token's dependency parent, so the argmax of their attention row is
a predicted parent (a subword position; the rows need not form a tree):

* LISA (Strubell et al. 2018, as adapted by Bugliarello & Okazaki 2020): one encoder head, its row's argmax;
  trained on "first" subword parents (:func:`syntrans.syntax.parents.subword_parents`).
* DBSA (Deguchi et al. 2019): the argmax of the mean attention of the layer's DBSA heads (the distribution their
  parent loss trains, :func:`~syntrans.modules.dbsa.dbsa_log_probs`); encoder heads, or causal decoder heads;
  trained on "chain" subword parents.

The rows are those the layer attends with (after a gate and the oracles ``--lisa-gold-parents`` /
``--dbsa-gold-parents``, before attention dropout): the same probabilities ``syntrans-plot attention`` draws.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, List, NamedTuple

import torch

from .attention_record import syntax_layers
from .syntax_attention import SyntaxMultiheadAttention

#: parse kinds and the subword convention each was trained on (:func:`syntrans.syntax.heads.word_heads`)
PARSE_MODES = {"dbsa": "chain", "lisa": "first"}


class ParseLayer(NamedTuple):
    """One parse a model predicts: the heads of ``kind`` (``dbsa``/``lisa``) in 0-based ``layer`` of ``side``."""

    side: str  # "encoder" | "decoder"
    layer: int
    kind: str  # "dbsa" | "lisa"
    attn: SyntaxMultiheadAttention

    @property
    def tag(self) -> str:
        """How generation lines and records name this parse, e.g. ``dbsa@0``."""
        return f"{self.kind}@{self.layer}"

    @property
    def mode(self) -> str:
        """The subword convention of the parse: ``chain`` (DBSA) or ``first`` (LISA)."""
        return PARSE_MODES[self.kind]


def parse_layers(model) -> List[ParseLayer]:
    """Every parse of ``model`` (a ``syntax_transformer``): encoder layers first, in layer order, LISA before
    DBSA within a layer (the head order of :class:`~syntrans.modules.head_plan.HeadPlan`). Distance-mask and
    PASCAL heads are given parents, they do not predict them, so they are not parses."""
    out: List[ParseLayer] = []
    for (side, i), attn in syntax_layers(model).items():
        if attn.plan.lisa:
            out.append(ParseLayer(side, i, "lisa", attn))
        if attn.plan.dbsa:
            out.append(ParseLayer(side, i, "dbsa", attn))
    return out


@contextmanager
def keep_parse_probs(layers: List[ParseLayer]) -> Iterator[None]:
    """Inside the block each layer of ``layers`` keeps the probabilities of its last forward
    (``attn.probs`` (B, H, T, S) float32; in incremental decoding T = 1, the current step's query row).
    Keeping them changes no number the model computes (see ``SyntaxMultiheadAttention.explicit_scores_needed``).
    Switched off and dropped again on exit, also on errors."""
    modules = {id(x.attn): x.attn for x in layers}.values()
    for attn in modules:
        attn.keep_probs, attn.probs = True, None
    try:
        yield
    finally:
        for attn in modules:
            attn.keep_probs, attn.probs = False, None


def rows_to_heads(probs: torch.Tensor, layer: ParseLayer) -> torch.Tensor:
    """Per query row its predicted parent key: argmax of the LISA head's row, or of the mean of the layer's DBSA
    heads' rows (Deguchi et al. 2019: the parse is their mean attention). probs (B, H, T, S) → (B, T) long."""
    plan = layer.attn.plan
    if layer.kind == "lisa":
        rows = probs[:, plan.lisa_head]  # (B, T, S)
    else:
        rows = probs[:, plan.dbsa_heads].mean(dim=1)  # (B, T, S)
    return rows.argmax(dim=-1)


def sentence_heads(heads: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """One sentence's predicted parents in its own subword numbering.

    heads (T,) long: each padded row's predicted key position; positions (n,) long: the padded positions of the
    sentence's subwords, in order (no padding, no EOS/BOS). Returns (n,) long: the parent of subword j as the
    index of its key in ``positions``, or −1 where the key is none of them (EOS, BOS, padding)."""
    index_of = torch.full((heads.size(0),), -1, dtype=torch.long, device=heads.device)  # (T,) padded → subword
    index_of[positions] = torch.arange(positions.numel(), device=heads.device)
    keys = heads[positions]  # (n,)
    inside = keys < index_of.numel()
    return torch.where(inside, index_of[keys.clamp(max=index_of.numel() - 1)], torch.full_like(keys, -1))
