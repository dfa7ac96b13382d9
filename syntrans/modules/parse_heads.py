"""The parses a model's parent-attention heads predict: which layers have them (:func:`parse_layers`) and the
predicted parent of every query row (:func:`rows_to_heads`, :func:`sentence_heads`).

A head block that is trained to attend to each token's dependency parent declares the subword convention it was
trained on (``HeadBlock.parse``: "first", "chain"); the argmax of its attention row (of the mean over its heads) is a
predicted parent (a subword position; the rows need not form a tree). A layer's report carries these argmaxes when a
forward keeps ``parse`` (:data:`~syntrans.modules.blocks.KEEP_PARSE`): the rows the layer attends with (after a
mixer and an oracle, before attention dropout), the same probabilities ``syntrans-plot attention`` draws.
"""
from __future__ import annotations

from typing import List, NamedTuple

import torch

from .attention_record import syntax_layers
from .blocks import HeadBlock
from .syntax_attention import SyntaxMultiheadAttention


class ParseLayer(NamedTuple):
    """One parse a model predicts: the heads of block ``kind`` in 0-based ``layer`` of ``side``."""

    side: str  # "encoder" | "decoder"
    layer: int
    kind: str  # the block's key
    attn: SyntaxMultiheadAttention

    @property
    def tag(self) -> str:
        """How generation lines and records name this parse: ``<block key>@<layer>``."""
        return f"{self.kind}@{self.layer}"

    @property
    def block(self) -> HeadBlock:
        return getattr(self.attn, self.kind)

    @property
    def mode(self) -> str:
        """The subword convention of the parse (:func:`syntrans.syntax.heads.word_heads`)."""
        return self.block.parse


def parse_layers(model) -> List[ParseLayer]:
    """Every parse of ``model`` (a ``syntax_transformer``): encoder layers first, in layer order, the blocks in head
    order within a layer. Heads given their parents predict none, so they are not parses."""
    return [ParseLayer(side, i, block.key, attn) for (side, i), attn in syntax_layers(model).items()
            for block in attn.blocks if block.parse]


def rows_to_heads(probs: torch.Tensor, layer: ParseLayer) -> torch.Tensor:
    """Per query row its predicted parent key: the argmax of the block's rows (the mean over its heads).
    probs (B, H, T, S) every head of the layer → (B, T) long."""
    block = layer.block
    return block.rows(probs[:, block.heads]).argmax(dim=-1)


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
