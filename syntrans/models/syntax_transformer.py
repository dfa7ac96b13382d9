"""``syntax_transformer``: fairseq's Transformer whose self-attention takes syntax mechanisms.

Every mechanism is switched on per layer/head by options; with none on, the model is exactly the
stock Transformer. Paper settings are registered as architecture presets at the end of this file.
"""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Set

import torch
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerDecoderBase, TransformerEncoderBase, TransformerModel
from fairseq.models.transformer.transformer_legacy import base_architecture, transformer_iwslt_de_en
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from ..modules.aux_losses import merge_aux, report_aux_loss, report_aux_metric
from ..modules.distance_bias import distance_log_mask
from ..modules.gate import SyntaxGate
from ..modules.head_plan import HeadPlan, SyntaxBatch
from ..modules.nsd_layers import BOS_NSD, nsd_losses
from ..modules.pascal import pascal_weights
from ..modules.sync_attn import sync_loss
from ..modules.syntax_attention import SyntaxBiasedMultiheadAttention
from .nsd_side import NsdSide
from .options import (
    DbsaOptions,
    DistanceMaskOptions,
    GateOptions,
    LisaOptions,
    NsdOptions,
    PascalOptions,
    SyncAttnOptions,
    parse_layers,
)

logger = logging.getLogger("syntrans.nsd")


class SyntaxEncoderLayer(TransformerEncoderLayerBase):
    """A stock encoder layer whose self-attention accepts per-head syntax mechanisms."""

    def build_self_attention(self, embed_dim, cfg):
        attn = super().build_self_attention(embed_dim, cfg)
        attn.__class__ = SyntaxBiasedMultiheadAttention  # same parameters and constructor; adds syntax hooks
        attn.init_syntax()
        return attn


class SyntaxDecoderLayer(TransformerDecoderLayerBase):
    """A stock decoder layer whose self-attention accepts DBSA heads."""

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        attn = super().build_self_attention(embed_dim, cfg, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
        attn.__class__ = SyntaxBiasedMultiheadAttention
        attn.init_syntax()
        return attn


def _layers(cfg, name: str, num_layers: int) -> List[int]:
    return parse_layers(getattr(cfg, name, ""), num_layers, "--" + name.replace("_", "-"))


def _dbsa_heads(cfg, layers: List[int], num_heads: int) -> int:
    heads = int(getattr(cfg, "dbsa_heads", 1) or 0)
    if layers and not 1 <= heads <= num_heads:
        raise ValueError(f"--dbsa-heads must lie in 1..{num_heads} (attention heads), found {heads}")
    if layers and cfg.checkpoint_activations:
        raise ValueError("DBSA's parent loss is computed inside the attention and would lose its gradient under "
                         "--checkpoint-activations; train DBSA models without it")
    return heads


def _required(features: Dict[str, Optional[torch.Tensor]], name: str, shape, why: str) -> torch.Tensor:
    """The batch feature ``name`` (``net_input`` key) of the expected shape, or a ValueError saying who needs it."""
    value = features.get(name)
    if value is None:
        raise ValueError(f"{why} needs {name} in net_input: use --task syntax_translation on data whose sidecars "
                         "include the parses of that side (syntrans-preprocess --trainparse/--validparse/--testparse)")
    if tuple(value.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(value.shape)}, expected {tuple(shape)}")
    return value


class SyntaxTransformerEncoder(TransformerEncoderBase):
    """Encoder that builds the syntax inputs of a batch once and hands them to the chosen layers.

    In each layer the syntax heads are consecutive from head 0: distance-mask heads, then PASCAL heads,
    then the LISA head, then DBSA heads (:class:`HeadPlan`); the remaining heads are stock.
    """

    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        self.num_heads = H = cfg.encoder.attention_heads
        n = len(self.layers)
        self.distance_layers = _layers(cfg, "distance_layers", n)
        self.distance_heads = int(getattr(cfg, "distance_heads", 0) or 0)
        self.distance_tau = None if getattr(cfg, "distance_hard", False) else float(getattr(cfg, "distance_tau", 10.0))
        self.pascal_layers = _layers(cfg, "pascal_layers", n)
        self.pascal_heads = int(getattr(cfg, "pascal_heads", 0) or 0)
        self.pascal_sigma = float(getattr(cfg, "pascal_sigma", 1.0))
        self.lisa_layers = _layers(cfg, "lisa_layers", n)
        self.lisa_weight = float(getattr(cfg, "lisa_weight", 1.0))
        self.lisa_gold_parents = bool(getattr(cfg, "lisa_gold_parents", False))
        for flag, layers, heads in (("--distance-heads", self.distance_layers, self.distance_heads),
                                    ("--pascal-heads", self.pascal_layers, self.pascal_heads)):
            if layers and not 1 <= heads <= H:
                raise ValueError(f"{flag} must lie in 1..{H} (encoder heads), found {heads}")
        if self.pascal_layers and not self.pascal_sigma > 0:
            raise ValueError(f"--pascal-sigma must be > 0, found {self.pascal_sigma}")
        q = float(getattr(cfg, "pascal_ignore", 0.0))
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"--pascal-ignore is a probability in [0, 1], found {q}")
        if self.lisa_layers and cfg.checkpoint_activations:
            raise ValueError("LISA's parent loss is computed inside the attention and would lose its gradient under "
                             "--checkpoint-activations; train LISA models without it")
        self.gate_layers = _layers(cfg, "gate_layers", n)
        self.dbsa_layers = _layers(cfg, "dbsa_encoder_layers", n)
        self.dbsa_heads = _dbsa_heads(cfg, self.dbsa_layers, H)
        self.dbsa_weight = float(getattr(cfg, "dbsa_weight", 0.5))
        p = float(getattr(cfg, "gate_syntax_dropout", 0.0))
        if not 0.0 <= p < 1.0:
            raise ValueError(f"--gate-syntax-dropout is a dropout rate in [0, 1), found {p}")
        self.nsd = NsdSide.from_cfg(cfg, "src")
        self.nsd_weights = (float(getattr(cfg, "nsd_ce_weight", 1.0)), float(getattr(cfg, "nsd_dist_weight", 1.0)))
        if self.nsd.embeds:
            self.nsd_input = self.nsd.build_input(cfg.encoder.embed_dim, int(getattr(cfg, "nsd_embed_dim", 0) or 0),
                                                  float(getattr(cfg, "nsd_spe_lambda", 40.0)))
        if self.nsd.output:
            self.nsd_classifier = self.nsd.build_classifier(cfg.encoder.embed_dim)
        for i in range(n):
            plan = HeadPlan(H, distance=self.distance_heads if i in self.distance_layers else 0,
                            pascal=self.pascal_heads if i in self.pascal_layers else 0,
                            lisa=1 if i in self.lisa_layers else 0, dbsa=self.dbsa_heads if i in self.dbsa_layers else 0,
                            gated=i in self.gate_layers)
            gate = SyntaxGate(cfg.encoder.embed_dim, H, int(getattr(cfg, "gate_hidden", 256)),
                              not getattr(cfg, "gate_no_batchnorm", False), getattr(cfg, "gate_mode", "gated"),
                              int(getattr(cfg, "gate_warmup_epochs", 0))) if plan.gated else None
            if plan.active:
                self._attn(i).configure(plan, q, self.lisa_gold_parents, gate, p)

    def build_encoder_layer(self, cfg):
        layer = SyntaxEncoderLayer(cfg, return_fc=self.return_fc)
        checkpoint = cfg.checkpoint_activations
        if checkpoint:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)

    def syntax_features(self) -> Set[str]:
        wanted = set()
        if self.distance_layers:
            wanted.add("src_gaps")
        if self.pascal_layers:
            wanted.add("src_parent_middle")
        if self.lisa_layers and self.lisa_gold_parents:
            wanted.add("src_parent_first")
        if self.nsd.embeds:
            wanted.add(self.nsd.input_feature)
        return wanted

    def optional_syntax_features(self) -> Set[str]:
        """Features used where present: LISA's and DBSA's parents feed only their losses and UAS (required in training)."""
        return (({"src_parent_first"} if self.lisa_layers else set()) | ({"src_parent_chain"} if self.dbsa_layers else set())
                | ({self.nsd.label_feature} if self.nsd.output else set()))

    def _attn(self, i: int) -> SyntaxBiasedMultiheadAttention:
        return self.layers[i].self_attn

    def _feature(self, features: Dict[str, Optional[torch.Tensor]], name: str, shape) -> torch.Tensor:
        return _required(features, name, shape, "this model's source syntax")

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
        if self.dbsa_layers and (self.training or features.get("src_parent_chain") is not None):
            batch.parents_chain = _required(features, "src_parent_chain", (B, T), "training the encoder's DBSA heads").long()
        return batch

    def set_syntax_batch(self, src_tokens: torch.Tensor, features: Dict[str, Optional[torch.Tensor]]) -> None:
        """Give every layer with syntax heads this batch's inputs (distance-only layers: one shared additive bias).

        They stay set until the next forward, so activation checkpointing recomputes with them.
        """
        if not (self.distance_layers or self.pascal_layers or self.lisa_layers or self.gate_layers or self.dbsa_layers):
            return
        batch = self.syntax_batch(src_tokens, features)
        for layer in self.layers:
            attn = layer.self_attn
            if attn.plan.explicit:
                attn.syntax_batch = batch
            elif attn.plan.distance:
                attn.syntax_bias = batch.distance_bias(self.num_heads, attn.plan.distance)

    def aux_outputs(self) -> Dict:
        """The LISA parent loss (per real source token and LISA layer), the LISA heads' attachment score (%),
        and at evaluation the gate value of every gated layer × syntax head (mean per sentence)."""
        extra: Dict = {}
        stats = [s for s in (self._attn(i).lisa_stats for i in self.lisa_layers) if s is not None]
        if stats:
            loss, count, hits = (sum(x) for x in zip(*stats))
            report_aux_loss(extra, "lisa", loss, count, self.lisa_weight)
            report_aux_metric(extra, "lisa_uas", 100.0 * hits.float(), count)
        report_dbsa(extra, "dbsa_src", [self._attn(i) for i in self.dbsa_layers], self.dbsa_weight)
        if not self.training:  # gate values per layer × syntax head, averaged over the validation sentences
            for i in self.gate_layers:
                attn = self._attn(i)
                g = attn.gate_values  # (B, H)
                for h in range(attn.plan.syntax_heads):
                    report_aux_metric(extra, f"gate_l{i}h{h}", g[:, h].float().sum(), g.size(0))
        return extra

    def forward(self, src_tokens, src_lengths: Optional[torch.Tensor] = None, return_all_hiddens: bool = False,
                token_embeddings: Optional[torch.Tensor] = None, **features):
        self.set_syntax_batch(src_tokens, features)
        if self.nsd.embeds and token_embeddings is None:
            # fairseq scales token_embeddings by embed_scale: hand it the NSD input divided by that scale
            values = self._feature(features, self.nsd.input_feature, tuple(src_tokens.shape))
            token_embeddings = self.nsd_input(self.embed_scale * self.embed_tokens(src_tokens), values) / self.embed_scale
            report_clipped(self.nsd_input.clipped, "source", self.nsd, self.training)
        out = super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        if self.lisa_layers or self.gate_layers or self.dbsa_layers or self.nsd.output:
            out["syntax_aux"] = self.aux_outputs()
            if self.nsd.output:
                labels = features.get(self.nsd.label_feature)
                if labels is None and self.training:
                    labels = _required(features, self.nsd.label_feature, tuple(src_tokens.shape), "the source NSD output")
                if labels is not None:
                    logits = self.nsd_classifier(out["encoder_out"][0].transpose(0, 1))  # (B, T, V)
                    report_nsd(out["syntax_aux"], "src", logits, labels, self.nsd, self.nsd_weights)
        return out


def report_clipped(clipped: int, side: str, nsd: NsdSide, training: bool) -> None:
    """NSD values outside the training range are clipped to it: say how many (at evaluation and generation)."""
    if clipped and not training:
        logger.warning(f"{clipped} {side} NSD value(s) outside the training range [{nsd.v_min}, {nsd.v_max}] "
                       "clipped to it")


def report_nsd(extra: Dict, side: str, logits: torch.Tensor, labels: torch.Tensor, nsd: NsdSide, weights) -> None:
    """L_entdist as ``nsd_{side}_ce`` and L_dist as ``nsd_{side}_dist`` (per token with a value), and the %
    of gold values outside the model's range (clipped) as ``nsd_{side}_clipped``."""
    ce, dist, count, clipped = nsd_losses(logits, labels, nsd.v_min, nsd.v_max)
    report_aux_loss(extra, f"nsd_{side}_ce", ce, count, weights[0])
    report_aux_loss(extra, f"nsd_{side}_dist", dist, count, weights[1])
    report_aux_metric(extra, f"nsd_{side}_clipped", 100.0 * clipped.float(), count)


def report_dbsa(extra: Dict, name: str, attns: List[SyntaxBiasedMultiheadAttention], weight: float) -> None:
    """The DBSA parent loss of these layers (per token with a parent, summed over layers) as ``name``, its
    attachment score ``name_uas`` (%), and on the decoder side ``name_later``: the % of arcs dropped because
    the parent follows its dependent."""
    stats = [a.dbsa_stats for a in attns if a.dbsa_stats is not None]
    if not stats:
        return
    loss, count, hits, dropped = (sum(x) for x in zip(*stats))
    report_aux_loss(extra, name, loss, count, weight)
    report_aux_metric(extra, f"{name}_uas", 100.0 * hits.float(), count)
    if any(a.causal for a in attns):
        report_aux_metric(extra, f"{name}_later", 100.0 * dropped.float(), count + dropped)


class SyntaxTransformerDecoder(TransformerDecoderBase):
    """Decoder with causal DBSA heads (Deguchi et al. 2019) in the chosen layers; otherwise stock.

    In training and validation :class:`SyntaxTransformerModel` hands it the target parents of the batch
    (``tgt_parent_chain``, in ``prev_output_tokens`` coordinates) for the parent loss; generation needs none.
    """

    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)
        H = cfg.decoder.attention_heads
        self.dbsa_layers = _layers(cfg, "dbsa_decoder_layers", len(self.layers))
        self.dbsa_heads = _dbsa_heads(cfg, self.dbsa_layers, H)
        self.dbsa_weight = float(getattr(cfg, "dbsa_weight", 0.5))
        for i in self.dbsa_layers:
            self._attn(i).configure(HeadPlan(H, dbsa=self.dbsa_heads), causal=True)
        self.nsd = NsdSide.from_cfg(cfg, "tgt")
        self.nsd_weights = (float(getattr(cfg, "nsd_ce_weight", 1.0)), float(getattr(cfg, "nsd_dist_weight", 1.0)))
        self.nsd_gold_in: Optional[torch.Tensor] = None  # (B, T) teacher forcing: gold NSD of the input tokens
        self.nsd_logits: Optional[torch.Tensor] = None  # (B, T, V) of the last forward
        if self.nsd.embeds:
            if self.project_in_dim is not None:
                raise ValueError("target NSD input needs --decoder-input-dim equal to --decoder-embed-dim")
            # fairseq's own hook between the scaled token embeddings and the positions: x ← NSD input(x)
            self.project_in_dim = self.nsd.build_input(cfg.decoder.embed_dim, int(getattr(cfg, "nsd_embed_dim", 0) or 0),
                                                       float(getattr(cfg, "nsd_spe_lambda", 40.0)))
        if self.nsd.output:
            self.nsd_classifier = self.nsd.build_classifier(cfg.decoder.embed_dim)

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        layer = SyntaxDecoderLayer(cfg, no_encoder_attn)
        checkpoint = cfg.checkpoint_activations
        if checkpoint:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)

    def _attn(self, i: int) -> SyntaxBiasedMultiheadAttention:
        return self.layers[i].self_attn

    def output_layer(self, features):
        """The NSD classifier reads the same features as the output projection (Ma et al. 2019, NSD output)."""
        if self.nsd.output:
            self.nsd_logits = self.nsd_classifier(features)  # (B, T, V)
        return super().output_layer(features)

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kwargs):
        """fairseq's decoder; with target NSD input, the NSD of each input token is the gold one in a
        teacher-forced forward and, step by step, the NSD predicted at the previous step (kept in
        ``incremental_state``, reordered with the beams)."""
        if self.nsd.embeds:
            self.project_in_dim.values = self._nsd_inputs(prev_output_tokens, incremental_state)
        out = super().forward(prev_output_tokens, encoder_out=encoder_out, incremental_state=incremental_state, **kwargs)
        if self.nsd.embeds:
            report_clipped(self.project_in_dim.clipped, "target", self.nsd, self.training)
            self.project_in_dim.values = None
            if incremental_state is not None:
                if self.nsd_logits is None:
                    raise ValueError("target NSD input in incremental decoding needs the output layer (features_only=False)")
                predicted = self.nsd_classifier.predict(self.nsd_logits[:, -1])  # (B,) the next input's NSD
                self.set_incremental_state(incremental_state, "nsd", {"prev": predicted})
        return out

    def _nsd_inputs(self, prev_output_tokens: torch.Tensor, incremental_state) -> torch.Tensor:
        if incremental_state is None:
            if self.nsd_gold_in is None:
                raise ValueError(f"a teacher-forced forward with target NSD input needs {self.nsd.input_feature} "
                                 "(the gold NSD of the decoder input); incremental decoding predicts it instead")
            if self.nsd_gold_in.shape != prev_output_tokens.shape:
                raise ValueError(f"{self.nsd.input_feature} has shape {tuple(self.nsd_gold_in.shape)}, expected "
                                 f"{tuple(prev_output_tokens.shape)}")
            return self.nsd_gold_in
        saved = self.get_incremental_state(incremental_state, "nsd")
        if saved is None or saved.get("prev") is None:  # the first step: BOS
            return prev_output_tokens.new_full((prev_output_tokens.size(0), 1), BOS_NSD)
        return saved["prev"].unsqueeze(1)  # (B, 1)

    def reorder_incremental_state(self, incremental_state, new_order):
        """The predicted NSD of each hypothesis follows it when the beams are reordered."""
        saved = self.get_incremental_state(incremental_state, "nsd")
        if saved is not None and saved.get("prev") is not None:
            self.set_incremental_state(incremental_state, "nsd", {"prev": saved["prev"].index_select(0, new_order)})

    def set_syntax_batch(self, prev_output_tokens: torch.Tensor, parents: Optional[torch.Tensor]) -> None:
        """Route the DBSA layers through the explicit path for one teacher-forced forward (loss, UAS, probabilities)."""
        if not self.dbsa_layers:
            return
        B, T = prev_output_tokens.shape
        if self.training or parents is not None:
            parents = _required({"tgt_parent_chain": parents}, "tgt_parent_chain", (B, T),
                                "training the decoder's DBSA heads").long()
        batch = SyntaxBatch(pad_mask=prev_output_tokens.eq(self.padding_idx), parents_chain=parents)
        for i in self.dbsa_layers:
            self._attn(i).syntax_batch = batch

    def clear_syntax_batch(self) -> None:
        """Back to the stock (incremental) path, as used by generation; drops the kept probabilities."""
        for i in self.dbsa_layers:
            attn = self._attn(i)
            attn.syntax_batch = attn.dbsa_probs = None
            attn.keep_dbsa_probs = False

    def aux_outputs(self) -> Dict:
        extra: Dict = {}
        report_dbsa(extra, "dbsa_tgt", [self._attn(i) for i in self.dbsa_layers], self.dbsa_weight)
        for i in self.dbsa_layers:
            self._attn(i).dbsa_stats = None
        return extra


@register_model("syntax_transformer")
class SyntaxTransformerModel(TransformerModel):
    """Transformer with syntax-guided encoder attention (see the options of :mod:`syntrans.models.options`)."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        for options in (DistanceMaskOptions(), PascalOptions(), LisaOptions(), GateOptions(), DbsaOptions(),
                        SyncAttnOptions(), NsdOptions()):
            gen_parser_from_dataclass(parser, options, delete_default=True)

    def __init__(self, args, encoder, decoder):
        super().__init__(args, encoder, decoder)
        self.sync_attn = bool(getattr(args, "sync_attn", False))
        self.sync_weight = float(getattr(args, "sync_weight", 0.5))
        self.sync_layer = None
        if self.sync_attn:
            n = len(decoder.layers)
            layer = int(getattr(args, "sync_layer", -2))
            if not -n <= layer < n:
                raise ValueError(f"--sync-layer must name one of the {n} decoder layers (0..{n - 1}, or -{n}..-1), found {layer}")
            self.sync_layer = layer % n
            if len(encoder.dbsa_layers) != 1 or len(decoder.dbsa_layers) != 1:
                raise ValueError("--sync-attn compares one DBSA attention per side: give exactly one layer in each of "
                                 f"--dbsa-encoder-layers and --dbsa-decoder-layers (found {encoder.dbsa_layers} and "
                                 f"{decoder.dbsa_layers})")

    @classmethod
    def build_model(cls, args, task):
        syntax_base_architecture(args)
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return SyntaxTransformerEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return SyntaxTransformerDecoder(TransformerConfig.from_namespace(args), tgt_dict, embed_tokens,
                                        no_encoder_attn=args.no_cross_attention)

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
                    labels = _required(syntax, nsd.label_feature, tuple(prev_output_tokens.shape), "the target NSD output")
                if labels is not None:
                    report_nsd(extra, "tgt", self.decoder.nsd_logits, labels, nsd, self.decoder.nsd_weights)
        finally:
            self.decoder.nsd_gold_in = self.decoder.nsd_logits = None
            self.decoder.clear_syntax_batch()
            if enc_attn is not None:
                enc_attn.keep_dbsa_probs, enc_attn.dbsa_probs = False, None
        return x, extra


def _default(args, name: str, value) -> None:
    setattr(args, name, getattr(args, name, value))


@register_model_architecture("syntax_transformer", "syntax_transformer")
def syntax_base_architecture(args):
    """Transformer base with no syntax mechanism switched on."""
    _default(args, "distance_layers", "")
    _default(args, "distance_heads", 0)
    _default(args, "distance_tau", 10.0)
    _default(args, "distance_hard", False)
    _default(args, "pascal_layers", "")
    _default(args, "pascal_heads", 0)
    _default(args, "pascal_sigma", 1.0)
    _default(args, "pascal_ignore", 0.0)
    _default(args, "lisa_layers", "")
    _default(args, "lisa_weight", 1.0)
    _default(args, "lisa_gold_parents", False)
    _default(args, "gate_layers", "")
    _default(args, "gate_mode", "gated")
    _default(args, "gate_hidden", 256)
    _default(args, "gate_no_batchnorm", False)
    _default(args, "gate_warmup_epochs", 0)
    _default(args, "gate_syntax_dropout", 0.0)
    _default(args, "dbsa_encoder_layers", "")
    _default(args, "dbsa_decoder_layers", "")
    _default(args, "dbsa_heads", 1)
    _default(args, "dbsa_weight", 0.5)
    _default(args, "sync_attn", False)
    _default(args, "sync_weight", 0.5)
    _default(args, "sync_layer", -2)
    for name, value in NsdOptions().__dict__.items():
        _default(args, name, value)
    base_architecture(args)


def _iwslt_size(args):
    """The IWSLT presets' shared rest (Hou et al. 2022, App. A): transformer_iwslt_de_en dimensions (512, 4 heads,
    FFN 1024), dropout 0.3, attention dropout 0.2, then the syntax defaults."""
    _default(args, "dropout", 0.3)
    _default(args, "attention_dropout", 0.2)
    transformer_iwslt_de_en(args)
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "distance_transformer_iwslt_de_en")
def distance_transformer_iwslt_de_en(args):
    """Hou et al. 2022 (App. A), IWSLT14 de-en: 6+6 layers, 512, 4 heads, FFN 1024, dropout 0.3,
    attention dropout 0.2, soft mask τ = 10 in heads 0-3 of encoder layer 0."""
    _default(args, "distance_layers", "0")
    _default(args, "distance_heads", 4)
    _iwslt_size(args)


@register_model_architecture("syntax_transformer", "distance_transformer_wmt_en_de")
def distance_transformer_wmt_en_de(args):
    """Hou et al. 2022 (App. A), WMT14 en-de: Transformer base (8 heads, FFN 2048), dropout and attention
    dropout 0.1, soft mask τ = 10 in heads 0-1 of encoder layer 0."""
    _default(args, "distance_layers", "0")
    _default(args, "distance_heads", 2)
    _default(args, "dropout", 0.1)
    _default(args, "attention_dropout", 0.1)
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "pascal_transformer_wmt_en_de")
def pascal_transformer_wmt_en_de(args):
    """Bugliarello & Okazaki 2020, WMT16 en-de: Transformer base, 5 PASCAL heads of 8 in encoder layer 0,
    σ = 1, no parent ignoring (other datasets' heads/q: configs/pascal/)."""
    _default(args, "pascal_layers", "0")
    _default(args, "pascal_heads", 5)
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "pascal_transformer_iwslt_de_en")
def pascal_transformer_iwslt_de_en(args):
    """PASCAL at IWSLT size (no published IWSLT setting: 2 PASCAL heads of 4 in encoder layer 0, σ = 1,
    q = 0; dropout 0.3, attention dropout 0.2 as Hou et al.'s IWSLT comparison)."""
    _default(args, "pascal_layers", "0")
    _default(args, "pascal_heads", 2)
    _iwslt_size(args)


@register_model_architecture("syntax_transformer", "lisa_transformer_wmt_en_de")
def lisa_transformer_wmt_en_de(args):
    """LISA as in Bugliarello & Okazaki 2020: Transformer base, head 0 of encoder layer 0 bi-affine and
    trained on first-subword parents with weight 1.0."""
    _default(args, "lisa_layers", "0")
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "lisa_transformer_iwslt_de_en")
def lisa_transformer_iwslt_de_en(args):
    """LISA at IWSLT size: head 0 of encoder layer 0, weight 1.0; dropout 0.3, attention dropout 0.2."""
    _default(args, "lisa_layers", "0")
    _iwslt_size(args)


@register_model_architecture("syntax_transformer", "gated_distance_transformer_iwslt_de_en")
def gated_distance_transformer_iwslt_de_en(args):
    """Hou et al., gated self-attention, IWSLT14 de-en: 6+6 layers, 512, FFN 1024, 4 heads, shared embeddings,
    dropout 0.3, attention dropout 0.2; every head of every encoder layer gated between the soft distance mask
    (τ = 10) and stock attention, syntax ignoring p = 0.4, pre-warm-up K = 80 epochs (other datasets: configs/gated/)."""
    _default(args, "distance_layers", "all")
    _default(args, "distance_heads", 4)
    _default(args, "gate_layers", "all")
    _default(args, "gate_syntax_dropout", 0.4)
    _default(args, "gate_warmup_epochs", 80)
    _default(args, "share_all_embeddings", True)
    _iwslt_size(args)


@register_model_architecture("syntax_transformer", "dbsa_transformer_wmt_en_de")
def dbsa_transformer_wmt_en_de(args):
    """Deguchi et al. 2019, WMT14 en-de: Transformer base; one DBSA head in the first encoder layer and one
    (causal) in the first decoder layer, λ_dep = 0.5."""
    _default(args, "dbsa_encoder_layers", "0")
    _default(args, "dbsa_decoder_layers", "0")
    _default(args, "dbsa_heads", 1)
    _default(args, "dbsa_weight", 0.5)
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "syncattn_transformer_wmt_en_de")
def syncattn_transformer_wmt_en_de(args):
    """Deguchi et al. 2021, WMT14 en-de: the DBSA model plus L_sync with λ_sync = 0.5, C from the penultimate
    decoder layer (other datasets' λ_sync: configs/syncattn/)."""
    _default(args, "sync_attn", True)
    _default(args, "sync_weight", 0.5)
    _default(args, "sync_layer", -2)
    dbsa_transformer_wmt_en_de(args)


@register_model_architecture("syntax_transformer", "nsd_transformer")
def nsd_transformer(args):
    """NSD (Ma et al. 2019) with nothing switched on yet: Transformer base plus the NSD options' defaults
    (dD, λ_SPE 40); choose per side with --nsd-{src,tgt}-{input,spe,output} (the Table 1 rows: configs/nsd/)."""
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "nsd_src_transformer_base")
def nsd_src_transformer_base(args):
    """NSD on the source only (Ma et al. 2019): dD as input W(x‖e)+b with the syntactic PE (λ_SPE 40) and
    predicted from the encoder output (L_entdist + L_dist); Transformer base."""
    _default(args, "nsd_kind", "dD")
    _default(args, "nsd_src_input", "linear")
    _default(args, "nsd_src_spe", True)
    _default(args, "nsd_src_output", True)
    _default(args, "nsd_spe_lambda", 40.0)
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "nsd_transformer_base")
def nsd_transformer_base(args):
    """Ma et al. 2019, Table 1's best row on both sides: dD as input W(x‖e)+b with the syntactic PE
    (λ_SPE 40) and as output (Eq. 18+19+20: L_entdist + L_dist), source and target; Transformer base.
    In decoding the predicted target NSD of each token feeds the next step."""
    for side in ("src", "tgt"):
        _default(args, f"nsd_{side}_input", "linear")
        _default(args, f"nsd_{side}_spe", True)
        _default(args, f"nsd_{side}_output", True)
    nsd_src_transformer_base(args)


__all__: List[str] = ["SyntaxTransformerModel", "SyntaxTransformerEncoder", "SyntaxTransformerDecoder",
                      "SyntaxEncoderLayer", "SyntaxDecoderLayer"]
