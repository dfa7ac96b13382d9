"""The decoder of a ``syntax_transformer``: fairseq's decoder whose layers run the decoder side's syntax mechanisms.

Per forward it prepares the side's syntax inputs once and hands them down every layer; the mechanisms may change the
token embeddings (where fairseq's ``project_in_dim`` hook sits) and read the features before the output projection,
keeping what decoding needs in fairseq's incremental state (reordered with the beams). The layers' reports with the
side's losses and metrics come back in ``extra["syntax"]`` (a :class:`~syntrans.modules.layer_report.SideOutput`).
"""
from __future__ import annotations

import itertools
from typing import Dict, Optional

import torch
from fairseq.models.transformer import TransformerDecoderBase

from ..mechanisms.plan import SideSyntax
from ..modules.layer_report import LayerReport, SideOutput
from .layers import SyntaxDecoderLayer, wrap_layer

SIDE = "decoder"


class SyntaxTransformerDecoder(TransformerDecoderBase):
    """fairseq's decoder; its layers' syntax heads, its side modules and its mechanisms come from ``syntax``, the
    decoder side of the model's plan."""

    def __init__(self, cfg, syntax: SideSyntax, dictionary, embed_tokens, no_encoder_attn=False,
                 output_projection=None):
        C = cfg.decoder.embed_dim
        # set before fairseq's constructor, which builds the layers (build_decoder_layer), as it sets its own cfg
        self.syntax = syntax
        self._layer_numbers = itertools.count()  # fairseq asks for the layers in order, without their number
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)
        if self.syntax.embeds and self.project_in_dim is not None:
            titles = ", ".join(m.title for m in self.syntax.mechanisms if m.embeds(SIDE))
            raise ValueError(f"{titles} changes the target embeddings and needs them as wide as the decoder "
                             f"(--decoder-embed-dim), with no projection in between: found target embeddings of "
                             f"{embed_tokens.embedding_dim} and a decoder of {C}")
        for key, module in syntax.side_modules(C).items():
            self.add_module(key, module)
        #: tokens the task's generator forces between BOS and the sentence (a language token), which the features fill
        #: in training: set by the task before decoding (``syntax_translation_multi_simple_epoch``)
        self.target_prefix_tokens = 0

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        syntax = self.syntax.layer(next(self._layer_numbers))
        return wrap_layer(SyntaxDecoderLayer(cfg, syntax, no_encoder_attn), cfg, syntax)

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, features_only: bool = False,
                full_context_alignment: bool = False, alignment_layer: Optional[int] = None,
                alignment_heads: Optional[int] = None, src_lengths=None, return_all_hiddens: bool = False, keep=(),
                syntax_backend: str = "auto", **features):
        """fairseq's decoder forward; ``features``: the batch's target-side syntax features (teacher forcing), ``keep``
        and ``syntax_backend`` as for the encoder. ``extra`` has fairseq's keys plus ``syntax``, the side's
        :class:`~syntrans.modules.layer_report.SideOutput`."""
        x, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state, full_context_alignment,
                                         alignment_layer, alignment_heads, keep=keep, syntax_backend=syntax_backend,
                                         **features)
        if not features_only:
            x = self.output_layer(x)
        return x, extra

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None,
                         full_context_alignment: bool = False, alignment_layer: Optional[int] = None,
                         alignment_heads: Optional[int] = None, keep=(), syntax_backend: str = "auto", **features):
        """fairseq's decoder feature extraction (embedding, layers, final norm and projection) with the side's syntax
        inputs handed to every layer → (features (B, T, C), extra)."""
        if alignment_layer is None:
            alignment_layer = self.num_layers - 1
        enc = encoder_out["encoder_out"][0] if encoder_out is not None and len(encoder_out["encoder_out"]) > 0 else None
        enc_pad = (encoder_out["encoder_padding_mask"][0]
                   if encoder_out is not None and len(encoder_out["encoder_padding_mask"]) > 0 else None)
        inputs = self.syntax.inputs(prev_output_tokens, prev_output_tokens.eq(self.padding_idx), features,
                                    self.embed_tokens.weight.dtype, self.training, keep, syntax_backend)
        positions = (self.embed_positions(prev_output_tokens, incremental_state=incremental_state)
                     if self.embed_positions is not None else None)
        if incremental_state is not None:  # one step: the last token only
            prev_output_tokens = prev_output_tokens[:, -1:]
            positions = positions[:, -1:] if positions is not None else None
        prev_output_tokens = prev_output_tokens.contiguous()
        x = self.embed_scale * self.embed_tokens(prev_output_tokens)  # (B, T, C)
        if self.quant_noise is not None:
            x = self.quant_noise(x)
        if self.project_in_dim is not None:
            x = self.project_in_dim(x)
        x = self.syntax.embed(self, x, inputs, incremental_state)
        if positions is not None:
            x = x + positions
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout_module(x).transpose(0, 1)  # (T, B, C)
        pad = prev_output_tokens.eq(self.padding_idx)
        self_attn_padding_mask = pad if self.cross_self_attention or pad.any() else None
        attn: Optional[torch.Tensor] = None
        inner_states = [x]
        reports: Dict[int, LayerReport] = {}
        for idx, layer in enumerate(self.layers):
            causal = self.buffered_future_mask(x) if incremental_state is None and not full_context_alignment else None
            x, layer_attn, _, report = layer(x, enc, enc_pad, incremental_state, self_attn_mask=causal,
                                             self_attn_padding_mask=self_attn_padding_mask,
                                             need_attn=idx == alignment_layer, need_head_weights=idx == alignment_layer,
                                             inputs=inputs)
            if report:
                reports[idx] = report
            inner_states.append(x)
            if layer_attn is not None and idx == alignment_layer:
                attn = layer_attn.float().to(x)
        if attn is not None:
            attn = (attn[:alignment_heads] if alignment_heads is not None else attn).mean(dim=0)  # over heads
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = x.transpose(0, 1)  # (B, T, C)
        if self.project_out_dim is not None:
            x = self.project_out_dim(x)
        syntax = SideOutput(reports)
        self.syntax.outputs(self, x, inputs, syntax.aux, incremental_state)
        self.syntax.report(reports, syntax.aux, self.training)
        return x, {"attn": [attn], "inner_states": inner_states, "syntax": syntax}

    def reorder_incremental_state(self, incremental_state, new_order):
        """The mechanisms' decoding state follows the beams (fairseq reorders every module's own)."""
        self.syntax.reorder(self, incremental_state, new_order)
