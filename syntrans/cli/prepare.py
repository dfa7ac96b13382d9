"""``syntrans-prepare``: prepare a corpus for syntrans (download, extract, tokenize, clean, BPE, parse, binarize).

    syntrans-prepare CORPUS --pair SRC-TGT --out DIR [--raw-dir DIR] [--smoke] [--parser auto] [--force] …

Steps, outputs and resume rules: :mod:`syntrans.prep.pipeline`; corpora and their settings:
:mod:`syntrans.prep.corpora`. Exit status: 0 success, 2 a problem the message explains (missing or
corrupt files, no network, unknown pair, missing stanza models), 130 interrupted.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..jobs.launcher import LaunchError
from ..prep import CORPORA, PrepError, prepare_corpus
from ..prep.parse_step import PrepPending
from ..prep.pipeline import PARSERS, SMOKE_BPE_OPS, SMOKE_SIZES, again_call, warn_not_applying
from ..prep.recipe import Recipe
from ..prep.segmentation import add_segmentation_args, segmentation_from_args
from ..reproduce.config_file import ConfigError
from .argtypes import merges_per_lang, positive_int, positive_int_or_off, ratio_or_off, views_arg
from .clean_exit import clean_main
from .cluster_args import add_cluster_args, launch_options


def _corpora_table() -> str:
    rows = []
    for c in CORPORA.values():
        pairs = ", ".join(c.pairs)
        rows.append(f"  {c.name:<10} {pairs:<13} {c.description}")
    return "corpora (pair: either direction):\n" + "\n".join(rows)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="syntrans-prepare", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Prepare a corpus for syntrans: fetch, extract, Moses-tokenize and clean, BPE, parse, "
                    "binarize with syntax sidecars, and write the raw test reference. Finished steps are skipped "
                    "on a re-run.",
        epilog=_corpora_table() + "\n\nOutputs in --out: data-bin/ (fairseq + sidecars), bpe/codes, ref/test.{src,tgt} "
               "(raw reference for sacreBLEU), prepared.json (summary).")
    p.add_argument("corpus", nargs="?", choices=list(CORPORA), metavar="CORPUS", help="one of: " + ", ".join(CORPORA))
    p.add_argument("--pair", help="SRC-TGT, e.g. de-en (source de, target en); default: the corpus's first pair")
    p.add_argument("--out", type=Path, help="output folder (created when missing)")
    p.add_argument("--again", type=Path, metavar="OUT",
                   help="prepare OUT again with the settings it was prepared with (its prepared.json), other --views "
                        "(or --for-config), --workers or launcher flags given: finished steps are skipped, a view OUT "
                        "lacks is parsed alone and merged in")
    p.add_argument("--raw-dir", type=Path,
                   help="where the downloaded archives (or a licensed/local corpus's files) are; default: OUT/raw")
    p.add_argument("--smoke", action="store_true",
                   help=f"a tiny slice: the first {SMOKE_SIZES['train']}/{SMOKE_SIZES['valid']}/{SMOKE_SIZES['test']} "
                        f"train/valid/test pairs, {SMOKE_BPE_OPS} BPE merges, right-branching parses without stanza models")
    for split in ("train", "valid", "test"):
        p.add_argument(f"--smoke-{split}", type=int, metavar="N",
                       help=f"{split} pairs of a smoke run (default {SMOKE_SIZES[split]})")
    p.add_argument("--bpe-ops", type=int, metavar="N",
                   help="BPE merges (default: the corpus's; smoke: 1000); with --bpe sentencepiece and no "
                        "--sentencepiece-model, the vocabulary size of the SentencePiece model trained on the training "
                        "text")
    p.add_argument("--parser", choices=PARSERS, default="auto",
                   help="auto (default): stanza where its models are installed, else an error, or right-branching "
                        "in smoke runs; or force one; imported: another parser's output (e.g. CoreNLP's PTB trees and "
                        "CoNLL-U) for each tokenized file, from OUT/parse-import/ (docs/reproduce.md, Parsers)")
    p.add_argument("--parse-shards", type=int, default=1, metavar="N",
                   help="parse each file in N shards with syntrans-parse's sharding: here one after another, or one "
                        "job each with --launcher slurm or submitit-local")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="processes for tokenization, BPE, the parser (on CPU) and fairseq binarization (default 1)")
    views = p.add_mutually_exclusive_group()
    views.add_argument("--views", type=views_arg, default=None, metavar="VIEWS",
                       help="what to parse of both sides: deps (dependencies), trees (constituency) or deps,trees "
                            "(default); a folder parsed before gets only the views it lacks")
    views.add_argument("--for-config", action="append", default=[], metavar="ARGS_FILE",
                       help="parse of each side the views the models of these configs/*.args files read (repeatable), "
                            "e.g. --for-config pascal/wmt16_en_de.args: the source's dependencies, no target parse")
    p.add_argument("--force", action="store_true", help="redo every step (downloads are only verified again)")
    p.add_argument("--strict", action="store_true",
                   help="stop the sidecar build at the first per-line fault it would otherwise count and work around "
                        "(a word without a subword piece of its own, a multi-sentence or empty line, a failed parse, "
                        "dependency heads that are no tree: syntrans-preprocess --strict)")
    p.add_argument("--checksums", type=Path, metavar="FILE",
                   help="known sha256 sums of the raw files (sha256sum format) to verify them against")
    r = p.add_argument_group(
        "recipe", "a paper's settings over the corpus's (each default: the corpus's). A folder prepared under other "
                  "recipe settings is refused unless --force")
    r.add_argument("--max-len", type=positive_int_or_off, metavar="N|off",
                   help="drop training pairs with a side longer than N tokens; off: no length filter")
    r.add_argument("--ratio", type=ratio_or_off, metavar="R|off",
                   help="drop training pairs where one side has more than R times the tokens of the other; off: none")
    case = r.add_mutually_exclusive_group()
    case.add_argument("--lowercase", dest="lowercase", action="store_const", const=True, help="lowercase all text")
    case.add_argument("--cased", dest="lowercase", action="store_const", const=False, help="keep the case")
    dashes = r.add_mutually_exclusive_group()
    dashes.add_argument("--aggressive-dashes", dest="aggressive_dashes", action="store_const", const=True,
                        help="Moses tokenizer -a: well-known -> well @-@ known")
    dashes.add_argument("--no-aggressive-dashes", dest="aggressive_dashes", action="store_const", const=False)
    r.add_argument("--normalize-punctuation", action="store_const", const=True,
                   help="Moses normalize-punctuation.perl before tokenizing (not on pre-segmented languages)")
    r.add_argument("--remove-non-printing", action="store_const", const=True,
                   help="Moses remove-non-printing-char.perl before tokenizing")
    r.add_argument("--langid", action="store_const", const=True,
                   help="drop training pairs whose source or target langid identifies as another language "
                        "(needs the langid package)")
    r.add_argument("--train-limit", type=positive_int, metavar="N", help="only the first N training pairs")
    joint = r.add_mutually_exclusive_group()
    joint.add_argument("--joint-bpe", dest="joint", action="store_const", const=True,
                       help="one BPE model and dictionary for both sides")
    joint.add_argument("--separate-bpe", dest="joint", action="store_const", const=False,
                       help="a BPE model and dictionary per side")
    r.add_argument("--bpe-ops-per-lang", type=merges_per_lang, metavar="LANG=N,LANG=N",
                   help="separate BPE with merges per language, e.g. zh=61000,ja=46000")
    r.add_argument("--word-vocab", type=positive_int, metavar="N",
                   help="no BPE: word-level data, each dictionary keeping its N most frequent entries")
    add_segmentation_args(p)
    add_cluster_args(p, "each shard of a parse (--parse-shards)", "OUT/jobs")
    r.add_argument("--multitask", action="store_const", const=True,
                   help="the +MULTI-TASK baseline's data (Bugliarello & Okazaki 2020, App. A): each training source "
                        "also paired with its linearised parse, sources wrapped in a task tag (<translate> or "
                        "<parse>), the two tasks shuffled together; valid/test carry <translate>; no sidecars")
    r.add_argument("--multitask-target", choices=("constituency", "dependency"), default=None,
                   help="with --multitask: the parse target, constituency (default: the authors' unlexicalized "
                        "constituency skeleton, words and POS tags removed) or dependency (ours: bracketed "
                        "dependency parse over the BPE pieces)")
    return p


def recipe_from_args(args) -> Recipe | None:
    """The Recipe the recipe flags ask for, or None when none is given (PrepError for a bad combination)."""
    recipe = Recipe(max_len=args.max_len, ratio=args.ratio, lowercase=args.lowercase,
                    aggressive_dashes=args.aggressive_dashes, normalize_punctuation=args.normalize_punctuation,
                    remove_non_printing=args.remove_non_printing, langid=args.langid, train_limit=args.train_limit,
                    bpe_ops_by_lang=args.bpe_ops_per_lang, joint=args.joint, word_vocab=args.word_vocab,
                    multitask=args.multitask, multitask_target=args.multitask_target)
    return None if recipe.is_empty() else recipe


def _views(args):
    """The views asked for: --views (both sides), those each side of the --for-config files' models reads, or None
    (both views, both sides)."""
    if not args.for_config:
        return args.views
    from ..data.parse_views import format_side_views
    from ..reproduce.config_views import side_views_of_config  # lazy: builds the models' configs (fairseq)

    read = [side_views_of_config(c) for c in args.for_config]
    views = {side: tuple(v for v in ("deps", "trees") if any(v in r[side] for r in read)) for side in ("source", "target")}
    print(f"parse views for {', '.join(args.for_config)}: {format_side_views(views)}", flush=True)
    return views


def _run(call: dict, args) -> int:
    """prepare_corpus(**call) with the views, workers and launcher of ``args``; the exit status."""
    try:
        launch = launch_options(args, Path(call["out_dir"]) / "jobs")
        before = call.pop("views", None)  # --again: the views OUT was prepared with, unless others are asked for
        views = _views(args)
        prepare_corpus(**call, views=before if views is None else views, workers=args.workers, force=args.force,
                       strict=args.strict,
                       log=lambda m: print(m, flush=True), launch=launch if launch.launcher != "local" else None)
    except PrepPending as e:
        print(f"syntrans-prepare: {e}", flush=True)
        return 0
    except (LaunchError, ConfigError, ValueError) as e:
        print(f"syntrans-prepare: error: {e}", file=sys.stderr)
        return 2
    except PrepError as e:
        msg = str(e)
        print(msg if msg.startswith("syntrans-prepare") else f"syntrans-prepare: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("syntrans-prepare: interrupted; run the same command again to continue", file=sys.stderr)
        return 130
    return 0


def again(args, parser) -> int:
    """``syntrans-prepare --again OUT``: OUT's own settings, other views (and workers, launcher)."""
    given = [flag for flag, value in (("CORPUS", args.corpus), ("--out", args.out), ("--pair", args.pair),
                                      ("--raw-dir", args.raw_dir), ("--smoke", args.smoke), ("--bpe-ops", args.bpe_ops),
                                      ("--checksums", args.checksums), ("--bpe", args.bpe != "subword_nmt"),
                                      ("--sentencepiece-model", args.sentencepiece_model),
                                      ("--gpt2-encoder-json", args.gpt2_encoder_json), ("--no-moses", args.no_moses))
             if value not in (None, False)]
    if given or recipe_from_args(args) is not None or args.parser != "auto" or args.parse_shards != 1:
        parser.error(f"--again OUT takes OUT's own settings: leave out {', '.join(given) or 'the recipe flags'} "
                     "(only --views/--for-config, --workers, --force, --strict and the launcher flags go with it)")
    try:
        call = again_call(args.again)
    except PrepError as e:
        print(f"syntrans-prepare: error: {e}", file=sys.stderr)
        return 2
    return _run(call, args)


@clean_main("syntrans-prepare")
def main(argv: list[str] | None = None) -> int:
    """Run ``syntrans-prepare``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.again is not None:
        return again(args, parser)
    if args.corpus is None or args.out is None:
        parser.error("CORPUS and --out are required (or --again OUT)")
    corpus = CORPORA[args.corpus]
    pair = args.pair or next(iter(corpus.pairs))
    if pair.count("-") != 1 or not all(pair.split("-")):
        print(f"syntrans-prepare: error: --pair must be SRC-TGT such as {next(iter(corpus.pairs))}, found {pair!r}",
              file=sys.stderr)
        return 2
    src, tgt = pair.split("-")
    try:
        gold = corpus.find_pair(src, tgt).gold_parses
    except PrepError:  # an unknown pair: prepare_corpus names it
        gold = False
    if gold:  # flags that do not apply to a corpus with gold parses: said, not silently ignored
        warn_not_applying(args.corpus, args.parser, args.views, lambda m: print(f"syntrans-prepare: {m}", file=sys.stderr),
                          args.parse_shards)
    sizes = {"train": args.smoke_train, "valid": args.smoke_valid, "test": args.smoke_test}
    try:
        recipe = recipe_from_args(args)
        segmentation = segmentation_from_args(args)
    except PrepError as e:
        print(f"syntrans-prepare: error: {e}", file=sys.stderr)
        return 2
    call = dict(corpus=args.corpus, src=src, tgt=tgt, out_dir=args.out, raw_dir=args.raw_dir, smoke=args.smoke,
                parser=args.parser, bpe_ops=args.bpe_ops, smoke_sizes=sizes, checksums=args.checksums,
                parse_shards=args.parse_shards, recipe=recipe, segmentation=segmentation)
    return _run(call, args)


if __name__ == "__main__":
    raise SystemExit(main())
