"""``syntrans-benchmark``: speed and memory of every syntax preset against the vanilla Transformer.

Every registered ``syntax_transformer`` preset and fairseq's stock ``transformer`` (also run at each
preset's dropout rates, as that preset's reference, unless ``--no-matched-vanilla``) are built at the
same dimensions and measured in one process, interleaved over repetitions, on CPU and (when available)
CUDA: training tokens/s, generation tokens/s and the peak memory of one training step, each also as a
ratio to the reference, with the issue's targets printed next to the ratios (reported, never asserted).
Building the syntax sidecars is timed against fairseq's binarization of the same corpus: Multi30k
en→de when ``../shared/data/multi30k`` is present, else the built-in synthetic corpus.

This module holds the command line: its flags make a :class:`~syntrans.bench.options.BenchOptions` for
:func:`syntrans.bench.run.run_benchmark` (see :mod:`syntrans.bench`), whose Markdown report goes to stdout.
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from ..bench.options import DEFAULTS, BenchError, BenchOptions
from .clean_exit import clean_main

PROG = "syntrans-benchmark"
__all__ = ["build_parser", "main", "options_from_args"]


# ------------------------------------------------------------------------------------------- options

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
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
    g = p.add_argument_group("by length (instead of whole models: one layer per mechanism)")
    g.add_argument("--lengths", default=None, type=_lengths,
                   help="comma-separated sentence lengths, e.g. 32,64,128,256,512: measure one attention layer and one "
                        "whole layer of every preset's syntax heads against fairseq's stock ones at each length "
                        "(forward + backward, speed and peak memory; dims default to 512, 8 heads, FFN 2048)")
    g.add_argument("--layer-tokens", type=int, default=None,
                   help="tokens per batch of the benchmark by length (default 4096; B = tokens // length)")
    g.add_argument("--layer-dtype", choices=("float32", "float16", "bfloat16"), default="float32",
                   help="dtype of the layers of the benchmark by length (float16: a GPU's --fp16 layers)")
    g.add_argument("--recompile-batches", type=int, default=None,
                   help="batches of random lengths over which the compiled kernels' compiles are counted, per case "
                        "(default 50, --quick 10; 0: no count)")
    return p


def _lengths(text: str) -> List[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers, found {text!r}") from None


def options_from_args(args: argparse.Namespace) -> BenchOptions:
    """The :class:`BenchOptions` of parsed flags (the presets' values filled in; BenchError for refused values)."""
    archs = [a.strip() for a in args.archs.split(",") if a.strip()] if args.archs else None
    return BenchOptions(
        device=args.device, archs=archs, layers=args.layers, dim=args.dim, heads=args.heads, ffn=args.ffn,
        batches=args.batches, warmup=args.warmup, reps=args.reps, max_tokens=args.max_tokens,
        gen_batches=args.gen_batches, gen_batch_size=args.gen_batch_size, beam=args.beam, max_len_a=args.max_len_a,
        max_len_b=args.max_len_b, lr=args.lr, no_matched_vanilla=args.no_matched_vanilla, seed=args.seed,
        threads=args.threads, quick=args.quick, corpus=args.corpus, multi30k_dir=args.multi30k_dir,
        bpe_merges=args.bpe_merges, work_dir=args.work_dir, no_sidecars=args.no_sidecars,
        sidecar_reps=args.sidecar_reps, out=args.out, json=args.json, verbose=args.verbose, lengths=args.lengths,
        layer_tokens=args.layer_tokens, layer_dtype=args.layer_dtype, recompile_batches=args.recompile_batches)


# ------------------------------------------------------------------------------------------- main

@clean_main(PROG)
def main(argv: Optional[List[str]] = None) -> int:
    """Run ``syntrans-benchmark``; returns 0, or exits with a message naming a refused setting."""
    args = build_parser().parse_args(argv)
    from ..bench.corpus import say  # lazy: fairseq and torch (seconds), not for --help
    from ..bench.run import run_benchmark
    try:
        run = run_benchmark(options_from_args(args))
    except BenchError as e:
        raise SystemExit(f"{PROG}: error: {e}") from None
    sys.stdout.write(run.report)
    sys.stdout.flush()
    say(f"done in {run.result['seconds']:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
