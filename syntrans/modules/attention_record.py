"""Recording the attention probabilities a model's syntax layers compute (for figures: ``syntrans-plot attention``).

:func:`record_attention` switches ``keep_probs`` on in every self-attention layer that has syntax heads
(:class:`~syntrans.modules.syntax_attention.SyntaxMultiheadAttention` with an active
:class:`~syntrans.modules.head_plan.HeadPlan`), lets the caller run its forward, and hands back what those
layers computed: no attention is recomputed here, the layers keep their own post-softmax probabilities::

    with record_attention(model) as probs:
        model(**sample["net_input"])
    probs[("encoder", 0)]  # (B, H, T, S) float32: every head of encoder layer 0, before attention dropout

Which heads are syntax heads, and of which kind, is the layer's ``plan`` (:func:`syntax_layers`).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, Iterator, Tuple

import torch

from .syntax_attention import SyntaxMultiheadAttention

LayerKey = Tuple[str, int]  # ("encoder" | "decoder", 0-based layer)


def syntax_layers(model) -> Dict[LayerKey, SyntaxMultiheadAttention]:
    """The self-attention modules with syntax heads, by (side, layer), encoder layers first, in layer order.

    ``model`` is a ``syntax_transformer`` (or anything with ``encoder.layers``/``decoder.layers`` whose layers
    have ``self_attn``); layers without syntax heads are left out.
    """
    out: Dict[LayerKey, SyntaxMultiheadAttention] = {}
    for side in ("encoder", "decoder"):
        part = getattr(model, side, None)
        for i, layer in enumerate(getattr(part, "layers", None) or []):
            attn = getattr(layer, "self_attn", None)
            if isinstance(attn, SyntaxMultiheadAttention) and attn.plan.active:
                out[side, i] = attn
    return out


@contextmanager
def record_attention(model) -> Iterator[Dict[LayerKey, torch.Tensor]]:
    """Keep the attention probabilities of every syntax layer during the ``with`` block.

    Yields a dict that is filled when the block ends: (side, layer) → probs (B, H, T, S) float32, detached,
    every head of that layer (its syntax heads are 0 … ``plan.syntax_heads`` − 1), post-softmax and before
    attention dropout, from the last forward inside the block (layers that ran no forward are left out).
    ``keep_probs`` is switched off and the kept tensors dropped from the layers again on exit, also on errors.
    """
    layers = syntax_layers(model)
    kept: Dict[LayerKey, torch.Tensor] = {}
    for attn in layers.values():
        attn.keep_probs, attn.probs = True, None
    try:
        yield kept
    finally:
        for key, attn in layers.items():
            if attn.probs is not None:
                kept[key] = attn.probs
            attn.keep_probs, attn.probs = False, None
