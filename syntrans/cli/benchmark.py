"""``syntrans-benchmark``: speed and memory of every syntax preset against the vanilla Transformer.

Models: fairseq's stock ``transformer`` (the reference, "vanilla") and every architecture preset
registered for the ``syntax_transformer`` model except the plain ``syntax_transformer`` arch (found
in fairseq's registry, so later presets are benchmarked without touching this file). All are built
at the same dimensions (``--layers/--dim/--heads/--ffn`` override the presets' sizes), with the
presets' own dropout, from the same seed, by the ``syntax_translation`` task, and all run on the same
list of batches, collated once with every syntax feature any model asks for; each model is handed
only the ``net_input`` keys it reads (tokens, lengths, previous output tokens and its own
``syntax_features()``).

Measured for every model, on CPU (one torch thread unless ``--threads``) and (when available) CUDA, in
one process, interleaving the models inside each repetition (``for rep: for model: …``, the order
rotated every repetition) and taking the median over repetitions:

* training tokens/s: forward + backward + Adam step through ``syntax_label_smoothed_cross_entropy``
  over ``--batches`` training batches after ``--warmup`` untimed ones (target tokens, ``ntokens``);
* generation tokens/s: fairseq's ``SequenceGenerator`` (beam ``--beam``) over ``--gen-batches`` test
  batches, counting the tokens of the best hypothesis of each sentence (EOS included, as
  fairseq-generate does). Generation uses a copy of each model taken before any training step, so it
  is identical in every repetition; untrained models rarely stop early, so hypotheses mostly run to
  ``max_len_a · src_len + max_len_b`` and the lengths are reported with the speeds;
* peak memory of one training step (see :data:`MEMORY_METHOD`).

Every number is also given as a ratio to vanilla measured in the same run. The stock ``transformer``
has attention dropout 0 while the presets have their own rates, and attention dropout alone costs
time and memory; so, unless ``--no-matched-vanilla``, each preset whose dropout rates differ from the
stock ones is compared with the stock ``transformer`` run at the preset's dropout, attention dropout
and activation dropout (an extra reference row, e.g. ``transformer[dropout=0.3,attn=0.2,act=0]``):
only the syntax mechanism differs between a preset and its reference. Ratios against the stock
``transformer`` are reported as well. Targets (from the issue, for the distance-mask presets) are
printed next to the ratios with ✓/✗; a miss never changes the exit status: speed is reported, never
asserted.

Sidecar timing: on the same corpus, fairseq's binarization (``fairseq_cli.preprocess.main``, the
first phase of ``syntrans-preprocess``, one worker) against building the syntax sidecars of the same
splits and sides (``build_side``, its second phase), as the ratio sidecars / fairseq.

Corpus: Multi30k en→de from ``../shared/data/multi30k`` when present (Moses-tokenized with sacremoses,
joint subword-nmt BPE learnt on its train split, parsed with the model-free right-branching parser,
since no stanza model is available), else the built-in synthetic corpus with its gold parses.
Prepared text and binarized data are cached under ``--work-dir`` (default ``bench/``).
"""
from __future__ import annotations

import argparse
import copy
import io
import json
import logging
import math
import os
import shutil
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

VANILLA = "transformer"
SYNTAX_MODEL = "syntax_transformer"

#: Targets of the issue for the distance-mask presets, keyed by arch-name prefix:
#: (minimum train ratio, minimum generation ratio, maximum memory ratio). Sidecars: ≤ SIDECAR_TARGET.
TARGETS: Dict[str, Tuple[float, float, float]] = {"distance_": (0.97, 0.97, 1.05)}
SIDECAR_TARGET = 1.0

MEMORY_METHOD = {
    "cpu": ("peak tensor memory of one training step (forward, backward, Adam step) on the largest timed batch, "
            "the same batch for every model = bytes held before the step (distinct storages of the model's "
            "parameters, buffers and tensors kept as module attributes, its Adam state and the batch) + the "
            "highest net amount allocated during the step, summed in time order from the CPU allocator's "
            "allocation/free events recorded by torch.profiler (profile_memory=True). One recorded step runs "
            "first so that state kept between steps is tracked; the check 'net change over the step = the "
            "new gradients' is reported as a residual (0 = exact accounting). Deterministic: independent of "
            "other processes and of allocator caching"),
    "cuda": ("peak of one training step (forward, backward, Adam step) on the largest timed batch after one "
             "untimed step on it = bytes held by this model before the step (as on CPU) + "
             "torch.cuda.max_memory_allocated() − torch.cuda.memory_allocated() around the step (peak stats "
             "reset right before it, so the other models resident on the GPU are not counted)"),
}

QUICK = dict(layers=2, dim=64, heads=4, ffn=128, batches=2, warmup=1, reps=2, max_tokens=512, gen_batches=1,
             gen_batch_size=8, beam=2, synth_train=200, synth_test=24, max_len_b=5, sidecar_reps=1)
DEFAULTS = dict(layers=6, dim=256, heads=4, ffn=1024, batches=6, warmup=1, reps=4, max_tokens=2048, gen_batches=2,
                gen_batch_size=32, beam=4, synth_train=10000, synth_test=500, max_len_b=10, sidecar_reps=3)


def say(msg: str) -> None:
    print(f"[benchmark] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------- options

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="syntrans-benchmark",
        description="Training/generation speed and peak memory of every syntax_transformer preset against the "
                    "vanilla fairseq Transformer, and syntax-sidecar building time against fairseq binarization.")
    p.add_argument("--device", choices=("cpu", "cuda", "all"), default=None,
                   help="where to measure (default: cpu, plus cuda when available; all = the same)")
    p.add_argument("--archs", default=None,
                   help="comma-separated subset of the syntax presets (default: every registered preset)")
    g = p.add_argument_group("model size (identical for every model)")
    g.add_argument("--layers", type=int, help=f"encoder and decoder layers (default {DEFAULTS['layers']})")
    g.add_argument("--dim", type=int, help=f"embedding dimension (default {DEFAULTS['dim']})")
    g.add_argument("--heads", type=int, help=f"attention heads (default {DEFAULTS['heads']})")
    g.add_argument("--ffn", type=int, help=f"feed-forward dimension (default {DEFAULTS['ffn']})")
    g = p.add_argument_group("measurement")
    g.add_argument("--batches", type=int, help=f"timed training batches per repetition (default {DEFAULTS['batches']})")
    g.add_argument("--warmup", type=int, help=f"untimed training batches before them (default {DEFAULTS['warmup']})")
    g.add_argument("--reps", type=int, help=f"repetitions, models interleaved; the median is kept (default {DEFAULTS['reps']})")
    g.add_argument("--max-tokens", type=int, help=f"tokens per training batch (default {DEFAULTS['max_tokens']})")
    g.add_argument("--gen-batches", type=int, help=f"test batches decoded per repetition (default {DEFAULTS['gen_batches']})")
    g.add_argument("--gen-batch-size", type=int, help=f"sentences per test batch (default {DEFAULTS['gen_batch_size']})")
    g.add_argument("--beam", type=int, help=f"beam size (default {DEFAULTS['beam']})")
    g.add_argument("--max-len-a", type=float, default=1.2, help="generate at most a·src_len + b tokens (default a=1.2)")
    g.add_argument("--max-len-b", type=int, help=f"… and b (default {DEFAULTS['max_len_b']})")
    g.add_argument("--lr", type=float, default=5e-4, help="Adam learning rate (default 5e-4)")
    g.add_argument("--no-matched-vanilla", action="store_true",
                   help="take every ratio against the stock transformer, even for presets whose dropout rates "
                        "differ from its own (by default such a preset is compared with the stock transformer "
                        "run at the preset's dropout rates, so that only the syntax mechanism differs)")
    g.add_argument("--seed", type=int, default=1, help="seed of every model, batch order and dropout (default 1)")
    g.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: reproducible on a shared machine, where more threads than "
                        "free cores make timings erratic; 0 = torch's default)")
    g.add_argument("--quick", action="store_true",
                   help="tiny settings (2+2 layers of 64, 2 batches, tiny synthetic corpus): a smoke test")
    g = p.add_argument_group("data")
    g.add_argument("--corpus", choices=("auto", "multi30k", "synth"), default="auto",
                   help="auto (default): Multi30k when --multi30k-dir exists, else the synthetic corpus")
    g.add_argument("--multi30k-dir", default=None,
                   help="raw Multi30k (train/test_2016_flickr .en/.de; default ../shared/data/multi30k)")
    g.add_argument("--bpe-merges", type=int, default=None, help="BPE merges (default 2000 Multi30k, 500 synthetic)")
    g.add_argument("--work-dir", default="bench", help="cache of prepared data (default bench/)")
    g.add_argument("--no-sidecars", action="store_true", help="skip the sidecar timing")
    g.add_argument("--sidecar-reps", type=int, help=f"repetitions of the sidecar timing, median kept "
                                                    f"(default {DEFAULTS['sidecar_reps']})")
    g = p.add_argument_group("output")
    g.add_argument("--out", default=None, help="also write the Markdown report to this file")
    g.add_argument("--json", default=None, help="write all measurements as JSON to this file")
    g.add_argument("--verbose", action="store_true", help="keep fairseq's INFO logging")
    return p


def resolve(args) -> argparse.Namespace:
    base = QUICK if args.quick else DEFAULTS
    for k, v in base.items():
        if getattr(args, k, None) is None:
            setattr(args, k, v)
    for k in ("layers", "dim", "heads", "ffn", "batches", "reps", "max_tokens", "gen_batches", "gen_batch_size", "beam",
              "sidecar_reps"):
        if getattr(args, k) < 1:
            raise SystemExit(f"syntrans-benchmark: error: --{k.replace('_', '-')} must be ≥ 1")
    if args.warmup < 0:
        raise SystemExit("syntrans-benchmark: error: --warmup must be ≥ 0")
    if args.dim % args.heads:
        raise SystemExit(f"syntrans-benchmark: error: --dim {args.dim} is not divisible by --heads {args.heads}")
    return args


# ------------------------------------------------------------------------------------------- corpus

@dataclass
class Corpus:
    name: str
    description: str
    root: Path
    src: str
    tgt: str
    splits: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # split → (BPE text prefix, parse prefix)

    @property
    def data_bin(self) -> Path:
        return self.root / "data-bin"


def _default_multi30k() -> Optional[Path]:
    here = Path(__file__).resolve().parents[2]
    for cand in (Path.cwd().parent / "shared" / "data" / "multi30k", here.parent / "shared" / "data" / "multi30k"):
        if (cand / "train.en").exists():
            return cand
    return None


def _stamp_ok(path: Path, config: dict) -> bool:
    try:
        return json.loads(path.read_text()) == config
    except (OSError, ValueError):
        return False


def _learn_and_apply_bpe(train_texts: List[str], merges: int, jobs: List[Tuple[str, Path]]) -> None:
    """Joint subword-nmt BPE learnt on ``train_texts`` (file paths), applied to each (input, output)."""
    from subword_nmt.apply_bpe import BPE
    from subword_nmt.learn_bpe import learn_bpe

    text = "".join(Path(t).read_text(encoding="utf-8") for t in train_texts)
    codes = io.StringIO()
    learn_bpe(io.StringIO(text), codes, merges)
    codes.seek(0)
    bpe = BPE(codes)
    for src, out in jobs:
        lines = Path(src).read_text(encoding="utf-8").splitlines()
        out.write_text("".join(bpe.process_line(x) + "\n" for x in lines), encoding="utf-8")


def prepare_synth(args, root: Path) -> Corpus:
    from ..synth import write_corpus

    merges = args.bpe_merges or 500
    sizes = {"train": args.synth_train, "test": args.synth_test}
    config = {"corpus": "synth", "sizes": sizes, "seed": 1, "merges": merges, "version": 1}
    raw = root / "raw"
    corpus = Corpus("synth", f"synthetic (syntrans.synth, seed 1, {sizes['train']} train / {sizes['test']} test "
                             f"sentences, gold parses, joint BPE {merges} merges)", root, "src", "tgt")
    for split in sizes:
        corpus.splits[split] = (str(root / f"{split}.bpe"), str(raw / split))
    stamp = root / "prepared.json"
    if _stamp_ok(stamp, config):
        return corpus
    say(f"preparing the synthetic corpus in {root}")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    write_corpus(str(raw), sizes, 1)
    _learn_and_apply_bpe([str(raw / "train.src"), str(raw / "train.tgt")], merges,
                         [(str(raw / f"{s}.{lang}"), root / f"{s}.bpe.{lang}") for s in sizes for lang in ("src", "tgt")])
    stamp.write_text(json.dumps(config))
    return corpus


def prepare_multi30k(args, root: Path, raw_dir: Path) -> Corpus:
    from sacremoses import MosesTokenizer

    from ..parsing.trivial import trivial_parse
    from ..syntax.parsed import write_conllu

    merges = args.bpe_merges or 2000
    files = {"train": "train", "test": "test_2016_flickr"}
    config = {"corpus": "multi30k", "raw": str(raw_dir.resolve()), "merges": merges, "parser": "right-branching",
              "version": 1}
    src, tgt = "en", "de"
    corpus = Corpus("multi30k", f"Multi30k {src}→{tgt} ({raw_dir}; train 29,000 / test_2016_flickr 1,000 lines; "
                                f"sacremoses tokenization, joint BPE {merges} merges, right-branching trivial parses)",
                    root, src, tgt)
    for split in files:
        corpus.splits[split] = (str(root / f"{split}.bpe"), str(root / "tok" / split))
    stamp = root / "prepared.json"
    if _stamp_ok(stamp, config):
        return corpus
    say(f"preparing Multi30k in {root} (tokenize, BPE, right-branching parses; cached for later runs)")
    shutil.rmtree(root, ignore_errors=True)
    (root / "tok").mkdir(parents=True)
    for lang in (src, tgt):
        mt = MosesTokenizer(lang=lang)
        for split, name in files.items():
            lines = (raw_dir / f"{name}.{lang}").read_text(encoding="utf-8").splitlines()
            toks = [mt.tokenize(line, escape=False) for line in lines]
            base = root / "tok" / f"{split}.{lang}"
            base.write_text("".join(" ".join(t) + "\n" for t in toks), encoding="utf-8")
            write_conllu(f"{base}.conllu",
                         [trivial_parse(t, "right-branching", line=k) for k, t in enumerate(toks, 1) if t])
    _learn_and_apply_bpe([str(root / "tok" / f"train.{src}"), str(root / "tok" / f"train.{tgt}")], merges,
                         [(str(root / "tok" / f"{s}.{lang}"), root / f"{s}.bpe.{lang}")
                          for s in files for lang in (src, tgt)])
    stamp.write_text(json.dumps(config))
    return corpus


def prepare_corpus(args) -> Corpus:
    work = Path(args.work_dir)
    m30k = Path(args.multi30k_dir) if args.multi30k_dir else _default_multi30k()
    use_m30k = args.corpus == "multi30k" or (args.corpus == "auto" and not args.quick and m30k is not None
                                              and (m30k / "train.en").exists())
    if use_m30k:
        if m30k is None or not (m30k / "train.en").exists():
            raise SystemExit(f"syntrans-benchmark: error: no Multi30k at {m30k or '../shared/data/multi30k'}")
        return prepare_multi30k(args, work / "multi30k", m30k)
    name = "synth-quick" if args.quick else "synth"
    return prepare_synth(args, work / name)


def _fairseq_preprocess(corpus: Corpus, dest: Path) -> None:
    from fairseq import options
    from fairseq_cli import preprocess as fairseq_preprocess

    argv = ["-s", corpus.src, "-t", corpus.tgt, "--destdir", str(dest), "--workers", "1"]
    for split, (text, _) in corpus.splits.items():
        argv += [f"--{split}pref", text]
    fairseq_preprocess.main(options.get_preprocessing_parser().parse_args(argv))


def _sidecars(corpus: Corpus, dest: Path) -> None:
    from ..cli.preprocess import find_parse
    from ..data.build_sidecars import build_side
    from ..data.sidecars import side_prefix

    for split, (text, parse) in corpus.splits.items():
        for lang in (corpus.src, corpus.tgt):
            pfile = find_parse(parse, lang)
            if pfile is None:
                raise FileNotFoundError(f"no parsed corpus {parse}.{lang}.conllu")
            build_side(f"{text}.{lang}", pfile, side_prefix(str(dest), split, corpus.src, corpus.tgt, lang))


def time_preprocessing(corpus: Corpus, reps: int = 1) -> dict:
    """fairseq's binarization then the sidecars of the same splits into a fresh folder (timed apart),
    ``reps`` times; medians."""
    dest = corpus.root / "timing"
    t_fairseq, t_side = [], []
    for _ in range(reps):
        shutil.rmtree(dest, ignore_errors=True)
        t0 = time.perf_counter()
        _fairseq_preprocess(corpus, dest)
        t_fairseq.append(time.perf_counter() - t0)
        t1 = time.perf_counter()
        _sidecars(corpus, dest)
        t_side.append(time.perf_counter() - t1)
    lines = sum(sum(1 for _ in open(f"{text}.{corpus.src}", encoding="utf-8")) for text, _ in corpus.splits.values())
    f, sc = statistics.median(t_fairseq), statistics.median(t_side)
    return {"fairseq_s": f, "sidecars_s": sc, "ratio": sc / f, "fairseq_s_reps": t_fairseq, "sidecars_s_reps": t_side,
            "reps": reps, "dest": dest, "splits": sorted(corpus.splits), "sides": [corpus.src, corpus.tgt],
            "lines_per_side": lines, "workers": 1}


def ensure_data_bin(corpus: Corpus, timing: Optional[dict]) -> None:
    stamp = corpus.data_bin / "complete.json"
    config = json.loads((corpus.root / "prepared.json").read_text())
    if _stamp_ok(stamp, config):
        if timing:
            shutil.rmtree(timing["dest"], ignore_errors=True)
        return
    shutil.rmtree(corpus.data_bin, ignore_errors=True)
    if timing:  # the timing run wrote exactly what is needed
        os.replace(timing["dest"], corpus.data_bin)
    else:
        say(f"binarizing {corpus.name} into {corpus.data_bin}")
        _fairseq_preprocess(corpus, corpus.data_bin)
        _sidecars(corpus, corpus.data_bin)
    stamp.write_text(json.dumps(config))


# ------------------------------------------------------------------------------------------- models

def syntax_presets() -> List[str]:
    """Every architecture registered for the ``syntax_transformer`` model but its plain arch."""
    from fairseq.models import ARCH_MODEL_INV_REGISTRY, ARCH_MODEL_REGISTRY

    names = ARCH_MODEL_INV_REGISTRY.get(SYNTAX_MODEL, [])
    found = [a for a in names if a != SYNTAX_MODEL and ARCH_MODEL_REGISTRY.get(a) is ARCH_MODEL_REGISTRY[SYNTAX_MODEL]]
    return sorted(found)


@dataclass
class Bench:
    name: str
    model: object
    gen_model: object
    features: List[str]
    notes: List[str]
    arch: str = VANILLA
    reference: str = VANILLA  # the row its ratios are taken against (itself for a reference row)
    optimizer: object = None
    train: List[float] = field(default_factory=list)  # tokens/s per repetition
    gen: List[float] = field(default_factory=list)
    gen_tokens: int = 0
    gen_sentences: int = 0
    peak_bytes: int = 0
    static_bytes: int = 0
    mem_residual: Optional[int] = None
    params: int = 0


def model_argv(args, corpus: Corpus, arch: str, extra: List[str] = ()) -> List[str]:
    L, D, H, F = str(args.layers), str(args.dim), str(args.heads), str(args.ffn)
    return [str(corpus.data_bin), "--task", "syntax_translation", "-s", corpus.src, "-t", corpus.tgt, "--arch", arch,
            "--encoder-layers", L, "--decoder-layers", L, "--encoder-embed-dim", D, "--decoder-embed-dim", D,
            "--encoder-attention-heads", H, "--decoder-attention-heads", H, "--encoder-ffn-embed-dim", F,
            "--decoder-ffn-embed-dim", F, "--seed", str(args.seed), "--max-tokens", str(args.max_tokens), *extra]


def parse_model_args(args, corpus: Corpus, arch: str, extra: List[str] = ()):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    ns = options.parse_args_and_arch(parser, model_argv(args, corpus, arch, extra))
    return ns, convert_namespace_to_omegaconf(ns)


DROPOUTS = ("dropout", "attention_dropout", "activation_dropout")


def _dropouts(ns) -> Tuple[float, ...]:
    return tuple(float(getattr(ns, k, 0.0) or 0.0) for k in DROPOUTS)


def matched_name(drops: Tuple[float, ...]) -> str:
    """e.g. ``transformer[dropout=0.3,attn=0.2,act=0]``."""
    return VANILLA + "[" + ",".join(f"{k}={v:g}" for k, v in zip(("dropout", "attn", "act"), drops)) + "]"


def plan_models(args, corpus: Corpus, archs: List[str]) -> List[dict]:
    """What to build, in row order: the stock vanilla Transformer first; then for each preset, unless
    ``--no-matched-vanilla``, the stock Transformer with the preset's dropout rates (when they differ from
    the stock ones and no earlier row has them), which is the preset's reference, then the preset."""
    stock_ns, _ = parse_model_args(args, corpus, VANILLA)
    stock = _dropouts(stock_ns)
    plan = [{"name": VANILLA, "arch": VANILLA, "extra": [], "reference": VANILLA, "notes": []}]
    refs = {stock: VANILLA}
    for arch in archs:
        notes, extra = [], []
        ns, _ = parse_model_args(args, corpus, arch)
        dh = getattr(ns, "distance_heads", 0) or 0
        if getattr(ns, "distance_layers", "") and dh > args.heads:
            notes.append(f"distance heads {dh} of the preset > --heads {args.heads}: capped at {args.heads}")
            extra = ["--distance-heads", str(args.heads)]
        drops = _dropouts(ns)
        if args.no_matched_vanilla:
            ref = VANILLA
        elif drops not in refs:
            ref = refs[drops] = matched_name(drops)
            flags = [x for k, v in zip(DROPOUTS, drops) for x in ("--" + k.replace("_", "-"), f"{v:g}")]
            plan.append({"name": ref, "arch": VANILLA, "extra": flags, "reference": ref,
                         "notes": [f"the stock {VANILLA} with the dropout rates of {arch}: its reference"]})
        else:
            ref = refs[drops]
        plan.append({"name": arch, "arch": arch, "extra": extra, "reference": ref, "notes": notes})
    return plan


def build_models(args, corpus: Corpus, archs: List[str]):
    """The task (train and test loaded) and one Bench per planned model (see :func:`plan_models`)."""
    import torch
    from fairseq import tasks

    _, cfg = parse_model_args(args, corpus, VANILLA)
    task = tasks.setup_task(cfg.task)
    for split in corpus.splits:
        task.load_dataset(split)
    benches = []
    for item in plan_models(args, corpus, archs):
        ns, cfg = parse_model_args(args, corpus, item["arch"], item["extra"])
        torch.manual_seed(args.seed)
        model = task.build_model(cfg.model)
        gen_model = copy.deepcopy(model)  # untrained copy: identical generation in every repetition
        wanted = getattr(model, "syntax_features", None)
        features = sorted(wanted()) if wanted is not None else []
        notes = [", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in zip(DROPOUTS, _dropouts(ns)))] + item["notes"]
        b = Bench(item["name"], model, gen_model, features, notes, arch=item["arch"], reference=item["reference"])
        b.params = sum(p.numel() for p in model.parameters())
        benches.append(b)
    return task, benches


def make_batches(task, benches: List[Bench], args) -> Tuple[list, list]:
    """Training and test batches, collated once with every feature any model requested."""
    from fairseq import utils

    max_pos = utils.resolve_max_positions(task.max_positions(), *[b.model.max_positions() for b in benches])
    n_train = args.warmup + args.batches
    itr = task.get_batch_iterator(dataset=task.dataset("train"), max_tokens=args.max_tokens, max_positions=max_pos,
                                  ignore_invalid_inputs=True, required_batch_size_multiple=8, seed=args.seed,
                                  num_workers=0, epoch=1, disable_iterator_cache=True)
    train = []
    epoch = 1
    while len(train) < n_train:
        for sample in itr.next_epoch_itr(shuffle=True):
            train.append(sample)
            if len(train) == n_train:
                break
        epoch += 1
        if epoch > 50:
            raise SystemExit("syntrans-benchmark: error: the training split yields no batches")
        itr = task.get_batch_iterator(dataset=task.dataset("train"), max_tokens=args.max_tokens,
                                      max_positions=max_pos, ignore_invalid_inputs=True,
                                      required_batch_size_multiple=8, seed=args.seed, num_workers=0, epoch=epoch,
                                      disable_iterator_cache=True)
    gitr = task.get_batch_iterator(dataset=task.dataset("test"), max_sentences=args.gen_batch_size,
                                   max_positions=max_pos, ignore_invalid_inputs=True, seed=args.seed,
                                   num_workers=0, epoch=1, disable_iterator_cache=True)
    test = []
    for sample in gitr.next_epoch_itr(shuffle=True):
        test.append(sample)
        if len(test) == args.gen_batches:
            break
    return train, test


def for_model(sample: dict, bench: Bench) -> dict:
    """The sample with only the net_input keys this model reads."""
    keep = {"src_tokens", "src_lengths", "prev_output_tokens", *bench.features}
    out = dict(sample)
    out["net_input"] = {k: v for k, v in sample["net_input"].items() if k in keep}
    return out


def _tensors(obj):
    import torch

    if torch.is_tensor(obj):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


def held_bytes(bench: Bench, sample: dict) -> int:
    """Bytes of the distinct storages held before a step: the model's parameters, gradients, buffers and
    tensors kept as module attributes (e.g. a syntax bias kept from the last batch), its Adam state
    and the batch."""
    storages = {}

    def add(t):
        st = t.untyped_storage()
        storages[(t.device.type, st.data_ptr())] = st.nbytes()

    for m in bench.model.modules():
        for t in _tensors(list(vars(m).values())):  # _parameters, _buffers and plain attributes
            add(t)
            if t.grad is not None:
                add(t.grad)
    for t in _tensors(list(bench.optimizer.state.values())):
        add(t)
    for t in _tensors(sample):
        add(t)
    return sum(storages.values())


# ------------------------------------------------------------------------------------------- measurement

class Runner:
    def __init__(self, args, task, benches: List[Bench], train: list, test: list, device: str):
        import torch
        from fairseq import utils
        from fairseq.sequence_generator import SequenceGenerator

        from ..criterions.syntax_label_smoothed_cross_entropy import SyntaxLabelSmoothedCrossEntropyCriterion

        self.args, self.device, self.benches = args, device, benches
        self.cuda = device == "cuda"
        move = utils.move_to_cuda if self.cuda else (lambda s: s)
        self.train = [[move(for_model(s, b)) for s in train] for b in benches]
        self.test = [[move(for_model(s, b)) for s in test] for b in benches]
        self.criterion = SyntaxLabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
        self.generators = []
        for b in benches:
            b.model.load_state_dict(b.gen_model.state_dict())  # every device starts from the initial weights
            b.model.to(device)
            b.gen_model.to(device)
            b.gen_model.eval()
            b.optimizer = torch.optim.Adam(b.model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-8)
            self.generators.append(SequenceGenerator([b.gen_model], task.target_dictionary, beam_size=args.beam,
                                                     max_len_a=args.max_len_a, max_len_b=args.max_len_b))

    def sync(self):
        if self.cuda:
            import torch
            torch.cuda.synchronize()

    def step(self, bench: Bench, sample: dict) -> None:
        bench.optimizer.zero_grad(set_to_none=True)
        loss, sample_size, _ = self.criterion(bench.model, sample)
        (loss / sample_size).backward()
        bench.optimizer.step()

    def train_pass(self, k: int, rep: int) -> float:
        import torch

        b, batches = self.benches[k], self.train[k]
        b.model.train()
        torch.manual_seed(self.args.seed + rep)  # same dropout stream for every model
        for s in batches[:self.args.warmup]:
            self.step(b, s)
        self.sync()
        t0 = time.perf_counter()
        ntok = 0
        for s in batches[self.args.warmup:]:
            self.step(b, s)
            ntok += int(s["ntokens"])
        self.sync()
        return ntok / (time.perf_counter() - t0)

    def gen_pass(self, k: int) -> Tuple[float, int, int]:
        import torch

        b, gen = self.benches[k], self.generators[k]
        ntok = nsent = 0
        with torch.no_grad():
            self.sync()
            t0 = time.perf_counter()
            for s in self.test[k]:
                hypos = gen.generate([b.gen_model], s)
                ntok += sum(len(h[0]["tokens"]) for h in hypos)
                nsent += len(hypos)
            self.sync()
            dt = time.perf_counter() - t0
        return ntok / dt, ntok, nsent

    def peak_memory(self, k: int) -> Tuple[int, int, Optional[int]]:
        """(peak bytes, bytes held before the step, accounting residual) of one training step on the
        largest timed batch, after one untimed step on it (so that whatever the model keeps between
        steps was allocated while memory was tracked; see MEMORY_METHOD)."""
        import torch

        b = self.benches[k]
        timed = self.train[k][self.args.warmup:]
        sample = max(timed, key=lambda s: int(s["ntokens"]))
        b.model.train()
        if self.cuda:
            torch.manual_seed(self.args.seed)
            self.step(b, sample)
            b.optimizer.zero_grad(set_to_none=True)
            held = held_bytes(b, sample)
            self.sync()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            torch.manual_seed(self.args.seed)
            self.step(b, sample)
            self.sync()
            extra = torch.cuda.max_memory_allocated() - before
            residual = None
        else:
            from torch.profiler import ProfilerActivity, profile

            # The CPU allocator reports to the profiler the allocations made while it records and the
            # frees of those; an earlier block's free goes unreported. The first recorded step makes
            # every block the model keeps between steps a recorded one, so the second step's frees of
            # them are counted.
            for trial in range(2):
                b.optimizer.zero_grad(set_to_none=True)
                held = held_bytes(b, sample)
                torch.manual_seed(self.args.seed)
                with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                    self.step(b, sample)
                events = [e for e in prof.profiler.kineto_results.events()
                          if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]
            events.sort(key=lambda e: e.start_ns())
            cur = extra = 0
            for e in events:
                cur += e.nbytes()
                extra = max(extra, cur)
            # after the step the net change must be exactly the new gradients (kept state is replaced
            # by state of the same size): a non-zero residual means something was not accounted for
            grads = sum(p.grad.numel() * p.grad.element_size() for p in b.model.parameters() if p.grad is not None)
            residual = cur - grads
        b.optimizer.zero_grad(set_to_none=True)
        return held + extra, held, residual

    def run(self) -> None:
        a = self.args
        n = len(self.benches)
        for rep in range(a.reps):
            for k in [(rep + j) % n for j in range(n)]:  # rotate the order: no model is always first
                b = self.benches[k]
                tps = self.train_pass(k, rep)
                gps, ntok, nsent = self.gen_pass(k)
                b.train.append(tps)
                b.gen.append(gps)
                b.gen_tokens, b.gen_sentences = ntok, nsent
                say(f"{self.device} rep {rep + 1}/{a.reps} {b.name}: train {tps:,.0f} tok/s, generate {gps:,.0f} tok/s")
        for k, b in enumerate(self.benches):
            b.peak_bytes, b.static_bytes, b.mem_residual = self.peak_memory(k)


def measure_device(args, task, benches: List[Bench], train: list, test: list, device: str) -> dict:
    import torch

    say(f"measuring on {device}: {len(benches)} models × {args.reps} repetitions")
    runner = Runner(args, task, benches, train, test, device)
    runner.run()
    by_name = {b.name: b for b in benches}
    stock = benches[0]

    def ratios(b: Bench, ref: Bench) -> Dict[str, float]:
        if ref is b:  # a reference against itself is exactly 1
            return {"train": 1.0, "gen": 1.0, "mem": 1.0}
        return {"train": statistics.median(b.train) / statistics.median(ref.train),
                "gen": statistics.median(b.gen) / statistics.median(ref.gen),
                "mem": b.peak_bytes / ref.peak_bytes}

    rows = []
    for b in benches:
        r = ratios(b, by_name[b.reference])
        rows.append({
            "model": b.name,
            "arch": b.arch,
            "reference": b.reference,
            "features": b.features,
            "params": b.params,
            "notes": b.notes,
            "train_tok_s": statistics.median(b.train),
            "train_ratio": r["train"],
            "train_tok_s_reps": list(b.train),
            "gen_tok_s": statistics.median(b.gen),
            "gen_ratio": r["gen"],
            "gen_tok_s_reps": list(b.gen),
            "gen_tokens": b.gen_tokens,
            "gen_sentences": b.gen_sentences,
            "gen_mean_len": b.gen_tokens / max(1, b.gen_sentences),
            "peak_mem_mb": b.peak_bytes / 2 ** 20,
            "mem_ratio": r["mem"],
            "held_mem_mb": b.static_bytes / 2 ** 20,
            "mem_residual_bytes": b.mem_residual,
            "ratios_vs_stock": ratios(b, stock),
            "targets": None if b.arch == VANILLA else targets_for(b.arch),
        })
    for b in benches:  # free device memory and reset for the next device
        b.model.to("cpu")
        b.gen_model.to("cpu")
        b.optimizer = None
        b.train, b.gen = [], []
    if device == "cuda":
        torch.cuda.empty_cache()
    info = {"device": device, "rows": rows, "memory_method": MEMORY_METHOD[device],
            "train_tokens_per_rep": sum(int(s["ntokens"]) for s in train[args.warmup:]),
            "train_sentences_per_rep": sum(int(s["nsentences"]) for s in train[args.warmup:]),
            "gen_sentences_per_rep": sum(len(s["id"]) for s in test)}
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    else:
        info["threads"] = torch.get_num_threads()
    return info


def targets_for(name: str) -> Optional[Dict[str, float]]:
    for prefix, (tr, ge, mem) in TARGETS.items():
        if name.startswith(prefix):
            return {"train_min": tr, "gen_min": ge, "mem_max": mem}
    return None


# ------------------------------------------------------------------------------------------- report

def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _ratio(value: float, target: Optional[float], lower_bound: bool) -> str:
    s = f"{value:.3f}"
    if target is None:
        return s
    ok = value >= target if lower_bound else value <= target
    return f"{s} {_mark(ok)} ({'≥' if lower_bound else '≤'} {target:g})"


def render(result: dict) -> str:
    s = result["settings"]
    out = ["# syntrans-benchmark: syntax presets vs the vanilla Transformer", ""]
    out.append(f"- corpus: {result['corpus']['description']}")
    out.append(f"- torch {result['torch']}, fairseq {result['fairseq']}, Python {result['python']}")
    out.append(f"- every model: {s['layers']}+{s['layers']} layers, dim {s['dim']}, {s['heads']} heads, FFN {s['ffn']}; "
               f"its own dropout rates; seed {s['seed']}; Adam lr {s['lr']:g}, label smoothing 0.1")
    out.append(f"- training: {s['batches']} timed batches (≤ {s['max_tokens']} tokens each) after {s['warmup']} warm-up "
               f"batch(es), per repetition; generation: {s['gen_batches']} test batch(es) of ≤ {s['gen_batch_size']} "
               f"sentences, beam {s['beam']}, max length {s['max_len_a']:g}·src+{s['max_len_b']}, untrained weights; "
               f"{s['reps']} repetitions with the models interleaved (order rotated each repetition), median kept")
    if not s.get("no_matched_vanilla"):
        out.append(f"- ×vanilla: against the row named in the last column: the stock `{VANILLA}` run at the same "
                   f"dropout rates as the model (a stock `{VANILLA}` has attention dropout 0, the presets do not, and "
                   f"attention dropout alone costs memory and time), so that only the syntax mechanism differs; "
                   f"the ratios against the stock `{VANILLA}` are listed below the table")
    for dev in result["devices"]:
        out.append("")
        where = dev.get("gpu") or f"{dev.get('threads')} torch thread(s)"
        out.append(f"## {dev['device']} ({where}; {dev['train_tokens_per_rep']:,} target tokens / "
                   f"{dev['train_sentences_per_rep']} sentences trained and {dev['gen_sentences_per_rep']} sentences "
                   f"decoded per repetition)")
        out.append("")
        out.append("| model | train tok/s | ×vanilla | gen tok/s | ×vanilla | peak mem MB | ×vanilla | vanilla |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---|")
        for r in dev["rows"]:
            t = r["targets"] or {}
            ref = "(itself)" if r["reference"] == r["model"] else r["reference"]
            out.append(f"| {r['model']} | {r['train_tok_s']:,.0f} | {_ratio(r['train_ratio'], t.get('train_min'), True)} "
                       f"| {r['gen_tok_s']:,.0f} | {_ratio(r['gen_ratio'], t.get('gen_min'), True)} "
                       f"| {r['peak_mem_mb']:,.1f} | {_ratio(r['mem_ratio'], t.get('mem_max'), False)} | {ref} |")
        out.append("")
        stock = dev["rows"][0]["model"]
        for r in dev["rows"]:
            reps = ", ".join(f"{x:,.0f}" for x in r["train_tok_s_reps"])
            greps = ", ".join(f"{x:,.0f}" for x in r["gen_tok_s_reps"])
            resid = r.get("mem_residual_bytes")
            check = "" if not resid else f" (memory accounting residual {resid:,} bytes: not exact)"
            vs = r["ratios_vs_stock"]
            vs_stock = "" if r["model"] == stock else (
                f"; vs stock {stock}: train {vs['train']:.3f}, gen {vs['gen']:.3f}, mem {vs['mem']:.3f}")
            out.append(f"- {r['model']}: features {', '.join(r['features']) or 'none'}; {r['params']:,} parameters; "
                       f"{'; '.join(r['notes'])}{vs_stock}; train tok/s per rep [{reps}]; gen tok/s per rep [{greps}], "
                       f"mean hypothesis {r['gen_mean_len']:.1f} tokens; held before the step "
                       f"{r['held_mem_mb']:.1f} MB{check}")
        out.append(f"- peak memory: {dev['memory_method']}")
    sc = result.get("sidecars")
    out.append("")
    if sc:
        ok = sc["ratio"] <= SIDECAR_TARGET
        out.append(f"**Sidecars** ({'+'.join(sc['splits'])} × {'/'.join(sc['sides'])}, {sc['lines_per_side']:,} lines "
                   f"per side; one process each; median of {sc['reps']}): fairseq binarization {sc['fairseq_s']:.2f}s "
                   f"(fairseq_cli.preprocess.main, --workers 1), syntax sidecars {sc['sidecars_s']:.2f}s (build_side, "
                   f"both sides) → sidecars/fairseq {sc['ratio']:.3f} {_mark(ok)} (≤ {SIDECAR_TARGET:g})")
    else:
        out.append("**Sidecars**: not timed (--no-sidecars)")
    out.append("")
    out.append("Targets (issue, distance-mask presets) are reported, never enforced; CPU timings are sensitive to "
               "other load on the machine.")
    return "\n".join(out) + "\n"


def _finite_json(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_json(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


# ------------------------------------------------------------------------------------------- main

def main(argv: Optional[List[str]] = None) -> int:
    args = resolve(build_parser().parse_args(argv))
    if args.verbose:
        return run(args)
    levels = {}
    for name in ("fairseq", "fairseq_cli", "hydra", "syntrans"):
        levels[name] = logging.getLogger(name).level
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():  # hydra's deprecation notes and the like: not the benchmark's business
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            return run(args)
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def run(args) -> int:
    import fairseq
    import torch

    import syntrans  # noqa: F401  (registers the task, model and criterion)

    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        return _run(args, fairseq, torch)
    finally:
        torch.set_num_threads(threads)


def _run(args, fairseq, torch) -> int:
    presets = syntax_presets()
    if args.archs:
        wanted = [a.strip() for a in args.archs.split(",") if a.strip()]
        unknown = [a for a in wanted if a not in presets]
        if unknown:
            raise SystemExit(f"syntrans-benchmark: error: not syntax presets: {', '.join(unknown)} "
                             f"(registered: {', '.join(presets)})")
        presets = wanted
    if args.device in (None, "all"):
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    elif args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("syntrans-benchmark: error: --device cuda but torch.cuda.is_available() is False")
    else:
        devices = [args.device]

    t_start = time.perf_counter()
    corpus = prepare_corpus(args)
    say(f"corpus: {corpus.description}")
    timing = None
    if not args.no_sidecars:
        say("timing fairseq binarization vs syntax sidecars")
        timing = time_preprocessing(corpus, args.sidecar_reps)
    ensure_data_bin(corpus, timing)

    torch.manual_seed(args.seed)
    task, benches = build_models(args, corpus, presets)
    train, test = make_batches(task, benches, args)
    results = []
    for dev in devices:
        results.append(measure_device(args, task, benches, train, test, dev))

    settings = {k: getattr(args, k) for k in ("layers", "dim", "heads", "ffn", "batches", "warmup", "reps",
                                               "max_tokens", "gen_batches", "gen_batch_size", "beam", "max_len_a",
                                               "max_len_b", "lr", "seed", "quick", "no_matched_vanilla",
                                               "sidecar_reps")}
    settings["threads"] = torch.get_num_threads()
    result = {
        "corpus": {"name": corpus.name, "description": corpus.description, "data_bin": str(corpus.data_bin)},
        "torch": torch.__version__, "fairseq": fairseq.__version__, "python": sys.version.split()[0],
        "settings": settings, "models": [b.name for b in benches], "presets": presets, "devices": results,
        "sidecars": None if timing is None else {k: v for k, v in timing.items() if k != "dest"},
        "targets": {"models": {p: targets_for(p) for p in presets}, "sidecars_max": SIDECAR_TARGET},
        "seconds": time.perf_counter() - t_start,
    }
    text = render(result)
    sys.stdout.write(text)
    sys.stdout.flush()
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(_finite_json(result), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    say(f"done in {result['seconds']:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
