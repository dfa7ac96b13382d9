"""``syntax_transformer``: fairseq's Transformer whose attention takes syntax mechanisms.

The model's config is :data:`~syntrans.models.config.SyntaxTransformerConfig` (fairseq's TransformerConfig plus one
group per mechanism); building it builds the model's :class:`~syntrans.mechanisms.plan.SyntaxPlan` once (every
option checked there), from which the encoder and decoder build their layers and side modules. With no mechanism on,
the model is exactly the stock Transformer. The paper settings are architecture presets (:mod:`syntrans.models.presets`).

Per forward, each side returns its layers' reports and its losses and metrics; the model adds the losses that need
both sides (the plan's ``model_report``) and hands the criterion every loss and metric in ``extra["aux_losses"]`` and
``extra["aux_metrics"]``, the layers' reports in ``extra["syntax"]`` ({"encoder": {layer: report}, "decoder": …}).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
from typing import Dict, List, Optional, Set

from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import ARCH_CONFIG_REGISTRY, register_model
from fairseq.models.transformer import TransformerConfig, TransformerModelBase
from omegaconf import DictConfig, open_dict

from ..mechanisms.base import ModelShape
from ..mechanisms.layer_lists import parse_layer_spec
from ..mechanisms.plan import SyntaxPlan
from ..mechanisms.registry import MECHANISMS
from ..modules.aux_losses import merge_aux
from ..modules.blocks import SyntaxPart
from .config import LAYER_FIELDS, SyntaxTransformerConfig, flat_items, set_field, syntax_config
from .decoder import SyntaxTransformerDecoder
from .encoder import SyntaxTransformerEncoder

MODEL = "syntax_transformer"


def model_shape(cfg) -> ModelShape:
    return ModelShape(int(cfg.encoder.layers), int(cfg.decoder.layers), int(cfg.encoder.attention_heads),
                      int(cfg.decoder.attention_heads), int(cfg.encoder.embed_dim), int(cfg.decoder.embed_dim))


@register_model(MODEL, dataclass=SyntaxTransformerConfig)
class SyntaxTransformerModel(TransformerModelBase):
    """Transformer with syntax mechanisms (see the module docstring)."""

    @classmethod
    def add_args(cls, parser):
        """fairseq's Transformer flags and each mechanism group's, prefixed by its key (``--<key>-layers``); no
        defaults on the parser: presets fill what the flags leave unset, the schema the rest."""
        gen_parser_from_dataclass(parser, TransformerConfig(), delete_default=True, with_prefix="")
        for M in MECHANISMS:
            gen_parser_from_dataclass(parser, M.Config(), delete_default=True, with_prefix=f"--{M.key}")
        for (group, name) in LAYER_FIELDS:  # layer lists also take 'all' (resolved when the model is built)
            action = parser._option_string_actions.get(f"--{group}-{name.replace('_', '-')}")
            if action is not None:
                action.type = parse_layer_spec

    def __init__(self, cfg, encoder, decoder):
        super().__init__(cfg, encoder, decoder)
        self.plan: SyntaxPlan = cfg.syntax_plan

    @classmethod
    def build_model(cls, cfg, task):
        """Any form of the config (:func:`~syntrans.models.config.syntax_config`) → the model and its plan."""
        cfg = syntax_config(cfg)
        plan = SyntaxPlan(cfg, model_shape(cfg))
        cfg.syntax_plan = plan  # read by build_encoder/build_decoder while fairseq's build_model runs
        try:
            model = super().build_model(cfg, task)
        finally:
            del cfg.syntax_plan
        return model

    @classmethod
    def build_encoder(cls, cfg, src_dict, embed_tokens):
        return SyntaxTransformerEncoder(cfg, cfg.syntax_plan, src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, cfg, tgt_dict, embed_tokens):
        return SyntaxTransformerDecoder(cfg, cfg.syntax_plan, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention)

    @classmethod
    def fill_from_data(cls, cfg, task) -> None:
        """Complete a model config in place before the model is built: the fields that come from the training data
        (e.g. the range of a feature's values, asked of the task's ``value_range``) and, for a flat config, every mechanism
        field at its resolved value, so that a checkpoint holds the whole configuration."""
        view = copy.deepcopy(cfg)
        arch = getattr(cfg, "_name", None) or getattr(cfg, "arch", None)
        if arch in ARCH_CONFIG_REGISTRY and arch != MODEL:  # the preset fairseq applies when it builds the model
            with open_dict(view) if isinstance(view, DictConfig) else contextlib.nullcontext():
                ARCH_CONFIG_REGISTRY[arch](view)
        typed = syntax_config(view)
        value_range = getattr(task, "value_range", None)
        for M in MECHANISMS:
            if value_range is None:
                break
            for name, value in M.data_fields(getattr(typed, M.key), value_range).items():
                setattr(getattr(typed, M.key), name, value)
                set_field(cfg, M.key, name, value)
        if isinstance(cfg, argparse.Namespace):
            for name, value in flat_items(typed).items():
                if getattr(cfg, name, None) is None:
                    setattr(cfg, name, value)

    # ------------------------------------------------------------------------------------------------ data
    def syntax_features(self) -> Set[str]:
        """Names of the batch features (``net_input`` keys) this model needs from the task."""
        return set(self.plan.features().required)

    def optional_syntax_features(self) -> Set[str]:
        """Features the model uses when the data has them (e.g. the parents of a parse head's loss)."""
        return set(self.plan.features().optional)

    def training_syntax_features(self) -> Set[str]:
        """Optional features the training split must have: those of the auxiliary losses."""
        return set(self.plan.features().training)

    def set_epoch(self, epoch: int) -> None:
        """fairseq's epoch (1-based) for every syntax part (a warm-up)."""
        for module in self.modules():
            if isinstance(module, SyntaxPart):
                module.set_epoch(epoch)

    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints of earlier versions: their keys renamed to today's modules (the plan's legacy prefixes)."""
        prefix = f"{name}." if name else ""
        for old, new in self.plan.legacy_keys().items():
            for key in [k for k in state_dict if k.startswith(prefix + old)]:
                state_dict[prefix + new + key[len(prefix + old):]] = state_dict.pop(key)
        super().upgrade_state_dict_named(state_dict, name)

    # ------------------------------------------------------------------------------------------------ forward
    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer: Optional[int] = None,
                alignment_heads: Optional[int] = None, keep=(), syntax_backend: str = "auto", **features):
        """Teacher-forced forward (training, validation); generation uses forward_encoder/forward_decoder.

        ``features``: the batch's syntax features; ``keep``: what the layers keep in their reports (e.g. ``probs``);
        a mechanism that reads an encoder-decoder attention takes the decoder's alignment layer."""
        reads = self.plan.alignment_layer()
        if reads is not None:
            n = len(self.decoder.layers)
            if alignment_layer is not None and alignment_layer % n != reads:
                raise ValueError(f"this model reads the encoder-decoder attention of decoder layer {reads}; "
                                 f"alignment_layer {alignment_layer} was asked for")
            alignment_layer = reads
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
                                   keep=keep, syntax_backend=syntax_backend, **features)
        x, extra = self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                                alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                                src_lengths=src_lengths, return_all_hiddens=return_all_hiddens, keep=keep,
                                syntax_backend=syntax_backend, **features)
        aux: Dict = {}
        merge_aux(aux, encoder_out["syntax"])
        merge_aux(aux, extra["syntax"])
        self.plan.model_report(encoder_out, extra, prev_output_tokens, self.decoder.padding_idx, aux)
        extra.update(aux)
        extra["syntax"] = {"encoder": encoder_out["syntax"]["layers"], "decoder": extra["syntax"]["layers"]}
        return x, extra



__all__: List[str] = ["SyntaxTransformerModel", "model_shape"]
