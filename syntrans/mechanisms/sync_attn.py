"""Synchronous syntactic attention (SyncAttn, Deguchi, Tamura and Ninomiya 2021, "Synchronous Syntactic Attention for
Transformer Neural Machine Translation", §3): the target-side dependency attention D (the decoder's DBSA heads) should
agree with the source-side one E (the encoder's DBSA heads) mapped through the encoder-decoder attention C of decoder
layer l_sync: D' = softmax(causal-mask(C E Cᵀ)), L_sync = Σ_{t,q} (D'_{t,q} − D_{t,q})², and
L = L_t + λ_dep·L_dep + λ_sync·L_sync. Logged as ``sync`` (per target token).

E and D are the DBSA heads' mean attention kept from the same forward (asked of the layers as their reports), C the
mean over heads of the encoder-decoder attention fairseq's decoder returns for its alignment layer: no attention is
computed twice.
"""
# no ``from __future__ import annotations`` here: fairseq builds the flags from the config fields' real types
from dataclasses import dataclass, field
from typing import Optional, Tuple

import torch
from fairseq.dataclass import FairseqDataclass

from ..modules.aux_losses import report_aux_loss
from ..modules.precision import full_precision
from .base import Mechanism, check_option, is_number

#: the mechanism whose attention SyncAttn ties across the sides
DEPENDENCY_HEADS = "dbsa"


@dataclass
class SyncAttnConfig(FairseqDataclass):
    """SyncAttn (Deguchi et al. 2021): L_sync = Σ (softmax(causal(C E Cᵀ)) − D)² ties the source parse to the target's."""

    attn: bool = field(
        default=False, metadata={"help": "add the synchronous syntactic attention loss (needs one DBSA layer per side)"}
    )
    weight: float = field(default=0.5, metadata={"help": "λ_sync (paper: 0.5 WMT14 en-de, 0.1 WMT16 en-ro, 10 ASPEC)"})
    layer: int = field(
        default=-2,
        metadata={"help": "0-based decoder layer whose encoder-decoder attention (mean over heads) is C; negative counts "
                          "from the last: -2 is the penultimate (the paper's layer 5 of 6)"},
    )


def sync_masked(tgt_pad: torch.Tensor) -> torch.Tensor:
    """(B, J, J) True at the masked cells: keys after the query, padding keys (except a padding query's own)."""
    J = tgt_pad.size(1)
    idx = torch.arange(J, device=tgt_pad.device)
    future = idx.unsqueeze(0) > idx.unsqueeze(1)  # (J, J) key after query
    own = idx.unsqueeze(0) == idx.unsqueeze(1)
    return future.unsqueeze(0) | (tgt_pad.unsqueeze(1) & ~(own.unsqueeze(0) & tgt_pad.unsqueeze(2)))


def mapped_target_attention(E: torch.Tensor, C: torch.Tensor, tgt_pad: torch.Tensor) -> torch.Tensor:
    """D' = softmax over keys of causal-mask(C E Cᵀ) (Deguchi et al. 2021, §3, Eq. 4–5).

    E (B, I, I) source DBSA attention, C (B, J, I) encoder-decoder attention (rows sum to 1 over real source
    keys, 0 on padding), tgt_pad (B, J) True at target padding → (B, J, J) float32; keys after the query and
    padding keys get 0. A padding query keeps its own position so that no row is empty (no NaN). Float32 also under
    autocast, which is switched off here (it would run the bmm in half precision, and CPU autocast the softmax too)."""
    with full_precision(C.device.type):
        C = C.float()
        mapped = torch.bmm(torch.bmm(C, E.float()), C.transpose(1, 2))  # (B, J, J)
        return torch.softmax(mapped.masked_fill(sync_masked(tgt_pad), float("-inf")), dim=-1)


def sync_loss(E: torch.Tensor, D: torch.Tensor, C: torch.Tensor, tgt_pad: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """L_sync = Σ_{t,q} (D'_{t,q} − D_{t,q})² over the unmasked cells of real target queries (Deguchi et al.
    2021, §3, Eq. 6), with the number of real target positions (the loss is reported per target token).

    E (B, I, I), D (B, J, J) decoder DBSA attention, C (B, J, I), tgt_pad (B, J) → (sum (), count ())."""
    d_prime = mapped_target_attention(E, C, tgt_pad)  # (B, J, J)
    cells = ~sync_masked(tgt_pad) & ~tgt_pad.unsqueeze(2)  # (B, J, J)
    sq = (d_prime - D.float()).pow(2)
    return torch.where(cells, sq, torch.zeros_like(sq)).sum(), (~tgt_pad).sum()


class SyncAttn(Mechanism):
    """The SyncAttn loss: reads one dependency-head layer per side and the encoder-decoder attention of l_sync."""

    switches = ("attn",)
    key = "sync"
    Config = SyncAttnConfig
    title = "SyncAttn (Deguchi et al. 2021)"

    def __init__(self, cfg: SyncAttnConfig, shape):
        super().__init__(cfg, shape)
        n = shape.decoder_layers
        check_option(not cfg.attn or (is_number(cfg.layer, True) and -n <= cfg.layer < n), "--sync-layer",
                     f"must name one of the {n} decoder layers (0..{n - 1}, or -{n}..-1)", cfg.layer)
        check_option(is_number(cfg.weight) and cfg.weight >= 0, "--sync-weight",
                     "(λ_sync) is the weight of L_sync and must be >= 0", cfg.weight)
        self.layer = int(cfg.layer) % n
        self.sources = {}  # side → its one dependency-head layer (set by check)

    @property
    def active(self) -> bool:
        return bool(self.cfg.attn)

    def check(self, plans, mixed):
        found = {side: [i for (s, i), keys in sorted(plans.items()) if s == side and DEPENDENCY_HEADS in keys]
                 for side in ("encoder", "decoder")}
        if len(found["encoder"]) != 1 or len(found["decoder"]) != 1:
            raise ValueError("--sync-attn compares one DBSA attention per side: give exactly one layer in each of "
                             f"--dbsa-encoder-layers and --dbsa-decoder-layers (found {found['encoder']} and "
                             f"{found['decoder']})")
        self.sources = {side: layers[0] for side, layers in found.items()}

    def keeps(self, side):
        return {DEPENDENCY_HEADS}

    def alignment_layer(self) -> Optional[int]:
        return self.layer

    def model_report(self, encoder_out, decoder_extra, prev_output_tokens, pad, extra):
        E = encoder_out["syntax"].layers[self.sources["encoder"]].mechanisms[DEPENDENCY_HEADS].attention  # (B, I, I)
        D = decoder_extra["syntax"].layers[self.sources["decoder"]].mechanisms[DEPENDENCY_HEADS].attention  # (B, J, J)
        C = decoder_extra["attn"][0]  # (B, J, I) mean over heads of layer l_sync
        loss, count = sync_loss(E, D, C, prev_output_tokens.eq(pad))
        report_aux_loss(extra, "sync", loss, count, float(self.cfg.weight))


__all__ = ["SyncAttn", "SyncAttnConfig", "mapped_target_attention", "sync_loss", "sync_masked"]
