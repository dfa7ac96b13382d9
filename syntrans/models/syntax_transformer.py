"""``syntax_transformer``: fairseq's Transformer whose encoder self-attention takes syntax biases.

Every mechanism is switched on per layer/head by options; with none on, the model is exactly the
stock Transformer. Paper settings are registered as architecture presets at the end of this file.
"""
from __future__ import annotations

from typing import List, Optional, Set

import torch
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerEncoderBase, TransformerModel
from fairseq.models.transformer.transformer_legacy import base_architecture, transformer_iwslt_de_en
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

from ..modules.distance_bias import distance_head_bias
from ..modules.syntax_attention import SyntaxBiasedMultiheadAttention
from .options import DistanceMaskOptions, parse_layers


class SyntaxEncoderLayer(TransformerEncoderLayerBase):
    """A stock encoder layer whose self-attention accepts a per-head syntax bias."""

    def build_self_attention(self, embed_dim, cfg):
        attn = super().build_self_attention(embed_dim, cfg)
        attn.__class__ = SyntaxBiasedMultiheadAttention  # same parameters and constructor; adds a bias hook
        attn.syntax_bias = None
        return attn


class SyntaxTransformerEncoder(TransformerEncoderBase):
    """Encoder that builds the syntax biases of a batch once and hands them to the chosen layers."""

    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        self.num_heads = cfg.encoder.attention_heads
        self.distance_layers = parse_layers(getattr(cfg, "distance_layers", ""), len(self.layers), "--distance-layers")
        self.distance_heads = int(getattr(cfg, "distance_heads", 0) or 0)
        self.distance_tau = None if getattr(cfg, "distance_hard", False) else float(getattr(cfg, "distance_tau", 10.0))
        if self.distance_layers and not 1 <= self.distance_heads <= self.num_heads:
            raise ValueError(f"--distance-heads must lie in 1..{self.num_heads} (encoder heads), found {self.distance_heads}")

    def build_encoder_layer(self, cfg):
        layer = SyntaxEncoderLayer(cfg, return_fc=self.return_fc)
        checkpoint = cfg.checkpoint_activations
        if checkpoint:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)

    def syntax_features(self) -> Set[str]:
        return {"src_gaps"} if self.distance_layers else set()

    def _attn(self, i: int) -> SyntaxBiasedMultiheadAttention:
        return self.layers[i].self_attn

    def set_syntax_biases(self, src_tokens: torch.Tensor, src_gaps: Optional[torch.Tensor]) -> None:
        """Build each mechanism's head bias once for the batch and give it to its layers.

        The bias stays set until the next forward, so activation checkpointing recomputes with it.
        """
        if not self.distance_layers:
            return
        if src_gaps is None:
            raise ValueError("this model has distance-mask heads and needs src_gaps in net_input: "
                             "train and generate with --task syntax_translation on data with syntax sidecars")
        if src_gaps.shape != (src_tokens.size(0), src_tokens.size(1) - 1):
            raise ValueError(f"src_gaps has shape {tuple(src_gaps.shape)}, expected (B, T-1) for src_tokens "
                             f"{tuple(src_tokens.shape)}")
        bias = distance_head_bias(src_gaps, src_tokens.eq(self.padding_idx), self.num_heads, self.distance_heads,
                                  self.distance_tau, self.embed_tokens.weight.dtype)
        for i in self.distance_layers:
            self._attn(i).syntax_bias = bias

    def forward(self, src_tokens, src_lengths: Optional[torch.Tensor] = None, return_all_hiddens: bool = False,
                token_embeddings: Optional[torch.Tensor] = None, src_gaps: Optional[torch.Tensor] = None, **unused):
        self.set_syntax_biases(src_tokens, src_gaps)
        return super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)


@register_model("syntax_transformer")
class SyntaxTransformerModel(TransformerModel):
    """Transformer with syntax-guided encoder attention (see the options of :mod:`syntrans.models.options`)."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        gen_parser_from_dataclass(parser, DistanceMaskOptions(), delete_default=True)

    @classmethod
    def build_model(cls, args, task):
        syntax_base_architecture(args)
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return SyntaxTransformerEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens)

    def syntax_features(self) -> Set[str]:
        """Names of the batch features (``net_input`` keys) this model needs from the task."""
        return self.encoder.syntax_features()

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer: Optional[int] = None,
                alignment_heads: Optional[int] = None, **syntax):
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens, **syntax)
        return self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                            alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                            src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)


def _default(args, name: str, value) -> None:
    setattr(args, name, getattr(args, name, value))


@register_model_architecture("syntax_transformer", "syntax_transformer")
def syntax_base_architecture(args):
    """Transformer base with no syntax mechanism switched on."""
    _default(args, "distance_layers", "")
    _default(args, "distance_heads", 0)
    _default(args, "distance_tau", 10.0)
    _default(args, "distance_hard", False)
    base_architecture(args)


@register_model_architecture("syntax_transformer", "distance_transformer_iwslt_de_en")
def distance_transformer_iwslt_de_en(args):
    """Hou et al. 2022 (App. A), IWSLT14 de-en: 6+6 layers, 512, 4 heads, FFN 1024, dropout 0.3,
    attention dropout 0.2, soft mask τ = 10 in heads 0-3 of encoder layer 0."""
    _default(args, "distance_layers", "0")
    _default(args, "distance_heads", 4)
    _default(args, "dropout", 0.3)
    _default(args, "attention_dropout", 0.2)
    transformer_iwslt_de_en(args)
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "distance_transformer_wmt_en_de")
def distance_transformer_wmt_en_de(args):
    """Hou et al. 2022 (App. A), WMT14 en-de: Transformer base (8 heads, FFN 2048), dropout and attention
    dropout 0.1, soft mask τ = 10 in heads 0-1 of encoder layer 0."""
    _default(args, "distance_layers", "0")
    _default(args, "distance_heads", 2)
    _default(args, "dropout", 0.1)
    _default(args, "attention_dropout", 0.1)
    syntax_base_architecture(args)


__all__: List[str] = ["SyntaxTransformerModel", "SyntaxTransformerEncoder", "SyntaxEncoderLayer"]
