"""``syntrans-parse``: tokenized text in, parsed corpus (CoNLL-U with constituency comments) out.

The command line of :mod:`syntrans.parsing.driver`, whose module docs describe the output conventions
(``# line = N``, the words of a line are its tokens), the parsers, the views (``--views``), the failure fallback
(``# parse_failed``, ``--strict``), the device and worker processes, and the shard files
(``--num-shards``/``--shard-id``, ``--merge``; every shard as a job: :mod:`syntrans.parsing.cluster`).
Without installed stanza models the command stops at once (exit status 2) and says how to install them;
it never downloads anything itself.

Exit status: 0 success (or, with ``--no-wait``, jobs submitted), 1 parse failure under ``--strict`` or an unfinished
merge, 2 usage, input, launcher or missing-model error.
"""
from __future__ import annotations

import argparse
import os
import sys

from ..data.parse_views import VIEWS, format_views
from ..parsing.names import PARSERS
from ..parsing.shards import shard_range
from .argtypes import positive_int, sizes_per_name, views_arg
from .clean_exit import clean_main
from .cluster_args import add_cluster_args


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="syntrans-parse", description=__doc__.splitlines()[0].replace("``", ""),
        epilog="Output conventions, the alignment of stanza's words to the tokens, the views, the failure fallback "
               "and the shard files are described in the module docs of syntrans.parsing.driver.")
    p.add_argument("input", metavar="INPUT", help="text file, one segment per line")
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="parsed corpus to write (CoNLL-U)")
    p.add_argument("--lang", default="en", help="language code for stanza and --raw tokenization (default: en)")
    p.add_argument("--parser", choices=PARSERS, default="stanza", help="parser (default: stanza)")
    p.add_argument("--views", type=views_arg, default=VIEWS, metavar="VIEWS",
                   help="what to parse: deps (dependencies: stanza's pos, lemma, depparse), trees (constituency: pos, "
                        f"constituency) or deps,trees (default: {format_views(VIEWS)}). An OUTPUT finished before from "
                        "the same input gets only the views it lacks, merged into it")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--tokenized", dest="raw", action="store_false",
                      help="INPUT is Moses-tokenized, tokens separated by spaces (default)")
    mode.add_argument("--raw", dest="raw", action="store_true",
                      help="INPUT is raw text: tokenize each line with sacremoses (escape=False); "
                           "the output words are those tokens")
    mode.add_argument("--char-spans", action="store_true",
                      help="INPUT is raw text that the parser tokenizes itself (stanza's tokenizer and sentence "
                           "splitter; the model-free parsers: whitespace fields), each word's character span in the "
                           "line (its whitespace made single spaces) written to MISC as start_char=S|end_char=E: the "
                           "raw-text route of SentencePiece (syntrans-preprocess --char-spans)")
    p.set_defaults(raw=False)
    p.add_argument("--split-sentences", action="store_true",
                   help="split a line into sentences after '.', '!', '?' tokens (all keep the line number)")
    d = p.add_argument_group("device and batches")
    d.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where stanza runs (default auto: cuda when torch sees a GPU, else cpu)")
    d.add_argument("--workers", type=positive_int, default=1,
                   help="parser processes on --device cpu, each with cores/N torch threads (default 1)")
    d.add_argument("--batch-size", type=positive_int, default=None,
                   help="input lines per parser call (default: 64 on cpu, 1024 on cuda)")
    d.add_argument("--stanza-batch-sizes", type=sizes_per_name, default={}, metavar="NAME=N,…",
                   help="stanza's own batch sizes (pos, lemma, mwt, depparse, constituency; pos and constituency in "
                        "sentences, the others in words) over the device's defaults")
    s = p.add_argument_group("shards")
    s.add_argument("--num-shards", type=int, default=1, help="split INPUT into N contiguous shards (default: 1)")
    s.add_argument("--shard-id", type=int, default=None,
                   help="parse only shard K, 0..N-1 (default: every shard, as jobs of --launcher)")
    s.add_argument("--merge", action="store_true",
                   help="only merge the finished shards OUTPUT.shard{K}of{N} into OUTPUT")
    p.add_argument("--strict", action="store_true", help="a parser failure is an error instead of a fallback parse")
    p.add_argument("--force", action="store_true", help="redo a shard even when it is already finished")
    add_cluster_args(p, "with --num-shards N and no --shard-id: each shard", "OUTPUT.jobs/")
    return p


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _info(msg: str) -> None:
    print(f"syntrans-parse: {msg}", file=sys.stderr, flush=True)


def run(args) -> int:
    """Run one ``syntrans-parse`` invocation with parsed arguments; returns the exit status."""
    from ..parsing.driver import ParseJob, merge_finished, parse_job  # lazy: stanza and torch (seconds), not for --help
    if args.merge:
        merge_finished(args.output, args.num_shards, explicit=True, log=_info)
        return 0
    job = ParseJob(input=args.input, output=args.output, lang=args.lang, parser=args.parser, raw=args.raw,
                   split_sentences=args.split_sentences, batch_size=args.batch_size, num_shards=args.num_shards,
                   shard_id=args.shard_id or 0, strict=args.strict, force=args.force, views=args.views,
                   device=None if args.device == "auto" else args.device, workers=args.workers,
                   stanza_batch_sizes=args.stanza_batch_sizes, char_spans=args.char_spans)
    if args.shard_id is not None or args.num_shards == 1:
        parse_job(job, log=_info)
        return 0
    from ..parsing.cluster import parse_sharded  # every shard, through the launcher

    parse_sharded([job], args.launch, log=_info)
    return 0


@clean_main("syntrans-parse")
def main(argv: list[str] | None = None) -> int:
    """Run ``syntrans-parse``; returns the exit status (see the module docs)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        shard_range(0, args.num_shards, args.shard_id or 0)
    except ValueError as e:
        ap.error(str(e))
    from ..jobs.launcher import LaunchError
    from .cluster_args import launch_options

    try:
        if args.launcher != "local" and (args.shard_id is not None or args.num_shards == 1 or args.merge):
            raise LaunchError(f"--launcher {args.launcher} runs the shards of --num-shards N (N > 1) as jobs, without "
                              "--shard-id or --merge")
        args.launch = launch_options(args, args.output + ".jobs")
    except LaunchError as e:
        ap.error(str(e))
    if not args.merge:
        if not os.path.isfile(args.input):
            _err(f"syntrans-parse: error: {args.input}: expected an existing text file (INPUT), found "
                 f"{'a directory' if os.path.isdir(args.input) else 'nothing'}")
            return 2
        if os.path.abspath(args.input) == os.path.abspath(args.output):
            ap.error(f"OUTPUT must differ from INPUT, found {args.output} for both")
        out_dir = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(out_dir):
            _err(f"syntrans-parse: error: {args.output}: expected an existing output directory {out_dir}, found nothing; "
                 f"create it first")
            return 2
    from ..jobs.launcher import LaunchError
    from ..parsing.driver import StrictParseError  # lazy: as in run()
    from ..parsing.shards import InputError
    from ..parsing.stanza_parser import MissingModelsError
    try:
        return run(args)
    except MissingModelsError as e:  # its message begins with this command's name
        text = str(e)
        _err("syntrans-parse: error: " + (text[len("syntrans-parse: "):] if text.startswith("syntrans-parse: ") else text))
        return 2
    except LaunchError as e:
        _err(f"syntrans-parse: error: {e}")
        return 2
    except InputError as e:
        _err(f"syntrans-parse: error: {e}")
        return 2 if not args.merge else 1
    except StrictParseError as e:
        _err(f"syntrans-parse: error: {e}")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
