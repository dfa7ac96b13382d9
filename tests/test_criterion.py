"""The criterion's handling of auxiliary losses: per-item normalisation, and batches without items."""
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

from syntrans.criterions.syntax_label_smoothed_cross_entropy import SyntaxLabelSmoothedCrossEntropyCriterion

B, T, V = 2, 3, 5
TASK = SimpleNamespace(target_dictionary=SimpleNamespace(pad=lambda: 0))  # the targets below have no padding (0)


class TwoParamModel(nn.Module):
    """Logits from ``emb``; one auxiliary loss that only ``aux`` feeds, summed over the first ``count`` items."""

    def __init__(self, count):
        super().__init__()
        self.count = count
        self.emb = nn.Parameter(torch.randn(B, T, V))
        self.aux = nn.Parameter(torch.randn(4))

    def forward(self, **net_input):
        loss_sum = (self.aux[: self.count] ** 2).sum()  # a sum over `count` items (none when count is 0)
        return self.emb, {"aux_losses": {"x": {"loss": loss_sum, "ntokens": self.count, "weight": 0.5}}}

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        return torch.log_softmax(net_output[0], dim=-1)

    def get_targets(self, sample, net_output):
        return sample["target"]


def batch():
    return {"net_input": {}, "target": torch.tensor([[1, 2, 3], [4, 1, 2]]), "ntokens": B * T}


@pytest.mark.fast
def test_aux_loss_is_weighted_per_item():
    torch.manual_seed(0)
    model = TwoParamModel(count=2)
    crit = SyntaxLabelSmoothedCrossEntropyCriterion(TASK, sentence_avg=False, label_smoothing=0.0)
    loss, sample_size, log = crit(model, batch())
    ce = nn.functional.cross_entropy(model.emb.view(-1, V), batch()["target"].view(-1), reduction="sum")
    by_hand = ce + 0.5 * (model.aux[:2] ** 2).sum() * (sample_size / 2)
    assert loss.item() == pytest.approx(by_hand.item(), rel=1e-6)
    assert log["aux:x:n"] == 2.0


@pytest.mark.fast
def test_batch_without_items_gives_its_parameters_a_zero_gradient():
    """A batch with no item for an auxiliary loss adds nothing to the loss, but its parameters get a zero gradient
    rather than none: torch's DistributedDataParallel waits for a gradient of every parameter in every process."""
    torch.manual_seed(0)
    model = TwoParamModel(count=0)
    crit = SyntaxLabelSmoothedCrossEntropyCriterion(TASK, sentence_avg=False, label_smoothing=0.0)
    loss, _, log = crit(model, batch())
    ce = nn.functional.cross_entropy(model.emb.view(-1, V), batch()["target"].view(-1), reduction="sum")
    assert loss.item() == pytest.approx(ce.item(), rel=1e-6) and log["aux:x:n"] == 0.0
    loss.backward()
    assert model.aux.grad is not None and torch.equal(model.aux.grad, torch.zeros(4))
    assert model.emb.grad is not None and model.emb.grad.abs().sum() > 0
