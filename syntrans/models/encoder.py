"""The encoder of a ``syntax_transformer``: fairseq's encoder whose layers run the encoder side's syntax mechanisms.

Per forward it prepares the side's syntax inputs once (:meth:`~syntrans.mechanisms.plan.SideSyntax.inputs`) and hands
them down every layer; the mechanisms may change the token embeddings and read the final states, and the layers'
reports with the side's losses and metrics come back in ``encoder_out["syntax"]`` (a
:class:`~syntrans.modules.layer_report.SideOutput`).
"""
from __future__ import annotations

import itertools
from typing import Dict, Optional

import torch
from fairseq.models.transformer import TransformerEncoderBase

from ..mechanisms.plan import SideSyntax
from ..modules.blocks import SideInputs
from ..modules.layer_report import LayerReport, SideOutput
from .layers import SyntaxEncoderLayer, wrap_layer

SIDE = "encoder"


class SyntaxTransformerEncoder(TransformerEncoderBase):
    """fairseq's encoder; its layers' syntax heads, its side modules and its mechanisms come from ``syntax``, the
    encoder side of the model's plan."""

    def __init__(self, cfg, syntax: SideSyntax, dictionary, embed_tokens, return_fc=False):
        # set before fairseq's constructor, which builds the layers (build_encoder_layer), as it sets its own cfg
        self.syntax = syntax
        self._layer_numbers = itertools.count()  # fairseq asks for the layers in order, without their number
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        for key, module in syntax.side_modules(cfg.encoder.embed_dim).items():
            self.add_module(key, module)

    def build_encoder_layer(self, cfg):
        syntax = self.syntax.layer(next(self._layer_numbers))
        return wrap_layer(SyntaxEncoderLayer(cfg, syntax, return_fc=self.return_fc), cfg, syntax)

    def _embedding(self, src_tokens, token_embeddings: Optional[torch.Tensor], inputs: SideInputs):
        """fairseq's embedding of the tokens (scaled, plus positions, layer norm, dropout), the side's mechanisms
        applied to the scaled token embeddings → (x (B, T, C), the embeddings before the positions)."""
        if not self.syntax.embeds:
            return self.forward_embedding(src_tokens, token_embeddings)
        tokens = self.embed_tokens(src_tokens) if token_embeddings is None else token_embeddings
        embed = self.syntax.embed(self, self.embed_scale * tokens, inputs)
        x = embed + self.embed_positions(src_tokens) if self.embed_positions is not None else embed
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout_module(x)
        if self.quant_noise is not None:
            x = self.quant_noise(x)
        return x, embed

    def forward_non_torchscript(self, net_input: Dict[str, torch.Tensor]):
        """fairseq's ``forward_torchscript`` outside TorchScript (the generators' encoder call), through the module's
        ``__call__`` so that forward hooks see it (:func:`~syntrans.modules.attention_record.record_attention`)."""
        return self(**{k: v for k, v in net_input.items() if k != "prev_output_tokens"})

    def forward(self, src_tokens, src_lengths: Optional[torch.Tensor] = None, return_all_hiddens: bool = False,
                token_embeddings: Optional[torch.Tensor] = None, keep=(), syntax_backend: str = "auto", **features):
        """fairseq's encoder forward; ``features``: the batch's syntax features (``net_input`` keys), ``keep``: what the
        layers keep in their reports, ``syntax_backend``: ``explicit`` forms every head's scores (the reference path).
        The output has fairseq's keys plus ``syntax``: the side's
        :class:`~syntrans.modules.layer_report.SideOutput` (its layers' reports, its losses and metrics)."""
        pad = src_tokens.eq(self.padding_idx)  # (B, T)
        has_pads = torch.tensor(src_tokens.device.type == "xla") or pad.any()
        inputs = self.syntax.inputs(src_tokens, pad, features, self.embed_tokens.weight.dtype, self.training, keep,
                                    syntax_backend)
        x, embed = self._embedding(src_tokens, token_embeddings, inputs)
        x = x * (1 - pad.unsqueeze(-1).type_as(x) * has_pads.type_as(x))  # padding rows start at 0
        x = x.transpose(0, 1)  # (T, B, C)
        states, fc_results = ([x] if return_all_hiddens else []), []
        reports: Dict[int, LayerReport] = {}
        for i, layer in enumerate(self.layers):
            x, fc_result, report = layer(x, encoder_padding_mask=pad if has_pads else None, inputs=inputs)
            if report:
                reports[i] = report
            if return_all_hiddens:
                states.append(x)
                fc_results.append(fc_result)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        syntax = SideOutput(reports)
        self.syntax.outputs(self, x.transpose(0, 1), inputs, syntax.aux)
        self.syntax.report(reports, syntax.aux, self.training)
        lengths = src_tokens.ne(self.padding_idx).sum(dim=1, dtype=torch.int32).reshape(-1, 1).contiguous()
        return {"encoder_out": [x], "encoder_padding_mask": [pad], "encoder_embedding": [embed],
                "encoder_states": states, "fc_results": fc_results, "src_tokens": [], "src_lengths": [lengths],
                "syntax": syntax}
