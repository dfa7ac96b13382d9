"""``syntrans-synth``: write a deterministic synthetic parallel corpus with gold parses.

For each split (train/valid/test) and language it writes ``DIR/{split}.{lang}`` (tokenized text,
one sentence per line) and ``DIR/{split}.{lang}.conllu`` (gold trees and heads, ``# line = N``
tying sentence N to line N). See :mod:`syntrans.synth` for the grammar and the transduction.
"""
from __future__ import annotations

import argparse

from .clean_exit import clean_main


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    p = argparse.ArgumentParser(prog="syntrans-synth",
                                description="Write a deterministic synthetic parallel corpus with gold parses.")
    p.add_argument("--out-dir", required=True, help="output folder (created when missing)")
    p.add_argument("--src", default="src", help="source language suffix (default: src)")
    p.add_argument("--tgt", default="tgt", help="target language suffix (default: tgt)")
    p.add_argument("--train", type=int, default=2000, help="training sentences (default: 2000)")
    p.add_argument("--valid", type=int, default=200, help="validation sentences (default: 200)")
    p.add_argument("--test", type=int, default=200, help="test sentences (default: 200)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default: 1)")
    p.add_argument("--min-len", type=int, default=3, help="shortest sentence in words (default: 3)")
    p.add_argument("--max-len", type=int, default=40, help="longest sentence in words (default: 40)")
    return p


@clean_main("syntrans-synth")
def main(argv: list[str] | None = None) -> int:
    """Run ``syntrans-synth``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    sizes = {"train": args.train, "valid": args.valid, "test": args.test}
    if any(n < 0 for n in sizes.values()):
        parser.error("split sizes must not be negative")
    if args.max_len < 3 or args.min_len > args.max_len:
        parser.error("need --max-len >= 3 and --min-len <= --max-len")
    if args.src == args.tgt:
        parser.error("--src and --tgt must differ")
    from ..synth import write_corpus  # lazy: stanza's trees (seconds), not for --help
    for s in write_corpus(args.out_dir, sizes, args.seed, args.src, args.tgt, args.min_len, args.max_len):
        print(f"{s['split']}: {s['sentences']} sentences, mean length {s['mean_len']:.1f} words, "
              f"{s['overlap']} also in another split, {s['seconds']:.2f}s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
