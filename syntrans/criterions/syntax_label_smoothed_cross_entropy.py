"""``syntax_label_smoothed_cross_entropy``: label-smoothed CE plus the model's weighted auxiliary losses.

A model reports auxiliary losses in the extra dict of its output (``net_output[1]["aux_losses"]``,
see :func:`syntrans.modules.aux_losses.report_aux_loss`): per name a summed loss, the number of
items it sums over, and its weight λ. Each is normalised per item like fairseq's token-level losses
(its weight in the total is λ · sum · sample_size / items, so that after fairseq divides the total by
sample_size it contributes λ · mean), and logged under its own name as the mean per item (nats).
"""
from __future__ import annotations

import torch
from fairseq import metrics, utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)

_PREFIX = "aux:"


@register_criterion("syntax_label_smoothed_cross_entropy", dataclass=LabelSmoothedCrossEntropyCriterionConfig)
class SyntaxLabelSmoothedCrossEntropyCriterion(LabelSmoothedCrossEntropyCriterion):
    """Label-smoothed cross-entropy + Σ λ·aux (each auxiliary loss logged by name)."""

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        loss, nll_loss = self.compute_loss(model, net_output, sample, reduce=reduce)
        sample_size = sample["target"].size(0) if self.sentence_avg else sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        extra = net_output[1] if isinstance(net_output, (tuple, list)) and len(net_output) > 1 else None
        aux = (extra or {}).get("aux_losses") or {}
        for name, item in sorted(aux.items()):
            count = float(utils.item(item["ntokens"]))
            if count > 0:
                loss = loss + item["weight"] * item["loss"] * (sample_size / count)
            elif torch.is_tensor(item["loss"]) and item["loss"].requires_grad and bool(torch.isfinite(item["loss"])):
                # a batch without items (a sum over none) keeps the loss in the graph with weight 0: its parameters get
                # a zero gradient, which torch's DistributedDataParallel waits for from every process
                loss = loss + 0.0 * item["loss"]
            logging_output[f"{_PREFIX}{name}"] = item["loss"].data
            logging_output[f"{_PREFIX}{name}:n"] = count
        if aux:
            logging_output["loss"] = loss.data
        for name, item in sorted(((extra or {}).get("aux_metrics") or {}).items()):
            logging_output[f"{_PREFIX}{name}"] = utils.item(item["value"])
            logging_output[f"{_PREFIX}{name}:n"] = float(utils.item(item["ntokens"]))
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = utils.item(n_correct.data)
            logging_output["total"] = utils.item(total.data)
        return loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        names = sorted({k[len(_PREFIX):] for log in logging_outputs for k in log
                        if k.startswith(_PREFIX) and not k.endswith(":n")})
        for name in names:
            total = sum(utils.item(log.get(f"{_PREFIX}{name}", 0)) for log in logging_outputs)
            count = sum(log.get(f"{_PREFIX}{name}:n", 0) for log in logging_outputs)
            if count > 0:
                metrics.log_scalar(name, total / count, count, round=4)
