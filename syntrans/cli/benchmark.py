"""``syntrans-benchmark``: speed and memory of every syntax preset against the vanilla Transformer.

Every registered ``syntax_transformer`` preset and fairseq's stock ``transformer`` (also run at each
preset's dropout rates, as that preset's reference, unless ``--no-matched-vanilla``) are built at the
same dimensions and measured in one process, interleaved over repetitions, on CPU and (when available)
CUDA: training tokens/s, generation tokens/s and the peak memory of one training step, each also as a
ratio to the reference, with the issue's targets printed next to the ratios (reported, never asserted).
Building the syntax sidecars is timed against fairseq's binarization of the same corpus: Multi30k
en→de when ``../shared/data/multi30k`` is present, else the built-in synthetic corpus.

This module holds the command line and wires together the pieces of :mod:`syntrans.bench`:
:mod:`~syntrans.bench.corpus` (preparation, binarization, sidecar timing), :mod:`~syntrans.bench.models`
(which models, built how, on which batches), :mod:`~syntrans.bench.measure` (speed and memory) and
:mod:`~syntrans.bench.report` (targets, Markdown and JSON).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import List, Optional

from ..bench.corpus import ensure_data_bin, prepare_corpus, say, time_preprocessing
from ..bench.measure import measure_device
from ..bench.models import build_models, make_batches, syntax_presets
from ..bench.report import SIDECAR_TARGET, _finite_json, render, targets_for

QUICK = dict(layers=2, dim=64, heads=8, ffn=128, batches=2, warmup=1, reps=2, max_tokens=512, gen_batches=1,
             gen_batch_size=8, beam=2, synth_train=200, synth_test=24, max_len_b=5, sidecar_reps=1)
DEFAULTS = dict(layers=6, dim=256, heads=8, ffn=1024, batches=6, warmup=1, reps=4, max_tokens=2048, gen_batches=2,
                gen_batch_size=32, beam=4, synth_train=10000, synth_test=500, max_len_b=10, sidecar_reps=3)


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
