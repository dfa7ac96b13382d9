"""``syntax_transformer``: fairseq's Transformer whose attention takes syntax mechanisms.

Every mechanism is switched on per layer/head by the options of :mod:`syntrans.models.options`; with none on,
the model is exactly the stock Transformer. The encoder and decoder are in :mod:`~syntrans.models.encoder` and
:mod:`~syntrans.models.decoder`; this file holds the registered model, which also computes SyncAttn's loss
(Deguchi et al. 2021) from both. The paper settings are architecture presets (:mod:`syntrans.models.presets`).
"""
from __future__ import annotations

import argparse
from typing import List, Optional, Set

from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig, TransformerModel
from omegaconf import DictConfig, OmegaConf

from ..modules.aux_losses import merge_aux, report_aux_loss
from ..modules.aux_reports import report_nsd
from ..modules.sync_attn import sync_loss
from .decoder import SyntaxTransformerDecoder
from .encoder import SyntaxTransformerEncoder
from .net_input import required_feature
from .options import OPTION_GROUPS, SyntaxOptions, fill_syntax_defaults


@register_model("syntax_transformer")
class SyntaxTransformerModel(TransformerModel):
    """Transformer with syntax-guided encoder attention (see the options of :mod:`syntrans.models.options`)."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        for group in OPTION_GROUPS:  # no defaults on the parser: presets fill what the flags leave unset
            gen_parser_from_dataclass(parser, group(), delete_default=True)

    def __init__(self, args, encoder, decoder):
        super().__init__(args, encoder, decoder)
        syntax: SyntaxOptions = encoder.syntax
        self.sync_attn = bool(syntax.sync_attn)
        self.sync_weight = float(syntax.sync_weight)
        self.sync_layer = None
        if self.sync_attn:
            n = len(decoder.layers)
            layer = int(syntax.sync_layer)
            if not -n <= layer < n:
                raise ValueError(f"--sync-layer must name one of the {n} decoder layers (0..{n - 1}, or -{n}..-1), found {layer}")
            self.sync_layer = layer % n
            if len(encoder.dbsa_layers) != 1 or len(decoder.dbsa_layers) != 1:
                raise ValueError("--sync-attn compares one DBSA attention per side: give exactly one layer in each of "
                                 f"--dbsa-encoder-layers and --dbsa-decoder-layers (found {encoder.dbsa_layers} and "
                                 f"{decoder.dbsa_layers})")

    @classmethod
    def build_model(cls, args, task):
        if isinstance(args, DictConfig):
            # fairseq-hydra-train hands the model config as a DictConfig, whose extra keys fairseq's
            # TransformerConfig.from_namespace cannot see (vars() of a DictConfig has none): a flat Namespace keeps
            # every syntax option
            args = argparse.Namespace(**OmegaConf.to_container(args, resolve=True))
        fill_syntax_defaults(args)
        fill_nsd_ranges(args, task)
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return SyntaxTransformerEncoder(TransformerConfig.from_namespace(args), SyntaxOptions.from_args(args), src_dict,
                                        embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return SyntaxTransformerDecoder(TransformerConfig.from_namespace(args), SyntaxOptions.from_args(args), tgt_dict,
                                        embed_tokens, no_encoder_attn=args.no_cross_attention)

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        """fairseq's loading, after checking that the checkpoint's NSD embeddings have the sizes this model built."""
        check_nsd_embedding_sizes(self, state_dict)
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)

    def syntax_features(self) -> Set[str]:
        """Names of the batch features (``net_input`` keys) this model needs from the task."""
        return self.encoder.syntax_features()

    def optional_syntax_features(self) -> Set[str]:
        """Features the model uses when the data has them (LISA's and DBSA's parents at evaluation)."""
        nsd = self.decoder.nsd
        return (self.encoder.optional_syntax_features() | ({"tgt_parent_chain"} if self.decoder.dbsa_layers else set())
                | ({nsd.label_feature} if nsd.output else set()) | ({nsd.input_feature} if nsd.embeds else set()))

    def training_syntax_features(self) -> Set[str]:
        """Optional features the training split must have: the parents of the LISA and DBSA losses."""
        return self.optional_syntax_features()

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer: Optional[int] = None,
                alignment_heads: Optional[int] = None, **syntax):
        """Teacher-forced forward (training, validation); generation uses forward_encoder/forward_decoder.

        With SyncAttn, C is the encoder-decoder attention that fairseq's decoder already returns for its
        alignment layer (the mean over heads of layer ``--sync-layer``), and E, D are the DBSA heads' mean
        attention kept from this forward only: no attention is computed twice."""
        enc_attn = self.encoder._attn(self.encoder.dbsa_layers[0]) if self.sync_attn else None
        if self.sync_attn:
            if alignment_layer is not None and alignment_layer % len(self.decoder.layers) != self.sync_layer:
                raise ValueError(f"SyncAttn takes C from decoder layer {self.sync_layer}; alignment_layer "
                                 f"{alignment_layer} was asked for")
            alignment_layer = self.sync_layer
            enc_attn.keep_dbsa_probs = True
        try:
            encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
                                       **syntax)
            self.decoder.set_syntax_batch(prev_output_tokens, syntax.get("tgt_parent_chain"))
            nsd = self.decoder.nsd
            if nsd.embeds:
                self.decoder.nsd_gold_in = syntax.get(nsd.input_feature)
            if self.sync_attn:
                self.decoder._attn(self.decoder.dbsa_layers[0]).keep_dbsa_probs = True
            x, extra = self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                                    alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                                    src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)
            merge_aux(extra, encoder_out.get("syntax_aux") or {})
            merge_aux(extra, self.decoder.aux_outputs())
            if self.sync_attn:
                D = self.decoder._attn(self.decoder.dbsa_layers[0]).dbsa_probs  # (B, J, J)
                loss, count = sync_loss(enc_attn.dbsa_probs, D, extra["attn"][0], prev_output_tokens.eq(self.decoder.padding_idx))
                report_aux_loss(extra, "sync", loss, count, self.sync_weight)
            if nsd.output:
                labels = syntax.get(nsd.label_feature)
                if labels is None and self.training:
                    labels = required_feature(syntax, nsd.label_feature, tuple(prev_output_tokens.shape),
                                              "the target NSD output")
                if labels is not None:
                    report_nsd(extra, "tgt", self.decoder.nsd_logits, labels, nsd.v_min, nsd.v_max,
                               self.decoder.syntax.nsd_loss_weights)
        finally:
            self.decoder.nsd_gold_in = self.decoder.nsd_logits = None
            self.decoder.clear_syntax_batch()
            if enc_attn is not None:
                enc_attn.keep_dbsa_probs, enc_attn.dbsa_probs = False, None
        return x, extra



def check_nsd_embedding_sizes(model: SyntaxTransformerModel, state_dict) -> None:
    """A checkpoint whose NSD embedding size k differs from the model's was trained with another --nsd-embed-dim:
    most likely with 0 before it meant the model dimension (Ma et al. 2019, Eq. 10), when it meant a quarter of it.
    Say so, and how to load it, instead of torch's size mismatch."""
    layers = (("encoder.nsd_input.embed.weight", getattr(model.encoder, "nsd_input", None), "source"),
              ("decoder.project_in_dim.embed.weight", model.decoder.project_in_dim, "target"))
    for key, layer, side in layers:
        embed = getattr(layer, "embed", None)
        if embed is None or key not in state_dict:
            continue
        saved, built = int(state_dict[key].shape[-1]), int(embed.weight.shape[-1])
        if saved != built:
            raise ValueError(f"the checkpoint's {side} NSD embedding has size {saved}, but --nsd-embed-dim "
                             f"{model.encoder.syntax.nsd_embed_dim} builds {built} ({layer.mode} input): a checkpoint "
                             "trained with --nsd-embed-dim 0 when 0 meant a quarter of the model dimension loads with "
                             f"--model-overrides \"{{'nsd_embed_dim': {saved}}}\"")


def fill_nsd_ranges(args, task) -> None:
    """An NSD side's value range (its embedding and classifier sizes) is that of the training split, asked of the
    task (``syntax_translation``) and written into ``args`` so that the checkpoint keeps it; unless given
    (``--nsd-src-min`` …) or already in a checkpoint's config."""
    syntax = SyntaxOptions.from_args(args)
    for side in ("src", "tgt"):
        used = (getattr(syntax, f"nsd_{side}_input") != "none" or getattr(syntax, f"nsd_{side}_spe")
                or getattr(syntax, f"nsd_{side}_output"))
        if not used or (getattr(syntax, f"nsd_{side}_min") is not None and getattr(syntax, f"nsd_{side}_max") is not None):
            continue
        value_range = getattr(task, "nsd_value_range", None)
        if value_range is None:
            raise ValueError(f"the {side} NSD value range is unknown: build the model with --task syntax_translation "
                             f"(it reads the range from the training split) or pass --nsd-{side}-min and --nsd-{side}-max")
        lo, hi = value_range(side, syntax.nsd_kind)
        setattr(args, f"nsd_{side}_min", lo)
        setattr(args, f"nsd_{side}_max", hi)


__all__: List[str] = ["SyntaxTransformerModel"]
