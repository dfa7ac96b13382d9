"""``--cpu-autocast bf16`` of the syntax tasks (syntrans/tasks/cpu_autocast.py): the forward passes of training,
validation and generation under CPU autocast in bfloat16, the parameters and their gradients in float32; refused
on a GPU (fairseq's --amp is the way there) and for an unknown value."""
import pytest
import torch
from helpers import build_task_and_model, first_batch

from syntrans.tasks.cpu_autocast import check_cpu_autocast

ARCH = "pascal_transformer_iwslt_de_en"  # a method in the encoder: its heads run under autocast too


class Backward:
    """The one method of fairseq's optimizer wrapper that ``train_step`` calls."""

    def backward(self, loss):
        loss.backward()


def probe(seen):
    """A criterion that runs the model and records the dtype of its output logits (B, T, V) and whether CPU autocast
    was on; its loss is their sum in float32."""

    def criterion(model, sample):
        logits = model(**sample["net_input"])[0]
        seen.append((logits.dtype, torch.is_autocast_enabled("cpu")))
        return logits.float().logsumexp(-1).sum() / 1000, 1, {}

    return criterion


@pytest.mark.parametrize("mode, dtype", [("off", torch.float32), ("bf16", torch.bfloat16)])
def test_training_and_validation_forwards_run_in_the_asked_precision(tiny_data, mode, dtype):
    task, model = build_task_and_model(tiny_data, ARCH, "--cpu-autocast", mode)
    sample = first_batch(task, "valid", 4)
    seen = []
    loss, _, _ = task.train_step(sample, model, probe(seen), Backward(), 0)
    assert seen == [(dtype, mode == "bf16")] and loss.dtype == torch.float32
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(g.dtype == torch.float32 for g in grads)  # float32 parameters, float32 gradients
    assert all(p.dtype == torch.float32 for p in model.parameters())
    task.valid_step(sample, model, probe(seen))
    assert seen[1] == (dtype, mode == "bf16")
    assert not torch.is_autocast_enabled("cpu")  # nothing left switched on after the steps


def test_generation_runs_under_autocast_only_when_asked(tiny_data):
    class Generator:
        def generate(self, models, sample, **kwargs):
            return [torch.is_autocast_enabled("cpu")]

    for mode in ("off", "bf16"):
        task, model = build_task_and_model(tiny_data, ARCH, "--cpu-autocast", mode)
        assert task.inference_step(Generator(), [model], {}) == [mode == "bf16"]


def test_a_bf16_step_stays_close_to_the_float32_step(tiny_data):
    """The same model and batch: the autocast loss within bfloat16's precision of the float32 loss (8 bits of
    mantissa: a relative difference of a few parts in a thousand over the sum), not equal to it."""
    losses = []
    for mode in ("off", "bf16"):
        task, model = build_task_and_model(tiny_data, ARCH, "--cpu-autocast", mode, seed=3)
        losses.append(float(task.valid_step(first_batch(task, "valid", 8), model, probe([]))[0]))
    assert losses[0] != losses[1] and losses[1] == pytest.approx(losses[0], rel=2e-2)


def test_refused_on_a_gpu_and_for_an_unknown_value():
    check_cpu_autocast("bf16", on_cuda=False)
    check_cpu_autocast("off", on_cuda=True)
    with pytest.raises(ValueError, match="--cpu-autocast bf16 runs on the CPU.*--amp"):
        check_cpu_autocast("bf16", on_cuda=True)
    with pytest.raises(ValueError, match="expected one of off, bf16"):
        check_cpu_autocast("fp8", on_cuda=False)
