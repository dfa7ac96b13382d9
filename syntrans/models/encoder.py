"""The encoder of a ``syntax_transformer``: fairseq's encoder whose layers' self-attention runs syntax heads.

The encoder builds a batch's syntax inputs once (:class:`SyntaxBatch`) and hands them to its layers; with NSD on the
source side it also feeds the NSD input embedding and predicts the source NSD (Ma et al. 2019).
"""
from __future__ import annotations

from typing import Dict, Optional, Set

import torch
from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerEncoderBase
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

from ..modules.aux_reports import report_dbsa, report_gates, report_lisa, report_nsd, warn_clipped
from ..modules.distance_bias import distance_log_mask
from ..modules.head_plan import LayerSyntax, SyntaxBatch
from ..modules.pascal import pascal_weights
from ..modules.syntax_attention import SyntaxMultiheadAttention
from .net_input import required_feature
from .nsd_side import NsdSide
from .options import SyntaxOptions


class SyntaxEncoderLayer(TransformerEncoderLayerBase):
    """A stock encoder layer whose self-attention is a :class:`SyntaxMultiheadAttention` running ``syntax``."""

    def __init__(self, cfg, syntax: Optional[LayerSyntax], return_fc: bool = False):
        self.syntax = syntax  # a plain attribute, set before the base constructor calls build_self_attention
        super().__init__(cfg, return_fc=return_fc)

    def build_self_attention(self, embed_dim, cfg):
        # fairseq's own arguments for encoder self-attention, plus this layer's syntax heads
        return SyntaxMultiheadAttention(embed_dim, cfg.encoder.attention_heads, dropout=cfg.attention_dropout,
                                        self_attention=True, q_noise=self.quant_noise,
                                        qn_block_size=self.quant_noise_block_size,
                                        xformers_att_config=cfg.encoder.xformers_att_config, syntax=self.syntax)


class SyntaxTransformerEncoder(TransformerEncoderBase):
    """Encoder that builds the syntax inputs of a batch once and hands them to the chosen layers.

    In each layer the syntax heads are consecutive from head 0: distance-mask heads, then PASCAL heads,
    then the LISA head, then DBSA heads (:class:`~syntrans.modules.head_plan.HeadPlan`); the rest are stock.
    """

    def __init__(self, cfg, syntax: SyntaxOptions, dictionary, embed_tokens, return_fc=False):
        n, H = cfg.encoder.layers, cfg.encoder.attention_heads
        # per layer its syntax, taken in order by build_encoder_layer while the base constructor builds the layers
        self._unbuilt = iter(syntax.encoder_layers(n, H))
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        del self._unbuilt
        self.syntax = syntax
        self.num_heads = H
        self.distance_layers = syntax.layers("distance_layers", n)
        self.distance_tau = None if syntax.distance_hard else float(syntax.distance_tau)
        self.pascal_layers = syntax.layers("pascal_layers", n)
        self.pascal_sigma = float(syntax.pascal_sigma)
        self.lisa_layers = syntax.layers("lisa_layers", n)
        self.lisa_gold_parents = bool(syntax.lisa_gold_parents)
        self.gate_layers = syntax.layers("gate_layers", n)
        self.dbsa_layers = syntax.layers("dbsa_encoder_layers", n)
        self.dbsa_gold_parents = bool(syntax.dbsa_gold_parents)
        if self.dbsa_gold_parents and not self.dbsa_layers:
            raise ValueError("--dbsa-gold-parents makes the encoder's DBSA heads attend to the gold source parents, but "
                             "this model has none (--dbsa-encoder-layers is empty); the decoder side has no gold parse "
                             "at generation (the hypothesis is not parsed), so there is nothing to replace")
        for layers, what in ((self.lisa_layers, "LISA"), (self.dbsa_layers, "DBSA")):
            if layers and cfg.checkpoint_activations:
                raise ValueError(f"{what}'s parent loss is computed inside the attention and would lose its gradient "
                                 f"under --checkpoint-activations; train {what} models without it")
        self.nsd = NsdSide.from_options(syntax, "src")
        if self.nsd.embeds:
            self.nsd_input = self.nsd.build_input(cfg.encoder.embed_dim, int(syntax.nsd_embed_dim or 0),
                                                  float(syntax.nsd_spe_lambda))
        if self.nsd.output:
            self.nsd_classifier = self.nsd.build_classifier(cfg.encoder.embed_dim)

    def build_encoder_layer(self, cfg):
        layer = SyntaxEncoderLayer(cfg, next(self._unbuilt), return_fc=self.return_fc)
        checkpoint = cfg.checkpoint_activations
        if checkpoint:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)

    @property
    def has_syntax_heads(self) -> bool:
        return bool(self.distance_layers or self.pascal_layers or self.lisa_layers or self.gate_layers or self.dbsa_layers)

    def syntax_features(self) -> Set[str]:
        """The batch features this encoder needs, in training and at generation."""
        wanted = set()
        if self.distance_layers:
            wanted.add("src_gaps")
        if self.pascal_layers:
            wanted.add("src_parent_middle")
        if self.lisa_layers and self.lisa_gold_parents:
            wanted.add("src_parent_first")
        if self.dbsa_layers and self.dbsa_gold_parents:
            wanted.add("src_parent_chain")
        if self.nsd.embeds:
            wanted.add(self.nsd.input_feature)
        return wanted

    def optional_syntax_features(self) -> Set[str]:
        """Features used where present: LISA's and DBSA's parents feed only their losses and UAS (required in training)."""
        return (({"src_parent_first"} if self.lisa_layers else set()) | ({"src_parent_chain"} if self.dbsa_layers else set())
                | ({self.nsd.label_feature} if self.nsd.output else set()))

    def _attn(self, i: int) -> SyntaxMultiheadAttention:
        return self.layers[i].self_attn

    def _feature(self, features: Dict[str, Optional[torch.Tensor]], name: str, shape) -> torch.Tensor:
        return required_feature(features, name, shape, "this model's source syntax")

    def syntax_batch(self, src_tokens: torch.Tensor, features: Dict[str, Optional[torch.Tensor]]) -> SyntaxBatch:
        """The syntax inputs of a batch, built once on the device of ``src_tokens``."""
        B, T = src_tokens.shape
        batch = SyntaxBatch(pad_mask=src_tokens.eq(self.padding_idx))
        if self.distance_layers:
            gaps = self._feature(features, "src_gaps", (B, T - 1))
            batch.distance_log_mask = distance_log_mask(gaps, batch.pad_mask, self.distance_tau, self.embed_tokens.weight.dtype)
        if self.pascal_layers:
            parents = self._feature(features, "src_parent_middle", (B, T))
            batch.pascal_weights = pascal_weights(parents, T, self.pascal_sigma)
        if self.lisa_layers and (self.training or self.lisa_gold_parents or features.get("src_parent_first") is not None):
            # training needs the parents for the LISA loss, the oracle for its rows; generation may go without
            batch.parents_first = self._feature(features, "src_parent_first", (B, T)).long()
        if self.dbsa_layers and (self.training or self.dbsa_gold_parents or features.get("src_parent_chain") is not None):
            # training needs the parents for the DBSA loss, the oracle for its rows; generation may go without
            batch.parents_chain = required_feature(features, "src_parent_chain", (B, T),
                                                   "the encoder's DBSA heads (training, or --dbsa-gold-parents)").long()
        return batch

    def set_syntax_batch(self, src_tokens: torch.Tensor, features: Dict[str, Optional[torch.Tensor]]) -> None:
        """Give every layer with syntax heads this batch's inputs (distance-only layers also one shared additive
        bias, for the fused path). They stay set until the next forward, so activation checkpointing recomputes
        with them."""
        if not self.has_syntax_heads:
            return
        batch = self.syntax_batch(src_tokens, features)
        for layer in self.layers:
            attn = layer.self_attn
            if attn.plan.active:
                attn.syntax_batch = batch
            if attn.plan.distance and not attn.plan.explicit:
                attn.syntax_bias = batch.distance_bias(self.num_heads, attn.plan.distance)

    def aux_outputs(self) -> Dict:
        """The LISA and DBSA parent losses with their attachment scores, and at evaluation the gate value of every
        gated layer × syntax head (mean per sentence)."""
        extra: Dict = {}
        report_lisa(extra, [self._attn(i) for i in self.lisa_layers], float(self.syntax.lisa_weight))
        report_dbsa(extra, "dbsa_src", [self._attn(i) for i in self.dbsa_layers], float(self.syntax.dbsa_weight))
        if not self.training:  # gate values per layer × syntax head, averaged over the validation sentences
            report_gates(extra, [(i, self._attn(i)) for i in self.gate_layers])
        return extra

    def forward(self, src_tokens, src_lengths: Optional[torch.Tensor] = None, return_all_hiddens: bool = False,
                token_embeddings: Optional[torch.Tensor] = None, **features):
        self.set_syntax_batch(src_tokens, features)
        if self.nsd.embeds and token_embeddings is None:
            # fairseq scales token_embeddings by embed_scale: hand it the NSD input divided by that scale
            values = self._feature(features, self.nsd.input_feature, tuple(src_tokens.shape))
            token_embeddings = self.nsd_input(self.embed_scale * self.embed_tokens(src_tokens), values) / self.embed_scale
            warn_clipped(self.nsd_input.clipped, "source", self.nsd.v_min, self.nsd.v_max, self.training)
        out = super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        if self.lisa_layers or self.gate_layers or self.dbsa_layers or self.nsd.output:
            out["syntax_aux"] = self.aux_outputs()
            if self.nsd.output:
                labels = features.get(self.nsd.label_feature)
                if labels is None and self.training:
                    labels = required_feature(features, self.nsd.label_feature, tuple(src_tokens.shape),
                                              "the source NSD output")
                if labels is not None:
                    logits = self.nsd_classifier(out["encoder_out"][0].transpose(0, 1))  # (B, T, V)
                    report_nsd(out["syntax_aux"], "src", logits, labels, self.nsd.v_min, self.nsd.v_max,
                               self.syntax.nsd_loss_weights)
        return out
