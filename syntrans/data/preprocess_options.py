"""The options ``syntrans-preprocess`` adds to fairseq-preprocess's (no fairseq import: ``--help`` shows them)."""
from __future__ import annotations

import argparse

FAIRSEQ_OPTIONS = ("and every option of fairseq-preprocess (source/target languages, --trainpref, --destdir, "
                   "dictionaries, --workers; `fairseq-preprocess --help` lists them).")


BPE_HELP = ("fairseq's option: how the text was segmented, which decides how pieces map to parse words: subword_nmt "
            "(default: pieces ending in --bpe-marker continue their word), sentencepiece or gpt2 (aligned to the parse "
            "words by characters; crossing pieces are reported, a word without a piece of its own joined to the word whose "
            "piece holds it and reported)")


def add_syntax_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("syntrans")
    g.add_argument("--trainparse", metavar="FP", help="parsed corpora of the train split: FP.{lang}.conllu or .ptb")
    g.add_argument("--validparse", metavar="FP", help="parsed corpora of the valid split(s), comma-separated")
    g.add_argument("--testparse", metavar="FP", help="parsed corpora of the test split(s), comma-separated")
    g.add_argument("--bpe-marker", default="@@", help="suffix of a BPE piece that continues into the next (subword-nmt: @@)")
    g.add_argument("--gpt2-encoder-json", metavar="FILE",
                   help="--bpe gpt2: encoder.json (a local file), to read the bytes of each piece id")
    g.add_argument("--gpt2-vocab-bpe", metavar="FILE", help="--bpe gpt2: vocab.bpe (a local file)")
    g.add_argument("--char-spans", action="store_true",
                   help="the raw-text route (--bpe sentencepiece or gpt2): the parses give each word's character span "
                        "in its line (start_char/end_char in MISC, syntrans-parse --char-spans), which places the words "
                        "under the pieces; a parse without spans is then refused, and one with spans without this flag")
    g.add_argument("--binarize-trees", action="store_true",
                   help="distances on CNF-binarized trees (the released distance-mask code); default: the paper's")
    g.add_argument("--strict", action="store_true",
                   help="error on multi-sentence lines, empty lines, failed parses, respelled words, dependency heads that "
                        "are no tree and words without a subword piece of their own, instead of reporting them (such "
                        "heads get the chain fallback; such words are joined to the word whose piece holds them)")
    g.add_argument("--sidecars-only", action="store_true", help="skip fairseq's binarization (data already in --destdir)")


def help_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A parser for ``--help`` alone: the syntrans options, and a line for fairseq-preprocess's (not imported)."""
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog="Takes the options above " + FAIRSEQ_OPTIONS)
    parser.add_argument("--bpe", default=None, help=BPE_HELP)
    add_syntax_args(parser)
    return parser
