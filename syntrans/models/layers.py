"""The layers of a ``syntax_transformer``: fairseq's encoder and decoder layers whose self-attention runs the layer's
syntax blocks, with the side's syntax inputs as an argument of ``forward`` and the layer's report returned beside its
output, and activation checkpointing that keeps the reports' gradients.

A layer without syntax blocks builds fairseq's own ``MultiheadAttention`` and runs fairseq's own forward; a layer with
blocks builds a :class:`~syntrans.modules.syntax_attention.SyntaxMultiheadAttention` (``build_self_attention``) and runs
the same sublayers in the same order with the self-attention given the inputs.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Optional, Tuple

import torch
import torch.nn as nn
from fairseq.distributed import fsdp_wrap
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase
from torch.utils.checkpoint import checkpoint

from ..modules.blocks import LayerSyntax, SideInputs
from ..modules.layer_report import LayerReport
from ..modules.recompute import recomputation
from ..modules.syntax_attention import SyntaxMultiheadAttention

Report = LayerReport


class SyntaxEncoderLayer(TransformerEncoderLayerBase):
    """fairseq's encoder layer; ``forward(x, padding_mask, attn_mask, inputs)`` → (x, fc_result, report), ``inputs``
    the side's syntax inputs (:class:`~syntrans.modules.blocks.SideInputs`)."""

    def __init__(self, cfg, layer: LayerSyntax, return_fc: bool = False):
        self.syntax_layer = layer  # what its self-attention runs: set before fairseq's constructor, which builds it
        super().__init__(cfg, return_fc=return_fc)

    def build_self_attention(self, embed_dim, cfg):
        if not self.syntax_layer:
            return super().build_self_attention(embed_dim, cfg)
        # fairseq's own arguments for encoder self-attention, plus this layer's syntax
        return SyntaxMultiheadAttention(embed_dim, cfg.encoder.attention_heads, dropout=cfg.attention_dropout,
                                        self_attention=True, q_noise=self.quant_noise,
                                        qn_block_size=self.quant_noise_block_size,
                                        xformers_att_config=cfg.encoder.xformers_att_config, layer=self.syntax_layer)

    @property
    def has_syntax(self) -> bool:
        return isinstance(self.self_attn, SyntaxMultiheadAttention)

    def forward(self, x, encoder_padding_mask: Optional[torch.Tensor], attn_mask: Optional[torch.Tensor] = None,
                inputs: Optional[SideInputs] = None) -> Tuple[torch.Tensor, Optional[torch.Tensor], Report]:
        """x (T, B, C) → (x, the FFN's output before dropout (fairseq's fc_result), the layer's report)."""
        if not self.has_syntax:
            out = super().forward(x, encoder_padding_mask, attn_mask)
            x, fc_result = out if isinstance(out, tuple) else (out, None)
            return x, fc_result, LayerReport()
        if attn_mask is not None:  # fairseq's convention: a 0/1 mask of the positions to leave out
            attn_mask = attn_mask.masked_fill(attn_mask.to(torch.bool), -1e8 if x.dtype == torch.float32 else -1e4)
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x, _, report = self.self_attn(query=x, key=x, value=x, key_padding_mask=encoder_padding_mask,
                                      need_weights=False, attn_mask=attn_mask, inputs=inputs)
        x = self.residual_connection(self.dropout_module(x), residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.fc2(self.activation_dropout_module(self.activation_fn(self.fc1(x))))
        fc_result = x
        x = self.residual_connection(self.dropout_module(x), residual)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        return x, (fc_result if self.return_fc else None), report


class SyntaxDecoderLayer(TransformerDecoderLayerBase):
    """fairseq's decoder layer; ``forward(…, inputs=…)`` → (x, attn, self_attn_state, report)."""

    def __init__(self, cfg, layer: LayerSyntax, no_encoder_attn=False, add_bias_kv=False, add_zero_attn=False):
        self.syntax_layer = layer  # what its self-attention runs: set before fairseq's constructor, which builds it
        super().__init__(cfg, no_encoder_attn=no_encoder_attn, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
        if self.has_syntax and self.cross_self_attention:
            raise ValueError("--cross-self-attention: decoder layers with syntax heads attend to their own sequence only")

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if not self.syntax_layer:
            return super().build_self_attention(embed_dim, cfg, add_bias_kv, add_zero_attn)
        # fairseq's own arguments for decoder self-attention, plus this layer's syntax
        return SyntaxMultiheadAttention(embed_dim, cfg.decoder.attention_heads, dropout=cfg.attention_dropout,
                                        add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                        self_attention=not cfg.cross_self_attention, q_noise=self.quant_noise,
                                        qn_block_size=self.quant_noise_block_size,
                                        xformers_att_config=cfg.decoder.xformers_att_config, layer=self.syntax_layer)

    @property
    def has_syntax(self) -> bool:
        return isinstance(self.self_attn, SyntaxMultiheadAttention)

    def forward(self, x, encoder_out=None, encoder_padding_mask=None, incremental_state=None,
                prev_self_attn_state=None, prev_attn_state=None, self_attn_mask=None, self_attn_padding_mask=None,
                need_attn: bool = False, need_head_weights: bool = False, inputs: Optional[SideInputs] = None):
        """x (T, B, C) → (x, the encoder-decoder attention or None, fairseq's self-attention state or None, report)."""
        if not self.has_syntax:
            x, attn, state = super().forward(x, encoder_out, encoder_padding_mask, incremental_state,
                                             prev_self_attn_state, prev_attn_state, self_attn_mask,
                                             self_attn_padding_mask, need_attn, need_head_weights)
            return x, attn, state, LayerReport()
        if prev_self_attn_state is not None or prev_attn_state is not None or self.onnx_trace:
            raise NotImplementedError("decoder layers with syntax heads take no prev_self_attn_state/prev_attn_state "
                                      "and no ONNX tracing")
        need_attn = need_attn or need_head_weights
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x, _, report = self.self_attn(query=x, key=x, value=x, key_padding_mask=self_attn_padding_mask,
                                      incremental_state=incremental_state, need_weights=False,
                                      attn_mask=self_attn_mask, inputs=inputs)
        if self.c_attn is not None:  # --scale-heads
            T, B = x.size(0), x.size(1)
            x = torch.einsum("tbhd,h->tbhd", x.view(T, B, self.nh, self.head_dim), self.c_attn).reshape(T, B, -1)
        if self.attn_ln is not None:
            x = self.attn_ln(x)
        x = self.residual_connection(self.dropout_module(x), residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        attn = None
        if self.encoder_attn is not None and encoder_out is not None:
            residual = x
            if self.normalize_before:
                x = self.encoder_attn_layer_norm(x)
            x, attn = self.encoder_attn(query=x, key=encoder_out, value=encoder_out,
                                        key_padding_mask=encoder_padding_mask, incremental_state=incremental_state,
                                        static_kv=True, need_weights=need_attn or (not self.training and self.need_attn),
                                        need_head_weights=need_head_weights)
            x = self.residual_connection(self.dropout_module(x), residual)
            if not self.normalize_before:
                x = self.encoder_attn_layer_norm(x)
        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.activation_dropout_module(self.activation_fn(self.fc1(x)))
        if self.ffn_layernorm is not None:
            x = self.ffn_layernorm(x)
        x = self.dropout_module(self.fc2(x))
        if self.w_resid is not None:  # --scale-resids
            residual = torch.mul(self.w_resid, residual)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        return x, attn, None, report


def checkpointed(layer: nn.Module) -> nn.Module:
    """``layer`` whose activations are recomputed in the backward pass (fairseq's ``--checkpoint-activations``), with
    torch's non-reentrant checkpoint: every output keeps its gradient, the layer's report (a parent loss, kept
    attention) included, and the random state is replayed (dropout, parent ignoring). The recomputation runs under
    :func:`~syntrans.modules.recompute.recomputation`, so state updates are not made twice (BatchNorm
    statistics). The layer's parameters and checkpoint keys are unchanged (its ``forward`` is wrapped in place)."""
    run = layer.forward

    def context():
        return contextlib.nullcontext(), recomputation()  # (the first forward, its recomputation)

    @functools.wraps(run)
    def forward(*args, **kwargs):
        if not torch.is_grad_enabled():
            return run(*args, **kwargs)
        return checkpoint(run, *args, use_reentrant=False, context_fn=context, **kwargs)

    layer.forward = forward
    return layer


def wrap_layer(layer: nn.Module, cfg, syntax: LayerSyntax) -> nn.Module:
    """A built layer as fairseq's ``build_*_layer`` returns it: :func:`checkpointed` under --checkpoint-activations,
    wrapped for FSDP; --offload-activations is refused for a layer with syntax heads (``syntax``)."""
    if cfg.offload_activations and syntax:
        raise ValueError("--offload-activations: layers with syntax heads keep their activations on the device; "
                         "use --checkpoint-activations")
    if cfg.checkpoint_activations:
        layer = checkpointed(layer)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)
