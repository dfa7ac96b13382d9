"""The decoder of a ``syntax_transformer``: fairseq's decoder with causal DBSA heads (Deguchi et al. 2019) and,
with NSD on the target side (Ma et al. 2019), the target NSD as input and output, and its decoding state."""
from __future__ import annotations

from typing import Dict, Optional

import torch
from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerDecoderBase
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase

from ..modules.aux_reports import report_dbsa, warn_clipped
from ..modules.head_plan import LayerSyntax, SyntaxBatch
from ..modules.syntax_attention import SyntaxMultiheadAttention
from ..syntax.nsd import BOS_NSD
from .net_input import required_feature
from .nsd_side import NsdSide
from .options import SyntaxOptions


class SyntaxDecoderLayer(TransformerDecoderLayerBase):
    """A stock decoder layer whose self-attention is a :class:`SyntaxMultiheadAttention` running ``syntax``."""

    def __init__(self, cfg, syntax: Optional[LayerSyntax], no_encoder_attn=False, add_bias_kv=False,
                 add_zero_attn=False):
        self.syntax = syntax  # a plain attribute, set before the base constructor calls build_self_attention
        super().__init__(cfg, no_encoder_attn=no_encoder_attn, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        # fairseq's own arguments for decoder self-attention, plus this layer's syntax heads
        return SyntaxMultiheadAttention(embed_dim, cfg.decoder.attention_heads, dropout=cfg.attention_dropout,
                                        add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                        self_attention=not cfg.cross_self_attention, q_noise=self.quant_noise,
                                        qn_block_size=self.quant_noise_block_size,
                                        xformers_att_config=cfg.decoder.xformers_att_config, syntax=self.syntax)


class SyntaxTransformerDecoder(TransformerDecoderBase):
    """Decoder with causal DBSA heads (Deguchi et al. 2019) in the chosen layers; otherwise stock.

    In training and validation :class:`~syntrans.models.syntax_transformer.SyntaxTransformerModel` hands it the
    target parents of the batch (``tgt_parent_chain``, in ``prev_output_tokens`` coordinates) for the parent loss;
    generation needs none.
    """

    def __init__(self, cfg, syntax: SyntaxOptions, dictionary, embed_tokens, no_encoder_attn=False,
                 output_projection=None):
        n, H = cfg.decoder.layers, cfg.decoder.attention_heads
        # per layer its syntax, taken in order by build_decoder_layer while the base constructor builds the layers
        self._unbuilt = iter(syntax.decoder_layers(n, H))
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)
        del self._unbuilt
        self.syntax = syntax
        self.dbsa_layers = syntax.layers("dbsa_decoder_layers", n)
        if self.dbsa_layers and cfg.checkpoint_activations:
            raise ValueError("DBSA's parent loss is computed inside the attention and would lose its gradient under "
                             "--checkpoint-activations; train DBSA models without it")
        self.nsd = NsdSide.from_options(syntax, "tgt")
        self.nsd_gold_in: Optional[torch.Tensor] = None  # (B, T) teacher forcing: gold NSD of the input tokens
        self.nsd_logits: Optional[torch.Tensor] = None  # (B, T, V) of the last forward
        if self.nsd.embeds:
            if self.project_in_dim is not None:
                raise ValueError("target NSD input needs --decoder-input-dim equal to --decoder-embed-dim")
            # fairseq's own hook between the scaled token embeddings and the positions: x ← NSD input(x)
            self.project_in_dim = self.nsd.build_input(cfg.decoder.embed_dim, int(syntax.nsd_embed_dim or 0),
                                                       float(syntax.nsd_spe_lambda))
        if self.nsd.output:
            self.nsd_classifier = self.nsd.build_classifier(cfg.decoder.embed_dim)

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        layer = SyntaxDecoderLayer(cfg, next(self._unbuilt), no_encoder_attn)
        checkpoint = cfg.checkpoint_activations
        if checkpoint:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)

    def _attn(self, i: int) -> SyntaxMultiheadAttention:
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
            warn_clipped(self.project_in_dim.clipped, "target", self.nsd.v_min, self.nsd.v_max, self.training)
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
        """Give the DBSA layers the target parents of one teacher-forced forward (loss, UAS, probabilities)."""
        if not self.dbsa_layers:
            return
        B, T = prev_output_tokens.shape
        if self.training or parents is not None:
            parents = required_feature({"tgt_parent_chain": parents}, "tgt_parent_chain", (B, T),
                                       "training the decoder's DBSA heads").long()
        batch = SyntaxBatch(pad_mask=prev_output_tokens.eq(self.padding_idx), parents_chain=parents)
        for i in self.dbsa_layers:
            self._attn(i).syntax_batch = batch

    def clear_syntax_batch(self) -> None:
        """Drop the batch set for a teacher-forced forward and the kept probabilities (generation sees neither)."""
        for i in self.dbsa_layers:
            attn = self._attn(i)
            attn.syntax_batch = attn.dbsa_probs = None
            attn.keep_dbsa_probs = False

    def aux_outputs(self) -> Dict:
        extra: Dict = {}
        report_dbsa(extra, "dbsa_tgt", [self._attn(i) for i in self.dbsa_layers], float(self.syntax.dbsa_weight))
        for i in self.dbsa_layers:
            self._attn(i).dbsa_stats = None
        return extra
