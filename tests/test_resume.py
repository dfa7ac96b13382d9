"""Resuming from checkpoint_last.pt is exact: N updates in one fairseq-train run and the same N updates as N/2, a
stop, and a second fairseq-train on the same save dir with a larger --max-update end with bit-identical checkpoints
(every tensor of the model, BatchNorm running statistics included; Adam's state; the lr scheduler and the data
iterator) and log the same losses (every update's, every validation's, the epoch summaries), for every method, with
dropout, attention dropout and the gate's syntax dropout on and the stop in the middle of epoch 1; in one model the
end of epoch 1 and the end of the gate's warm-up come after the resume.

What fairseq does not make exact is named and pinned: a process resumed in epoch 2 or later (checkpoint_last.pt
written at or after the end of epoch 1) trains on batches grouped differently from the uninterrupted run's. fairseq
(0.12.3.1, as installed) builds the training batches once per process, from a permutation seeded with --seed + the
epoch the process starts in (``FairseqTask.get_batch_iterator``: ``numpy_seed(seed + epoch)`` around
``ordered_indices``) and keeps them for every later epoch (the iterator is cached; only the batch order is
reshuffled per epoch, from --seed + epoch). The permutation only breaks ties between sentences of the same (source,
target) lengths, so each step has a batch of the same shape and each epoch the same sentences, but sentences of
equal lengths trade batches."""
import re
import shutil

import pytest
import torch
from helpers import build_task_and_model, metric_lines, run, tiny_train_argv

import syntrans  # noqa: F401  (allow-lists the checkpoint classes for torch's safe loader)
from syntrans.models.config import model_config

pytestmark = pytest.mark.usefixtures("single_threaded_tools")  # conftest

DROPOUT = ["--dropout", 0.1, "--attention-dropout", 0.1]  # after SMALL, which switches both off
SAVE_EVERY = 5  # --save-interval-updates: a checkpoint (and a validation) every 5 updates, in both runs alike
EPOCH = 13  # updates per epoch of tiny_data's train split (300 sentences, --max-tokens 1000)

# Methods that can share a model share one (each fairseq-train costs 5-10 s). model: (flags after SMALL, N updates)
MODELS = {
    # NSD on both sides (the nsd_transformer_base preset); encoder layer 0: 1 distance-mask and 1 PASCAL head,
    # gated (BatchNorm, syntax dropout 0.4, frozen in epoch 1: warm-up ends after the resume); layer 1: a LISA (ce)
    # and a DBSA head; decoder layer 0: a DBSA head and SyncAttn's C. N = 20: the stop at update 10 lies in
    # epoch 1 (13 updates), the run ends at update 7 of epoch 2
    "combo": (["--arch", "nsd_transformer_base", "--distance-layers", 0, "--distance-heads", 1, "--pascal-layers", 0,
               "--pascal-heads", 1, "--gate-layers", 0, "--gate-hidden", 8, "--gate-warmup-epochs", 1,
               "--gate-syntax-dropout", 0.4, "--lisa-layers", 1, "--dbsa-encoder-layers", 1, "--dbsa-decoder-layers",
               0, "--sync-attn", "--sync-layer", 0], 20),
    # LISA with the l2 loss (a second model: --lisa-loss is one flag) in the gated preset: gates in every encoder
    # layer trained from update 1 (no warm-up), so the gates' Adam state and BatchNorm statistics are resumed;
    # the preset's syntax dropout 0.4. N = 10: stop at update 5, all in epoch 1
    "gated_lisa_l2": (["--arch", "gated_distance_transformer_iwslt_de_en", "--distance-heads", 2, "--gate-hidden", 8,
                       "--gate-warmup-epochs", 0, "--lisa-layers", 1, "--lisa-loss", "l2"], 10),
}
COMBO_METRICS = ("lisa", "lisa_uas", "dbsa_src", "dbsa_src_uas", "dbsa_tgt", "dbsa_tgt_uas", "dbsa_tgt_later", "sync",
                 "nsd_src_ce", "nsd_src_dist", "nsd_tgt_ce", "nsd_tgt_dist")
TIMING = {"wps", "ups", "wall", "train_wall"}  # logged keys that measure time


def argv(data, save, flags, max_update):
    """tiny_train_argv with ``flags``, dropout on, weight decay, lr 1e-3, a train_inner line per update."""
    return tiny_train_argv(data, save, *flags, *DROPOUT, "--weight-decay", 0.01, "--lr", "1e-3", "--log-interval", 1,
                           "--save-interval-updates", SAVE_EVERY, "--max-update", max_update)


@pytest.fixture(scope="module")
def runs(tiny_data, tmp_path_factory):
    """model → (straight save dir, its log, resumed save dir, [log of the first N/2 updates, log of the resume]),
    each model trained once per module."""
    cache = {}

    def get(name):
        if name not in cache:
            flags, n = MODELS[name]
            straight, resumed = tmp_path_factory.mktemp(f"{name}_straight"), tmp_path_factory.mktemp(f"{name}_resumed")
            log = run("fairseq-train", *argv(tiny_data, straight, flags, n))
            parts = [run("fairseq-train", *argv(tiny_data, resumed, flags, m)) for m in (n // 2, n)]
            cache[name] = straight, log, resumed, parts
        return cache[name]

    return get


def load(path):
    return torch.load(path, map_location="cpu", weights_only=True)  # the safe loader (conftest)


def fields(line):
    """The 'epoch 001:  5 / 13' (train_inner) or 'epoch 001' head of a metric line and its values as printed, the
    timing keys left out; train_inner lines print key=value, the others '| key value |'."""
    pairs = re.findall(r"(\w+)=([^,\s]+)", line) or re.findall(r"\| (\w+) ([^|\s]+)(?= \||$)", line)
    return re.search(r"epoch \d+(:\s+\d+ / \d+)?", line).group(0), {k: v for k, v in pairs if k not in TIMING}


def differences(a, b, path=""):
    """Paths where two nested checkpoint structures (dicts, lists, tensors, numbers) are not identical: tensors by
    torch.equal (same dtype, shape and every bit of value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a.keys() ^ b.keys(), key=str)}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        same = a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
        return [] if same else [f"{path}: {(a.double() - b.double()).abs().max().item() if a.shape == b.shape else ''}"]
    return [] if type(a) is type(b) and a == b else [f"{path}: {a!r} != {b!r}"]


# --- a resume in epoch 1 is exact ------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_resume_gives_identical_checkpoint(name, runs):
    straight, _, resumed, (_, second) = runs(name)
    n = MODELS[name][1]
    loaded = rf"Loaded checkpoint \S*checkpoint_last\.pt \(epoch 1 @ {n // 2} updates\)"
    assert re.search(loaded, second), second[-3000:]
    a, b = load(straight / "checkpoint_last.pt"), load(resumed / "checkpoint_last.pt")
    cfg = model_config(a["cfg"]["model"])  # the runs are what this file claims to test: dropout on everywhere
    assert cfg.dropout == cfg.attention_dropout == 0.1 and cfg.gate.syntax_dropout == 0.4, cfg
    assert any(k.endswith("bn.running_var") for k in a["model"]) and any(".gate.fc1." in k for k in a["model"])

    # every tensor of the model: parameters, BatchNorm running statistics (and num_batches_tracked), any buffer
    assert not differences(a["model"], b["model"]), differences(a["model"], b["model"])[:10]
    # Adam's state (step, exp_avg, exp_avg_sq per parameter; param_groups with lr and weight decay)
    opt = differences(a["last_optimizer_state"], b["last_optimizer_state"])
    assert not opt, opt[:10]
    # the last optimizer record: lr scheduler state, num_updates, names (the resumed run also keeps the record of
    # its first part, as fairseq appends one per process)
    assert not differences(a["optimizer_history"][-1], b["optimizer_history"][-1])
    assert len(b["optimizer_history"]) == 2 and b["optimizer_history"][0]["num_updates"] == n // 2
    # the data iterator's position, the last validation loss and the best one (previous_training_time is timing)
    for key in ("train_iterator", "val_loss", "best"):
        assert not differences(a["extra_state"][key], b["extra_state"][key]), key

    if name == "combo":  # the gate, frozen at the stop (warm-up), trained after the resume
        mid = load(resumed / "checkpoint_1_10.pt")["model"]
        gate = [k for k in mid if ".gate." in k and "running" not in k and "num_batches" not in k]
        assert len(gate) == 8 and all(not torch.equal(mid[k], b["model"][k]) for k in gate), gate
        assert a["extra_state"]["train_iterator"]["epoch"] == 2  # the epoch boundary lies after the resume


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_resume_logs_identical_losses(name, runs):
    _, log, _, parts = runs(name)
    n = MODELS[name][1]
    # every update: the straight run's line = the line of whichever part ran it (epoch/step, loss, nll_loss, each
    # method's loss and accuracy, gnorm, lr, wpb, bsz, num_updates)
    inner = [fields(x) for x in metric_lines(log, "train_inner")]
    split = [[fields(x) for x in metric_lines(p, "train_inner")] for p in parts]
    assert len(inner) == n and [len(x) for x in split] == [n // 2, n - n // 2], (len(inner), [len(x) for x in split])
    for i, (a, b) in enumerate(zip(inner, split[0] + split[1]), 1):
        assert a == b, (i, a, b)
    if name == "combo":
        assert all(k in inner[-1][1] for k in COMBO_METRICS), inner[-1]
    # validations (at the mid-run saves, the end of epoch 1 and the end): the same values, gates included
    valid = [fields(x) for x in metric_lines(log, "valid")]
    assert len(valid) >= 2 and valid == [fields(x) for p in parts for x in metric_lines(p, "valid")], valid
    assert any(k.startswith("gate_l") for k in valid[-1][1]), valid[-1]
    # epoch summaries: the resumed part's summary of epoch 1 covers updates before the stop too (fairseq restores
    # its meters from the checkpoint) and equals the straight run's; its last one is the partial epoch at the end
    train = [fields(x) for x in metric_lines(log, "train")]
    assert train == [fields(x) for x in metric_lines(parts[1], "train")], (train, metric_lines(parts[1], "train"))


# --- a resume in a later epoch is not: fairseq regroups the batches ---------------------------------------------

REGROUPING_GONE = ("a process resumed in epoch 2 now trains on the straight run's batches: fairseq (or the task) no "
                   "longer regroups them. Make this an exactness test and update docs/reproduce.md (Resuming) and "
                   "docs/commands.md")


@pytest.mark.slow
def test_resume_in_a_later_epoch_regroups_batches(tiny_data, runs, tmp_path):
    """The straight combo run's checkpoint of update 15 (epoch 2) as checkpoint_last.pt: fairseq-train resumes it
    with batches built for epoch 2 where the straight run kept those of epoch 1. The steps have the same shapes,
    the losses differ."""
    straight, log, _, _ = runs("combo")
    shutil.copy(straight / "checkpoint_2_15.pt", tmp_path / "checkpoint_last.pt")  # what fairseq wrote as last then
    later = run("fairseq-train", *argv(tiny_data, tmp_path, MODELS["combo"][0], 17))
    assert re.search(r"Loaded checkpoint \S*checkpoint_last\.pt \(epoch 2 @ 15 updates\)", later), later[-3000:]
    built = re.compile(r"creating new batches for epoch (\d+)")  # fairseq's line per split (train, valid)
    assert built.findall(log) == ["1", "1"], built.findall(log)  # once per process: epoch 2 reuses epoch 1's
    assert built.findall(later) == ["2", "1"], REGROUPING_GONE

    a = [fields(x) for x in metric_lines(log, "train_inner")[15:17]]
    b = [fields(x) for x in metric_lines(later, "train_inner")]
    assert [x[0] for x in a] == [x[0] for x in b] == ["epoch 002:      3 / 13", "epoch 002:      4 / 13"], (a, b)
    shape = ("bsz", "wpb", "lr", "num_updates")
    assert [[x[1][k] for k in shape] for x in a] == [[x[1][k] for k in shape] for x in b], (a, b)
    assert a[0][1]["loss"] != b[0][1]["loss"], REGROUPING_GONE
    p, q = load(straight / "checkpoint_last.pt")["model"], load(tmp_path / "checkpoint_last.pt")["model"]
    assert any(not torch.equal(p[k], q[k]) for k in p)
    # what does carry over is the schedule: past its warm-up (epoch 1) the gate trains from the first update after
    # the resume (fairseq's epoch counter, not one counted by the resumed process)
    start = load(straight / "checkpoint_2_15.pt")["model"]
    gate = [k for k in start if ".gate." in k and "running" not in k and "num_batches" not in k]
    assert len(gate) == 8 and all(not torch.equal(start[k], q[k]) for k in gate), "the gate is frozen after the resume"


@pytest.mark.fast
def test_batches_depend_on_the_epoch_they_are_built_in(tiny_data):
    """The reason, without training: fairseq's batches of the train split built in epoch 1 (an uninterrupted run
    keeps them) and in epoch 2 (a process resumed there), both in epoch 2's shuffled order, as fairseq-train
    builds them (--seed 3, --max-tokens 1000, --required-batch-size-multiple 8)."""
    task, _ = build_task_and_model(tiny_data, "transformer")
    task.load_dataset("train")
    ds = task.dataset("train")

    def batches(built_in):
        itr = task.get_batch_iterator(ds, max_tokens=1000, required_batch_size_multiple=8, seed=3, epoch=built_in,
                                      disable_iterator_cache=True)
        return [sorted(b.tolist()) for b in itr.ordered_batches(2, False, True)]  # (fix_batches_to_gpus, shuffle)

    kept, rebuilt = batches(1), batches(2)
    assert len(kept) == len(rebuilt) == EPOCH
    assert sorted(i for b in kept for i in b) == sorted(i for b in rebuilt for i in b) == list(range(len(ds)))

    def lengths(b):  # the (source, target) lengths of a batch's sentences
        return sorted(tuple(map(int, ds.size(i))) for i in b)

    assert [lengths(b) for b in kept] == [lengths(b) for b in rebuilt]  # each step: a batch of the same shape
    assert kept != rebuilt, REGROUPING_GONE  # but sentences of equal lengths trade batches
