"""Helpers shared by the test modules (``from helpers import …``): the tiny corpus builder, the small model, and
the fairseq command-line tools of the end-to-end tests. Fixtures live in conftest.py, which imports from here.

Importing this module imports neither syntrans nor fairseq nor torch: a test module that needs none of them (the
house rules) still collects while the package is broken."""
import importlib.util
import io
import logging
import os
import re
import subprocess
from pathlib import Path

from forkserver import shim_dir

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

#: the console scripts: fairseq-train, syntrans-translate, … (clients of the tests' fork server, forkserver.py, which
#: run the venv's scripts with torch and fairseq imported once; ``SYNTRANS_TEST_FORKSERVER=0``: the venv's own folder)
BIN = shim_dir()
# --user-dir for the fairseq tools: the package's folder, found without importing it
USER_DIR = os.path.dirname(importlib.util.find_spec("syntrans").origin)

SMALL = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
         "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4",
         "--decoder-attention-heads", "4", "--dropout", "0", "--attention-dropout", "0"]

N_TEST = 40  # sentences in the tiny_data test split
UPDATES = 4  # updates of a short_runs training run

NUM = r"([-+0-9.eE]+|nan|inf|-inf)"

#: the tolerance for scores fairseq-generate prints with 4 decimals (positional scores, P- lines): the same score
#: computed in another floating-point order can round to the neighbouring printed value, one step (1e-4) away, and
#: float parsing puts that step a hair above 1e-4; half a step more is the computation's own noise. Never 1e-4 itself:
#: a rounding boundary crossed would fail the test by chance.
PRINTED_4DP = 1.5e-4


def make_bpe_corpus(root: Path, sizes=None, merges: int = 200, seed: int = 1) -> Path:
    """synth corpus → joint subword-nmt BPE → syntrans-preprocess; returns the data-bin directory."""
    from subword_nmt.apply_bpe import BPE
    from subword_nmt.learn_bpe import learn_bpe

    from syntrans.cli.preprocess import main as preprocess
    from syntrans.synth import write_corpus

    sizes = sizes or {"train": 300, "valid": 40, "test": 40}
    raw = root / "raw"
    write_corpus(str(raw), sizes, seed)
    text = (raw / "train.src").read_text() + (raw / "train.tgt").read_text()
    codes = io.StringIO()
    learn_bpe(io.StringIO(text), codes, merges)
    (root / "bpe.codes").write_text(codes.getvalue())  # the codes, kept for syntrans-translate
    codes.seek(0)
    bpe = BPE(codes)
    for split in sizes:
        for lang in ("src", "tgt"):
            lines = (raw / f"{split}.{lang}").read_text().splitlines()
            (root / f"{split}.bpe.{lang}").write_text("".join(bpe.process_line(x) + "\n" for x in lines))
    dest = root / "data-bin"
    argv = ["-s", "src", "-t", "tgt", "--joined-dictionary", "--destdir", str(dest)]
    for split in sizes:
        argv += [f"--{split}pref", str(root / f"{split}.bpe"), f"--{split}parse", str(raw / split)]
    assert preprocess(argv) == 0
    return dest


# what puts a test into the slow tier (pytest.mark.slow; conftest checks it): a process that trains, translates,
# scores, installs or runs the demo
SLOW_TOOLS = ("fairseq-train", "fairseq-generate", "fairseq-validate", "fairseq-interactive", "fairseq-hydra-train",
              "syntrans-translate", "syntrans-reproduce", "syntrans-benchmark",
              "torch_ddp_cpu.py", "demo.sh", "gpu_check.sh", "train_with_config.sh")
SLOW_MODULES = ("venv", "pip", "build", "twine")  # python -m …


def slow_command(args) -> str:
    """The name of the slow tool ``args`` (a Popen argument list or string) starts, or '' when it starts none."""
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else str(args).split()
    if "--help" in argv or "-h" in argv:  # a command's help trains nothing
        return ""
    names = [os.path.basename(a) for a in argv[:3]]
    for name in names:
        if name in SLOW_TOOLS:
            return name
    if len(argv) >= 3 and argv[1] == "-m" and argv[2] in SLOW_MODULES:
        return f"python -m {argv[2]}"
    return ""


def lisa_attachments(model, sample):
    """(hits, tokens with a parent) of the model's LISA head on ``sample``, counted here: the argmax key of the head's
    recorded attention row against the gold parent (the batch's src_parent_first, -1 where none)."""
    import torch

    from syntrans.modules.attention_record import record_attention

    (layer,) = [i for i, x in enumerate(model.encoder.layers) if hasattr(x.self_attn, "lisa")]
    head = model.encoder.layers[layer].self_attn.lisa.heads.start
    with torch.no_grad(), record_attention(model) as probs:
        model(**sample["net_input"])
    gold = sample["net_input"]["src_parent_first"]  # (B, T)
    guess = probs[("encoder", layer)][:, head].argmax(-1)  # (B, T)
    has = gold >= 0
    return int((guess == gold)[has].sum()), int(has.sum())


def build_task_and_model(data: Path, arch: str, *extra: str, seed: int = 1):
    """The syntax_translation task on ``data`` and a small model of ``arch`` built the way fairseq-train does."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    import syntrans

    user_dir = os.path.dirname(syntrans.__file__)
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(data), "--user-dir", user_dir, "--task", "syntax_translation",
                                                "--arch", arch, *SMALL, *extra])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(seed)
    model = task.build_model(cfg.model)
    return task, model


def first_batch(task, split: str, n: int) -> dict:
    """The first ``n`` sentences of ``split`` (loaded here) collated into one batch, as fairseq would batch them."""
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in range(n)])


def run(tool, *args):
    """Run the venv's console script ``tool``; asserts it succeeded and returns its stdout + stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONWARNINGS"] = "ignore"
    p = subprocess.run([str(BIN / tool), *map(str, args)], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, f"{tool} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout + p.stderr


def tiny_train_argv(data, save, *extra, seed=3):
    """fairseq-train flags of the end-to-end tests: the SMALL model, our criterion (label smoothing 0.1), Adam,
    1000-token batches; ``extra`` after SMALL, so it may override the size."""
    return [data, "--user-dir", USER_DIR, "--task", "syntax_translation", *SMALL, *extra,
            "--criterion", "syntax_label_smoothed_cross_entropy", "--label-smoothing", "0.1", "--optimizer", "adam",
            "--max-tokens", "1000", "--save-dir", save, "--no-epoch-checkpoints", "--num-workers", "0",
            "--log-format", "simple", "--seed", seed]


def short_runs(data, tmp_path_factory, flags_of):
    """name → (checkpoint_last.pt, training log) of a run of UPDATES updates (lr 1e-3, one epoch at most, one
    validation at the end) with ``flags_of(name)``; each name trained at most once."""
    cache = {}

    def get(name):
        if name not in cache:
            save = tmp_path_factory.mktemp(name)
            log = run("fairseq-train", *tiny_train_argv(data, save, *flags_of(name), "--lr", "1e-3", "--max-epoch", "1",
                                                        "--max-update", UPDATES, "--validate-interval-updates", UPDATES,
                                                        "--log-interval", "1"))
            cache[name] = (save / "checkpoint_last.pt", log)
        return cache[name]

    return get


def metric_lines(log, kind):
    """Lines of ``kind``: 'train_inner' (per update), 'train' (epoch summary) or 'valid'."""
    pattern = {"train_inner": r"\| train_inner \|", "train": r"\| train \|", "valid": r"\| valid \|"}[kind]
    return [line for line in log.splitlines() if re.search(pattern, line)]


def metric(line, name):
    """The value of ``name`` in a simple-format log line ('name=v,' in train_inner, '| name v |' otherwise)."""
    m = re.search(rf"(?:^|[\s|,]){re.escape(name)}[= ]{NUM}(?=[,\s|]|$)", line)
    return None if m is None else float(m.group(1))


def corpus_bleu4(hypotheses, references) -> dict:
    """Corpus BLEU-4 of whitespace-tokenized strings, computed here from its definition (Papineni et al. 2002): clipped
    n-gram precisions p_n for n = 1..4, their geometric mean (0 when one is 0, no smoothing), the brevity penalty BP;
    returns ``bleu`` (× 100), ``precisions`` (× 100), ``bp``, ``ratio`` (hypothesis/reference length), ``syslen``,
    ``reflen``. A reference's ``<unk>`` matches nothing, as in fairseq-generate's default scorer (``bleu``)."""
    from collections import Counter
    from math import exp, log

    match, total, hyp_len, ref_len = [0] * 4, [0] * 4, 0, 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        h, r = hyp.split(), ref.split()
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, 5):
            hn = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
            rn = Counter(g for g in (tuple(r[i:i + n]) for i in range(len(r) - n + 1)) if "<unk>" not in g)
            match[n - 1] += sum(min(c, rn[g]) for g, c in hn.items())
            total[n - 1] += max(len(h) - n + 1, 0)
    precisions = [100.0 * m / t if t else 0.0 for m, t in zip(match, total)]
    bp = min(1.0, exp(1 - ref_len / hyp_len)) if hyp_len else 0.0
    bleu = 0.0 if min(match) == 0 else 100.0 * bp * exp(sum(log(m / t) for m, t in zip(match, total)) / 4)
    return {"bleu": bleu, "precisions": precisions, "bp": bp, "ratio": hyp_len / ref_len, "syslen": hyp_len,
            "reflen": ref_len}


def check_generate_bleu(out) -> dict:
    """fairseq-generate's printed 'BLEU4 = b, p1/p2/p3/p4 (BP=…, ratio=…, syslen=…, reflen=…)' equals, to its printed
    digits, :func:`corpus_bleu4` of its own T-/H- lines (a check of the score, and of the lines against it); returns
    the computed values."""
    m = re.search(r"Generate \w+ with beam=\d+: BLEU4 = ([0-9.]+), ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) "
                  r"\(BP=([0-9.]+), ratio=([0-9.]+), syslen=(\d+), reflen=(\d+)\)", out)
    assert m, out[-2000:]
    refs = dict(re.findall(r"^T-(\d+)\t(.*)$", out, flags=re.M))
    hyps = {i: text for i, _score, text in re.findall(r"^H-(\d+)\t(\S+)\t(.*)$", out, flags=re.M)}
    assert refs and refs.keys() == hyps.keys(), out[-2000:]
    ids = sorted(refs, key=int)
    ours = corpus_bleu4([hyps[i] for i in ids], [refs[i] for i in ids])
    printed = [float(x) for x in m.groups()]
    assert (int(printed[7]), int(printed[8])) == (ours["syslen"], ours["reflen"]), (m.group(0), ours)
    # lengths, brevity penalty and unigram precision to the printed digits; fairseq's own n-gram counter (libbleu)
    # clips longer n-grams a little differently from the definition (measured: bigram precision 25.3 against 25.19,
    # BLEU 11.17 against 11.16 on one run), so the higher orders and BLEU agree within 0.2
    assert abs(printed[5] - ours["bp"]) <= 5.1e-4 and abs(printed[6] - ours["ratio"]) <= 5.1e-4, (m.group(0), ours)
    assert abs(printed[1] - ours["precisions"][0]) <= 0.051, (m.group(0), ours)
    assert all(abs(a - b) <= 0.2 for a, b in zip(printed[2:5], ours["precisions"][1:])), (m.group(0), ours)
    assert abs(printed[0] - ours["bleu"]) <= 0.2, (m.group(0), ours)
    return ours


def generate(data, ckpt, *extra):
    """fairseq-generate on the test split of ``data`` with ``ckpt`` (beam 3, BPE removed); returns its output."""
    return run("fairseq-generate", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", ckpt,
               "--gen-subset", "test", "--beam", "3", "--batch-size", "16", "--remove-bpe", "--num-workers", "0", *extra)


def syntax_attention(embed, heads, blocks=(), mixer=None, dropout=0.0, seed=0, train=False):
    """A :class:`SyntaxMultiheadAttention` (self-attention) with these head blocks (in head order) and mixer, its
    weights drawn from ``seed``, in eval mode unless ``train``."""
    import torch

    from syntrans.modules.syntax_attention import SyntaxMultiheadAttention

    torch.manual_seed(seed)
    attn = SyntaxMultiheadAttention(embed, heads, dropout=dropout, self_attention=True, blocks=list(blocks), mixer=mixer)
    return attn.train(train)


def side_inputs(pad, keep=(), backend="auto", **data):
    """One side's syntax inputs: ``data`` by mechanism key (e.g. ``lisa=parents``), ``keep``, ``backend``."""
    from syntrans.modules.blocks import SideInputs

    return SideInputs(pad_mask=pad, data=data, keep=frozenset(keep), backend=backend)


def logged(fn, names, fmt="| {record.name} | {message}") -> str:
    """What the loggers ``names`` log at INFO while ``fn`` runs, one ``fmt`` line per record (``record``, and
    ``message`` its text); the loggers' levels are restored after."""
    lines = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: lines.append(fmt.format(record=record, message=record.getMessage()))
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
    try:
        fn()
    finally:
        for lg, level in zip(loggers, levels):
            lg.removeHandler(handler)
            lg.setLevel(level)
    return "\n".join(lines)
