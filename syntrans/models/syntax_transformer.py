"""``syntax_transformer``: fairseq's Transformer whose attention takes syntax mechanisms.

The model's config is :data:`~syntrans.models.config.SyntaxTransformerConfig` (fairseq's TransformerConfig plus one
group per mechanism). fairseq keeps the model's config as it was given (the command line's flat Namespace, as for its
own Transformer; YAML; a checkpoint's); building the model turns it into the typed config once
(:func:`~syntrans.models.config.model_config`), completes it from the training data where a mechanism asks (e.g. the
range of a feature's values) and writes it back complete, so that a checkpoint holds the whole configuration. The
typed config's plan (:class:`~syntrans.mechanisms.plan.SyntaxPlan`, every option checked) gives the encoder and
decoder their layers and side modules. With no mechanism on, the model is exactly the stock Transformer. The paper
settings are architecture presets (:mod:`syntrans.models.presets`).

Per forward, each side returns its layers' reports and its losses and metrics; the model adds the losses that need
both sides (the plan's ``model_report``) and hands the criterion every loss and metric in ``extra["aux_losses"]`` and
``extra["aux_metrics"]``, each side's output (its layers' reports) in ``extra["syntax"]``
(:class:`~syntrans.modules.layer_report.SyntaxOutput`: ``.encoder.layers[i]``, ``.decoder.layers[i]``).
"""
from __future__ import annotations

from typing import Dict, List, Optional

from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig, TransformerModelBase

from ..data.features import FeatureNeeds
from ..mechanisms.base import STARTS
from ..mechanisms.layer_lists import parse_layer_spec
from ..mechanisms.plan import SyntaxPlan
from ..mechanisms.registry import MECHANISMS
from ..modules.aux_losses import merge_aux
from ..modules.blocks import SyntaxPart
from ..modules.layer_report import SyntaxOutput
from ..tasks.model_interface import SyntaxModel, model_overrides, value_ranges
from .config import START_HELP, layer_side, model_config, model_shape, store
from .decoder import SyntaxTransformerDecoder
from .encoder import SyntaxTransformerEncoder
from .warm_start import complete_state_dict

MODEL = "syntax_transformer"


@register_model(MODEL)
class SyntaxTransformerModel(TransformerModelBase, SyntaxModel):
    """Transformer with syntax mechanisms (see the module docstring)."""

    @classmethod
    def add_args(cls, parser):
        """fairseq's Transformer flags and each mechanism group's, prefixed by its key (``--<key>-layers``); no
        defaults on the parser: presets fill what the flags leave unset, the config's declared defaults the rest."""
        gen_parser_from_dataclass(parser, TransformerConfig(), delete_default=True, with_prefix="")
        for M in MECHANISMS:
            gen_parser_from_dataclass(parser, M.Config(), delete_default=True, with_prefix=f"--{M.key}")
            for name in (f.name for f in M.Config.__dataclass_fields__.values()):
                action = parser._option_string_actions.get(f"--{M.key}-{name.replace('_', '-')}")
                if action is not None and layer_side(M.key, name):  # layer lists also take 'all'
                    action.type = parse_layer_spec
        parser.add_argument("--syntax-start", choices=STARTS, help=START_HELP)  # default: the base preset's

    def __init__(self, cfg, encoder, decoder):
        super().__init__(cfg, encoder, decoder)
        self.plan: SyntaxPlan = cfg.plan

    @classmethod
    def build_model(cls, cfg, task):
        """The model of a config in any form (the module docstring): the typed config with the task's
        ``--model-overrides`` on top and the fields a mechanism takes from the training data, written back into
        ``cfg``; then fairseq's build, the encoder and decoder taking the typed config's plan."""
        config = model_config(cfg, model_overrides(task))
        for M in MECHANISMS:
            group = getattr(config, M.key)
            for name, value in M.data_fields(group, value_ranges(task, M.title)).items():
                setattr(group, name, value)
        if cfg is not config:
            store(config, cfg)
        return super().build_model(config, task)

    @classmethod
    def build_encoder(cls, cfg, src_dict, embed_tokens):
        return SyntaxTransformerEncoder(cfg, cfg.plan.sides["encoder"], src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, cfg, tgt_dict, embed_tokens):
        return SyntaxTransformerDecoder(cfg, cfg.plan.sides["decoder"], tgt_dict, embed_tokens,
                                        no_encoder_attn=cfg.no_cross_attention)

    # ------------------------------------------------------------------------------------------------ data
    def syntax_needs(self) -> FeatureNeeds:
        """The batch features (``net_input`` keys) this model reads: always, where the data has them, and those the
        training split must have (its auxiliary losses)."""
        return self.plan.features()

    def set_epoch(self, epoch: int) -> None:
        """fairseq's epoch (1-based) for every syntax part (a warm-up)."""
        for module in self.modules():
            if isinstance(module, SyntaxPart):
                module.set_epoch(epoch)

    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints of earlier versions: their keys renamed to today's modules (the plan's legacy prefixes). A
        checkpoint without this model's syntax parameters (a stock Transformer's: a warm start) gets them as the model
        was just built, each as its mechanism initialises it, and the lists of what is new and what was loaded are
        logged (:mod:`.warm_start`), where the task allows it (a model built to train, not one built from a
        checkpoint: :meth:`~syntrans.tasks.model_interface.SyntaxModel.allow_warm_start`)."""
        prefix = f"{name}." if name else ""
        for old, new in self.plan.legacy_keys().items():
            for key in [k for k in state_dict if k.startswith(prefix + old)]:
                state_dict[prefix + new + key[len(prefix + old):]] = state_dict.pop(key)
        super().upgrade_state_dict_named(state_dict, name)
        if self.warm_start_allowed:
            complete_state_dict(self, state_dict, name)

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
        merge_aux(aux, encoder_out["syntax"].aux)
        merge_aux(aux, extra["syntax"].aux)
        self.plan.model_report(encoder_out, extra, prev_output_tokens, self.decoder.padding_idx, aux)
        extra.update(aux)
        extra["syntax"] = SyntaxOutput(encoder_out["syntax"], extra["syntax"])
        return x, extra



__all__: List[str] = ["SyntaxTransformerModel", "model_shape"]
