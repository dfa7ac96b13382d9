"""Training in two CPU processes through fairseq's own distributed code (gloo, ``--ddp-backend legacy_ddp``, and
torch's DistributedDataParallel through tests/torch_ddp_cpu.py; the launcher is tests/distributed.py): every method
trains; with dropout 0, two processes with one batch each end with the same model and the same logs as one process
with ``--update-freq 2`` (so every auxiliary loss and statistic is reduced across processes the way fairseq reduces
its loss), every method compared parameter for parameter in one of three models; frozen gates stay frozen under
gate warm-up, and constant gates train, under torch's DDP without --find-unused-parameters; shares of the data that
cannot train, or processes that read different data, are named instead of failing obscurely or hanging."""
import math
import re
import shutil

import pytest
import torch
from distributed import start_ranks, train_distributed
from helpers import build_task_and_model, metric_lines, run, tiny_train_argv

import syntrans  # noqa: F401  (allow-lists the checkpoint classes for torch's safe loader)
from syntrans.tasks.shard_checks import mismatch_error, share_error, share_note

pytestmark = pytest.mark.usefixtures("single_threaded_tools")  # conftest

DBSA = ("dbsa_src", "dbsa_src_uas", "dbsa_tgt", "dbsa_tgt_uas", "dbsa_tgt_later")
NSD = tuple(f"nsd_{side}_{name}" for side in ("src", "tgt") for name in ("ce", "dist", "clipped"))
GATES = tuple(f"gate_l{layer}h{h}" for layer in range(2) for h in range(2))  # 2 encoder layers × 2 syntax heads

# method: (its run, metrics of train_inner and valid lines, metrics of valid lines only). Every method trains in the
# run of COMBO below (one model holding all of them, in two processes; each 2-process run costs ~25 s on 2 cores), the
# gated preset with warm-up in the run of test_gate_warmup_in_two_processes
COMBO_GATES = ("gate_l0h0", "gate_l0h1")  # the gate of layer 0 over its distance-mask head and its PASCAL head
METHODS = {
    "distance": ("combo", (), ()),
    "pascal": ("combo", (), ()),
    "lisa": ("combo", ("lisa", "lisa_uas"), ()),
    "gated": ("combo", (), COMBO_GATES),
    "gated_warmup": ("warmup", (), GATES),
    "dbsa": ("combo", DBSA, ()),
    "syncattn": ("combo", DBSA + ("sync",), ()),
    "nsd_both_sides": ("combo", NSD, ()),
}

# one model with every auxiliary loss and statistic (LISA, DBSA both sides, SyncAttn, NSD both sides, a gate over a
# distance-mask head and a PASCAL head);
# no BatchNorm in the gate (its running statistics are per process, see docs/distributed.md). It trains on the
# small valid split (3 batches: the second update of each epoch has a dummy batch in one process) and validates
# on the train split, whose NSD values partly lie outside the range taken from the training split (clipped > 0)
COMBO = ["--arch", "syntax_transformer", "--distance-layers", "0", "--distance-heads", "1", "--pascal-layers", "0",
         "--pascal-heads", "1", "--gate-layers", "0",
         "--gate-hidden", "8", "--gate-no-batchnorm", "--lisa-layers", "1", "--dbsa-encoder-layers", "1",
         "--dbsa-decoder-layers", "0", "--sync-attn", "--sync-layer", "0", "--nsd-kind", "dD", "--nsd-src-output",
         "--nsd-tgt-input", "linear", "--nsd-tgt-output", "--weight-decay", "0.01",
         "--train-subset", "valid", "--valid-subset", "train", "--max-epoch", 2]
COMBO_METRICS = ("lisa", "lisa_uas") + DBSA + ("sync",) + NSD

# the gated preset with one epoch of gate warm-up and weight decay, across the end of warm-up (2 epochs of 13
# batches: 7 updates each, the last with a dummy batch); no syntax dropout (its random draws differ with the
# number of processes), the preset's gate BatchNorm kept
WARMUP_MODEL = ["--arch", "gated_distance_transformer_iwslt_de_en", "--distance-heads", "2", "--gate-hidden", "8",
                "--gate-syntax-dropout", "0", "--gate-warmup-epochs", "1"]
WARMUP = WARMUP_MODEL + ["--weight-decay", "0.01", "--max-epoch", 2]

# The one-process/two-process comparison of parameters is exact (README: bit for bit with dropout 0): each
# process's gradient is halved before the all-reduce and doubled after it, exact in binary floating point, a sum of
# two is the same in either order, and each batch's forward and backward run alone in one thread in both setups.
# The test compares every parameter with atol 0.
ATOL = 0.0
TIMING = {"wps", "ups", "wall", "train_wall"}  # train_inner keys that measure time
PER_STEP = {"wps", "wpb", "bsz"}  # valid keys that are means per step: one process takes more, smaller steps


def argv(data, save, *flags, last=()):
    """tiny_train_argv with lr 1e-3, a train_inner line per update, and a checkpoint per epoch; ``last`` after all
    (it may override tiny_train_argv's own flags, e.g. --max-tokens)."""
    out = tiny_train_argv(data, save, *flags, "--lr", "1e-3", "--log-interval", 1)
    return [a for a in out if a != "--no-epoch-checkpoints"] + list(last)


@pytest.fixture(scope="module")
def runs(tiny_data, tmp_path_factory):
    """(name, processes[, backend]) → (save dir, rank 0's log) of a run of ``flags``, each trained at most once per
    module: 2 processes (``--ddp-backend`` legacy_ddp, or pytorch_ddp: torch's DDP), or 1 process with
    --update-freq 2."""
    cache = {}

    def get(name, processes, flags, backend="legacy_ddp"):
        if (name, processes, backend) not in cache:
            save = tmp_path_factory.mktemp(f"{name}_{processes}p")
            if processes == 2:
                log = train_distributed(argv(tiny_data, save, *flags), backend=backend)
            else:
                log = run("fairseq-train", *argv(tiny_data, save, *flags, "--update-freq", 2))
            cache[name, processes, backend] = (save, log)
        return cache[name, processes, backend]

    return get


def load(path):
    return torch.load(path, map_location="cpu", weights_only=True)  # the safe loader (conftest)


def params(path):
    """The float tensors of a checkpoint's model without BatchNorm running statistics (each process keeps its own:
    legacy_ddp does not broadcast buffers; the checkpoint holds rank 0's)."""
    model = load(path)["model"]
    return {k: v for k, v in model.items() if v.is_floating_point() and not re.search(r"\.running_(mean|var)$", k)}


def assert_close(a, b, what):
    assert a.keys() == b.keys(), what
    worst = {k: (a[k] - b[k]).abs().max().item() for k in a}
    bad = {k: d for k, d in worst.items() if d > ATOL}
    assert not bad, f"{what}: parameters differ by more than {ATOL}: {sorted(bad.items(), key=lambda x: -x[1])[:5]}"


def inner_fields(line):
    """'epoch 001:      2 / 7' and the key=value pairs of a train_inner line, timing keys left out."""
    head = re.search(r"epoch \d+:\s+\d+ / \d+", line).group(0)
    return head, {k: v for k, v in re.findall(r"(\w+)=([^,\s]+)", line) if k not in TIMING}


def valid_fields(log):
    """key → printed value of each validation line ('valid on <subset> subset'), in order."""
    lines = [x for x in log.splitlines() if re.search(r"valid on '\w+' subset", x)]
    return [dict(re.findall(r"\| (\w+) ([^|\s]+)(?= \||$)", x)) for x in lines]


def same_printed(a: str, b: str) -> bool:
    """Equal to the digits printed (a flip of the last decimal from rounding allowed; integers exactly)."""
    decimals = max(len(x.partition(".")[2]) for x in (a, b))
    return a == b if not decimals else abs(float(a) - float(b)) <= 1.01 * 10.0 ** -decimals


def finite(line, key):
    m = re.search(rf"(?:^|[\s|,]){key}[= ]([-+0-9.eEnaif]+)", line)
    return m is not None and math.isfinite(float(m.group(1)))


# --- every method trains in two processes ---------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", list(METHODS))
def test_method_trains_in_two_processes(name, runs):
    key, both, valid_only = METHODS[name]
    if key == "warmup":  # 2 epochs of the training split
        (save, log), updates, split = runs("warmup", 2, WARMUP), None, "train"
    else:  # 2 epochs of the small valid split, 2 updates each
        (save, log), updates, split = runs("combo", 2, COMBO), 4, "valid"
    assert "distributed init (rank 0)" in log and "done training" in log, log[-3000:]
    # the validation lines of either run (COMBO validates on the train split: fairseq tags those lines "train")
    inner = metric_lines(log, "train_inner")
    valid = [line for line in log.splitlines() if re.search(r"valid on '\w+' subset", line)]
    assert inner and valid, log[-3000:]
    if updates:
        assert len(inner) == updates and f"num_updates={updates}," in inner[-1], inner[-1]
    for line in inner + valid:
        for key in ("loss", *both):
            assert finite(line, key), (key, line)
    for line in valid:
        for key in valid_only:
            assert finite(line, key), (key, line)
    # 13 train batches (3 valid ones) dealt to 2 processes: the short last step is named
    assert re.search(rf"split {split}: \d*[13579] batches over 2 processes: in the last step of each pass, process 1 "
                     r"runs fairseq's dummy batch", log), log[:5000]
    ckpt = load(save / "checkpoint_last.pt")
    assert ckpt["cfg"]["distributed_training"]["distributed_world_size"] == 2
    assert ckpt["model"] and all(torch.isfinite(v).all() for v in ckpt["model"].values() if v.is_floating_point())


# --- two processes = one process with --update-freq 2 ---------------------------------------------------------

@pytest.mark.slow
def test_two_processes_equal_one_with_update_freq_2(runs):
    (save1, log1), (save2, log2) = runs("combo", 1, COMBO), runs("combo", 2, COMBO)
    assert_close(params(save1 / "checkpoint_last.pt"), params(save2 / "checkpoint_last.pt"), "combo, 4 updates")

    inner1, inner2 = metric_lines(log1, "train_inner"), metric_lines(log2, "train_inner")
    assert len(inner1) == len(inner2) == 4, (inner1, inner2)
    for a, b in zip(inner1, inner2):
        assert inner_fields(a) == inner_fields(b), (a, b)
    assert all(key in inner_fields(inner2[-1])[1] for key in COMBO_METRICS), inner2[-1]

    # validation on 13 batches: one process logs 13 steps, two log 7 (the last with a dummy batch in one); each
    # statistic is weighted by its count, so the means agree to the digits printed
    valid1, valid2 = valid_fields(log1), valid_fields(log2)
    assert len(valid1) == len(valid2) == 2, (log1[-2000:], log2[-2000:])
    for v1, v2 in zip(valid1, valid2):
        assert v1.keys() == v2.keys() and set(COMBO_METRICS) | {"gate_l0h0", "loss"} <= v1.keys(), (v1, v2)
        differ = {k: (v1[k], v2[k]) for k in v1 if k not in PER_STEP and not same_printed(v1[k], v2[k])}
        assert not differ, differ
    assert float(valid2[-1]["nsd_src_clipped"]) > 0 and float(valid2[-1]["nsd_tgt_clipped"]) > 0, valid2[-1]


@pytest.mark.slow
def test_gate_warmup_in_two_processes(tiny_data, runs):
    """legacy_ddp gives frozen gates zero gradients; they must not move (weight decay, Adam's step count)."""
    (save1, log1), (save2, log2) = runs("warmup", 1, WARMUP), runs("warmup", 2, WARMUP)
    _, model = build_task_and_model(tiny_data, WARMUP_MODEL[1], *WARMUP_MODEL[2:], seed=3)  # fairseq-train's init
    init = {k: v for k, v in model.state_dict().items() if ".gate." in k and v.is_floating_point()
            and "running_" not in k}
    assert len(init) == 2 * 8  # 2 layers × fc1, LayerNorm, fc2, BatchNorm (weight, bias)
    epoch1, last = params(save2 / "checkpoint1.pt"), params(save2 / "checkpoint_last.pt")
    assert all(torch.equal(epoch1[k], init[k]) for k in init), "a frozen gate moved in warm-up"
    assert any(not torch.equal(last[k], init[k]) for k in init), "the gates did not train after warm-up"
    assert_close(params(save1 / "checkpoint1.pt"), epoch1, "end of warm-up (epoch 1)")
    assert_close(params(save1 / "checkpoint_last.pt"), last, "epoch 2 (gates trained)")
    inner1, inner2 = metric_lines(log1, "train_inner"), metric_lines(log2, "train_inner")
    assert len(inner1) == len(inner2) and [inner_fields(x) for x in inner1] == [inner_fields(x) for x in inner2]


# --- torch's DistributedDataParallel (fairseq's default on GPUs) without --find-unused-parameters ------------------

# the gated preset with constant gates (the gated paper's Table 6 "Pure"), across the epoch where warm-up would
# end: torch's DDP waits for a gradient of every parameter, so a gate network that no loss uses stops it. A
# LISA head with Hou et al.'s L2 loss in layer 1 (the one method COMBO and WARMUP leave out)
PURE = ["--arch", "gated_distance_transformer_iwslt_de_en", "--distance-heads", "2", "--gate-mode", "pure",
        "--gate-syntax-dropout", "0", "--gate-warmup-epochs", "1", "--lisa-layers", "1", "--lisa-loss", "l2",
        "--max-epoch", 2]


@pytest.mark.slow
def test_gate_warmup_under_torch_ddp(runs):
    """Frozen gates under torch's DDP: the zero tie gives them a gradient in warm-up, and after warm-up they train;
    the run equals one process with --update-freq 2 at the end of warm-up and after it (tests/torch_ddp_cpu.py:
    fairseq's own wrapping, minus the GPU device id)."""
    (save1, log1), (save2, log2) = runs("warmup", 1, WARMUP), runs("warmup", 2, WARMUP, "pytorch_ddp")
    assert "wrapped in torch's DistributedDataParallel (find_unused_parameters=False)" in log2, log2[:3000]
    assert_close(params(save1 / "checkpoint1.pt"), params(save2 / "checkpoint1.pt"), "torch DDP, end of warm-up")
    assert_close(params(save1 / "checkpoint_last.pt"), params(save2 / "checkpoint_last.pt"), "torch DDP, epoch 2")
    inner1, inner2 = metric_lines(log1, "train_inner"), metric_lines(log2, "train_inner")
    assert len(inner1) == len(inner2) == 14 and [inner_fields(x) for x in inner1] == [inner_fields(x) for x in inner2]


@pytest.mark.slow
def test_gate_warmup_under_torch_ddp_with_find_unused_parameters(runs):
    """With --find-unused-parameters torch finds the frozen gates itself and syntrans adds no tie (torch would
    refuse a second gradient): the same run as without the flag."""
    (save1, _), (save2, log2) = runs("warmup", 1, WARMUP), runs("warmup_unused", 2,
                                                                 [*WARMUP, "--find-unused-parameters"], "pytorch_ddp")
    assert "(find_unused_parameters=True)" in log2, log2[:3000]
    assert_close(params(save1 / "checkpoint_last.pt"), params(save2 / "checkpoint_last.pt"), "find-unused, epoch 2")


@pytest.mark.slow
def test_constant_gates_train_under_torch_ddp(runs):
    """--gate-mode pure under torch's DDP without --find-unused-parameters trains past the epoch where a warm-up
    would end (it stopped there with "Expected to have finished reduction" while the unused gate network existed)
    and equals one process with --update-freq 2."""
    (save1, log1), (save2, log2) = runs("pure", 1, PURE), runs("pure", 2, PURE, "pytorch_ddp")
    p1, p2 = params(save1 / "checkpoint_last.pt"), params(save2 / "checkpoint_last.pt")
    assert not any(".gate." in k for k in p2), sorted(k for k in p2 if ".gate." in k)
    assert_close(p1, p2, "pure gates and LISA-L2, torch DDP, epoch 2")
    inner1, inner2 = metric_lines(log1, "train_inner"), metric_lines(log2, "train_inner")
    assert len(inner2) == 14 and [inner_fields(x) for x in inner1] == [inner_fields(x) for x in inner2], log2[-3000:]
    assert all(finite(line, "lisa") for line in inner2), inner2[-1]


# --- shares of the data --------------------------------------------------------------------------------------

ONE_BATCH = ["--arch", "transformer", "--max-tokens", 100000, "--batch-size", 400, "--required-batch-size-multiple",
             1, "--max-update", 1]  # the whole train (and valid) split in one batch


@pytest.mark.slow
def test_fewer_batches_than_processes_trains_and_says_so(tiny_data, tmp_path):
    log = train_distributed(argv(tiny_data, tmp_path, last=ONE_BATCH))
    assert re.search(r"WARNING \| syntrans.task \| split train: 1 batch for 2 processes: no batch of their own for "
                     r"process 1", log), log[-3000:]
    inner, valid = metric_lines(log, "train_inner"), metric_lines(log, "valid")
    assert len(inner) == 1 and finite(inner[0], "loss") and valid and finite(valid[-1], "loss"), log[-3000:]


def assert_named(ranks, pattern):
    """Every rank stopped in time (no hang), and those that ended by themselves say ``pattern``."""
    assert not ranks.timed_out and not ranks.ok, ranks.report()
    ended = [r for r, stop in enumerate(ranks.stopped) if not stop]
    assert ended, ranks.report()
    for r in ended:
        assert ranks.returncodes[r] != 0 and re.search(pattern, ranks.stderr[r]), ranks.report()


@pytest.mark.slow
def test_skip_remainder_without_batches_is_named(tiny_data, tmp_path):
    ranks = start_ranks(argv(tiny_data, tmp_path, last=[*ONE_BATCH, "--skip-remainder-batch"]), timeout=120)
    assert_named(ranks, r"ValueError: split train: each of the 2 processes gets at most one of the 1 batch, and "
                        r"--skip-remainder-batch drops it")


@pytest.mark.slow
def test_processes_reading_different_data_are_named(tiny_data, tmp_path):
    """A node with another copy of the data (here: its train split is the valid one) is named before the
    processes' collectives stop matching (gloo aborts with a size mismatch; NCCL can wait for its timeout)."""
    other = tmp_path / "other"
    shutil.copytree(tiny_data, other)
    for f in other.glob("valid.*"):
        shutil.copy(f, other / f.name.replace("valid.", "train.", 1))
    common = argv(tiny_data, tmp_path / "save", "--arch", "transformer", "--max-update", 2)[1:]  # without the data
    ranks = start_ranks(common, rank_argv=[[tiny_data], [other]], timeout=120)
    assert_named(ranks, r"ValueError: split train: the 2 training processes read different data \(process 0: 300 "
                        r"sentences, \d+ tokens, \d+ batches; process 1: 40 sentences")


# --- the messages themselves (no training) ----------------------------------------------------------------------

@pytest.mark.fast
def test_share_messages():
    assert share_note("train", 12, 2) is None and share_note("train", 13, 1) is None
    level, text = share_note("train", 13, 4)
    assert level == 20 and "processes 1..3 run fairseq's dummy batch" in text
    level, text = share_note("valid", 2, 4)
    assert level == 30 and "no batch of their own for processes 2..3" in text
    assert share_error("train", 5, 2, skip_remainder=True) is None
    assert share_error("train", 4, 2, skip_remainder=False) is None
    assert "--skip-remainder-batch" in share_error("train", 4, 4, skip_remainder=True)
    assert mismatch_error("train", [[3, 9, 2], [3, 9, 2]]) is None
    assert "process 1: 3 sentences, 9 tokens, 1 batches" in mismatch_error("train", [[3, 9, 2], [3, 9, 1]])


# --- resuming ---------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_resume_in_two_processes(tiny_data, tmp_path):
    """A 2-process run resumes from its checkpoint_last.pt: rank 0 reads it and sends it to rank 1, which unpickles
    it with torch's safe loader (fairseq's tensor placeholders allow-listed), and training goes on from update 2."""
    flags = ["--arch", "transformer", "--max-epoch", 1]
    train_distributed(argv(tiny_data, tmp_path, *flags, "--max-update", 2))
    log = train_distributed(argv(tiny_data, tmp_path, *flags, "--max-update", 4))
    assert re.search(r"Loaded checkpoint \S*checkpoint_last\.pt \(epoch 1 @ 2 updates\)", log), log[-3000:]
    assert "num_updates=4" in log or re.search(r"num_updates 4\b", log), log[-3000:]
