"""Multi-head attention that adds a per-head syntax bias to the scores of some heads.

With no bias set it is fairseq's ``MultiheadAttention`` unchanged (same code path, same kernels).
With a bias it computes softmax(QKᵀ/√d + bias_h) per head h through the same fused path, the bias
being 0 for heads without syntax.
"""
from __future__ import annotations

from typing import Optional

import torch
from fairseq.modules import MultiheadAttention


class SyntaxBiasedMultiheadAttention(MultiheadAttention):
    """fairseq MultiheadAttention plus an optional additive score bias for a batch (set by the encoder)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.syntax_bias: Optional[torch.Tensor] = None  # (B·H, T, S) in the scores' dtype, or None

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None, need_weights=True,
                static_kv=False, attn_mask=None, before_softmax=False, need_head_weights=False):
        bias = self.syntax_bias
        if bias is not None:
            # attn_mask (T, S) from the caller is shared by all heads: broadcast it onto the bias
            attn_mask = bias if attn_mask is None else bias + attn_mask.to(bias.dtype).unsqueeze(0)
        return super().forward(query, key, value, key_padding_mask=key_padding_mask, incremental_state=incremental_state,
                               need_weights=need_weights, static_kv=static_kv, attn_mask=attn_mask,
                               before_softmax=before_softmax, need_head_weights=need_head_weights)
