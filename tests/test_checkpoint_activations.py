"""fairseq's --checkpoint-activations (recompute each layer's activations in the backward pass) with every mechanism:
the same loss, auxiliary losses and gradients as without it, dropout and parent ignoring included (the random state
is replayed), and a gate's BatchNorm statistics updated once per step, not twice.

The layers' reports (a parent loss inside the attention, the kept attention SyncAttn reads) come back as outputs of
the checkpointed layer, so they keep their gradient: before the redesign LISA and DBSA refused the flag."""
import pytest
import torch
from helpers import build_task_and_model, first_batch

from syntrans.criterions.syntax_label_smoothed_cross_entropy import SyntaxLabelSmoothedCrossEntropyCriterion

DROPOUT = ["--dropout", "0.2", "--attention-dropout", "0.1"]
PRESETS = {
    "lisa": ("lisa_transformer_iwslt_de_en", []),
    "lisa_l2": ("lisa_transformer_iwslt_de_en", ["--lisa-loss", "l2"]),
    "dbsa": ("dbsa_transformer_wmt_en_de", ["--dbsa-heads", "2"]),
    "syncattn": ("syncattn_transformer_wmt_en_de", []),
    "pascal": ("pascal_transformer_iwslt_de_en", ["--pascal-ignore", "0.5"]),
    "gated": ("gated_distance_transformer_iwslt_de_en", ["--gate-warmup-epochs", "0", "--gate-syntax-dropout", "0.3",
                                                         "--distance-heads", "3", "--lisa-layers", "1"]),
    "nsd": ("nsd_transformer_base", ["--nsd-embed-dim", "8"]),
}


def step(task, model, sample, seed):
    """One training forward and backward: (loss, {name: aux loss}, {param: grad})."""
    crit = SyntaxLabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    model.train()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    loss, _, log = crit(model, sample)
    loss.backward()
    aux = {k: float(v) for k, v in log.items() if k.startswith("aux:") and not k.endswith(":n")}
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.item(), aux, grads


@pytest.mark.parametrize("name", list(PRESETS))
def test_same_loss_and_gradients_with_checkpointed_activations(tiny_data, name):
    arch, extra = PRESETS[name]
    task, plain = build_task_and_model(tiny_data, arch, *DROPOUT, *extra, seed=5)
    _, ckpt = build_task_and_model(tiny_data, arch, *DROPOUT, *extra, "--checkpoint-activations", seed=5)
    ckpt.load_state_dict(plain.state_dict())  # the same weights (building draws the same ones anyway)
    sample = first_batch(task, "train", 8)
    loss_a, aux_a, grads_a = step(task, plain, sample, seed=11)
    loss_b, aux_b, grads_b = step(task, ckpt, sample, seed=11)
    assert set(aux_a) == set(aux_b) and (aux_a or name == "pascal")  # every auxiliary loss, reported by both
    assert loss_b == pytest.approx(loss_a, rel=1e-6)
    for k in aux_a:
        assert aux_b[k] == pytest.approx(aux_a[k], rel=1e-6, abs=1e-6), k
    assert set(grads_a) == set(grads_b)
    for n in grads_a:
        torch.testing.assert_close(grads_b[n], grads_a[n], rtol=1e-5, atol=1e-7, msg=n)
    # the mechanisms' own parameters got their gradient through the checkpointed layers
    own = [n for n in grads_a if any(k in n for k in (".lisa.", ".q_proj.U", ".gate.", ".nsd."))]
    assert own or name in ("pascal", "lisa_l2")  # PASCAL and an l2 LISA head add no parameters
    assert all(grads_b[n].abs().sum() > 0 for n in own)


def test_batchnorm_statistics_move_once_per_step(tiny_data):
    """The gate's BatchNorm updates its running statistics in the first forward only, not again when the layer is
    recomputed: after one step both models hold the same running mean and variance."""
    arch, extra = PRESETS["gated"]
    task, plain = build_task_and_model(tiny_data, arch, *extra, seed=5)
    _, ckpt = build_task_and_model(tiny_data, arch, *extra, "--checkpoint-activations", seed=5)
    ckpt.load_state_dict(plain.state_dict())
    sample = first_batch(task, "train", 8)
    step(task, plain, sample, seed=1)
    step(task, ckpt, sample, seed=1)
    stats = {n: b for n, b in plain.named_buffers() if "running" in n or "num_batches" in n}
    assert stats, "the gated model has no BatchNorm statistics"
    ck = dict(ckpt.named_buffers())
    for n, b in stats.items():
        assert torch.equal(ck[n], b), n
    assert int(stats[next(n for n in stats if "num_batches" in n)]) == 1
