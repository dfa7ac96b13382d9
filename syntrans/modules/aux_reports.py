"""What each mechanism reports to the criterion: its losses and metrics, from the statistics its layers recorded
(through :func:`~syntrans.modules.aux_losses.report_aux_loss` and :func:`~syntrans.modules.aux_losses.report_aux_metric`).

Names as they appear in the train/valid logs: ``lisa``/``lisa_uas``, ``dbsa_src``/``dbsa_tgt`` with ``…_uas``
(and ``dbsa_tgt_later``), ``gate_l{layer}h{head}``, ``nsd_{side}_ce``/``nsd_{side}_dist``/``nsd_{side}_clipped``.
"""
from __future__ import annotations

import logging
from typing import Dict, List, Sequence, Tuple

import torch

from .aux_losses import report_aux_loss, report_aux_metric
from .nsd_layers import nsd_losses
from .syntax_attention import SyntaxMultiheadAttention

logger = logging.getLogger("syntrans.nsd")


def report_lisa(extra: Dict, attns: Sequence[SyntaxMultiheadAttention], weight: float) -> None:
    """The LISA parent loss as ``lisa`` (per real source token with a parent, summed over the LISA layers; the
    negative log-likelihood with ``--lisa-loss ce``, the squared L2 distance to the parent mask with ``l2``) and the
    LISA heads' attachment score ``lisa_uas`` (% of tokens whose argmax key is the gold parent)."""
    stats = [a.lisa_stats for a in attns if a.lisa_stats is not None]
    if not stats:
        return
    loss, count, hits = (sum(x) for x in zip(*stats))
    report_aux_loss(extra, "lisa", loss, count, weight)
    report_aux_metric(extra, "lisa_uas", 100.0 * hits.float(), count)


def report_dbsa(extra: Dict, name: str, attns: Sequence[SyntaxMultiheadAttention], weight: float) -> None:
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


def report_gates(extra: Dict, layers: List[Tuple[int, SyntaxMultiheadAttention]]) -> None:
    """The gate value G of every gated (layer, syntax head) as ``gate_l{layer}h{head}``, mean over sentences."""
    for i, attn in layers:
        g = attn.gate_values  # (B, H)
        for h in range(attn.plan.syntax_heads):
            report_aux_metric(extra, f"gate_l{i}h{h}", g[:, h].float().sum(), g.size(0))


def report_nsd(extra: Dict, side: str, logits: torch.Tensor, labels: torch.Tensor, v_min: int, v_max: int,
               weights: Tuple[float, float]) -> None:
    """L_entdist (Ma et al. 2019, Eq. 20) as ``nsd_{side}_ce`` and L_dist (Eq. 19, normalised as in
    :func:`~syntrans.modules.nsd_layers.nsd_losses`) as ``nsd_{side}_dist``, per token with a value, each added to
    L_NMT with its weight (Eq. 17: both 1); and the % of gold values outside the model's range [v_min, v_max]
    (clipped) as ``nsd_{side}_clipped``. logits (B, T, V), labels (B, T); ``weights`` = (L_entdist weight, L_dist
    weight)."""
    ce, dist, count, clipped = nsd_losses(logits, labels, v_min, v_max)
    report_aux_loss(extra, f"nsd_{side}_ce", ce, count, weights[0])
    report_aux_loss(extra, f"nsd_{side}_dist", dist, count, weights[1])
    report_aux_metric(extra, f"nsd_{side}_clipped", 100.0 * clipped.float(), count)


def warn_clipped(clipped: int, side: str, v_min: int, v_max: int, training: bool) -> None:
    """NSD values outside the training range are clipped to it: say how many (at evaluation and generation)."""
    if clipped and not training:
        logger.warning(f"{clipped} {side} NSD value(s) outside the training range [{v_min}, {v_max}] clipped to it")
