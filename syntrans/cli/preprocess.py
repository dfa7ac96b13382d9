"""``syntrans-preprocess``: fairseq-preprocess, then syntax sidecars next to its output.

Takes every fairseq-preprocess flag, plus the parsed corpora of each split: ``--trainparse P``
(and ``--validparse``/``--testparse``, comma-separated like ``--validpref``) where ``P.{lang}.conllu``
(or ``P.{lang}.ptb``) parses the tokenized text that ``--trainpref`` holds after BPE. Sides with
no parse file get no sidecars.
"""
from __future__ import annotations

import os
import sys
import time
from typing import List, Optional

from fairseq import options

from ..data.build_sidecars import SidecarError, build_side
from ..data.sidecars import side_prefix


def add_syntax_args(parser) -> None:
    g = parser.add_argument_group("syntrans")
    g.add_argument("--trainparse", metavar="FP", help="parsed corpora of the train split: FP.{lang}.conllu or .ptb")
    g.add_argument("--validparse", metavar="FP", help="parsed corpora of the valid split(s), comma-separated")
    g.add_argument("--testparse", metavar="FP", help="parsed corpora of the test split(s), comma-separated")
    g.add_argument("--bpe-marker", default="@@", help="suffix of a BPE piece that continues into the next (subword-nmt: @@)")
    g.add_argument("--binarize-trees", action="store_true",
                   help="distances on CNF-binarized trees (the released distance-mask code); default: the paper's")
    g.add_argument("--strict", action="store_true",
                   help="error on multi-sentence lines, empty lines, failed parses and respelled words instead of reporting them")
    g.add_argument("--sidecars-only", action="store_true", help="skip fairseq's binarization (data already in --destdir)")


def find_parse(prefix: str, lang: str) -> Optional[str]:
    for ext in ("conllu", "ptb"):
        p = f"{prefix}.{lang}.{ext}"
        if os.path.exists(p):
            return p
    return None


def split_jobs(args):
    """(split name, text prefix, parse prefix) for every split that has parses."""
    for kind in ("train", "valid", "test"):
        text, parse = getattr(args, f"{kind}pref"), getattr(args, f"{kind}parse")
        if not parse:
            continue
        if not text:
            raise SidecarError(f"--{kind}parse is given but --{kind}pref is not")
        texts, parses = text.split(","), parse.split(",")
        if len(texts) != len(parses):
            raise SidecarError(f"--{kind}pref names {len(texts)} prefixes but --{kind}parse {len(parses)}")
        for k, (t, p) in enumerate(zip(texts, parses)):
            yield (kind if k == 0 else f"{kind}{k}"), t, p


def main(argv: Optional[List[str]] = None) -> int:
    parser = options.get_preprocessing_parser()
    add_syntax_args(parser)
    args = parser.parse_args(argv)
    src, tgt = args.source_lang, args.target_lang
    if not src or not tgt:
        parser.error("syntrans-preprocess needs --source-lang and --target-lang")
    if args.dataset_impl != "mmap":
        parser.error("syntax sidecars are written next to mmap datasets: use --dataset-impl mmap")
    try:
        jobs = list(split_jobs(args))
        if not jobs:
            raise SidecarError("no parsed corpora given: pass --trainparse/--validparse/--testparse")
        t0 = time.perf_counter()
        if not args.sidecars_only:
            from fairseq_cli import preprocess as fairseq_preprocess
            fairseq_preprocess.main(args)
        t_fairseq = time.perf_counter() - t0
        t1 = time.perf_counter()
        for split, text, parse in jobs:
            found = False
            for lang in (src, tgt):
                pfile = find_parse(parse, lang)
                if pfile is None:
                    continue
                found = True
                tfile = f"{text}.{lang}"
                if not os.path.exists(tfile):
                    raise SidecarError(f"{tfile} does not exist (text of --{split.rstrip('0123456789')}pref for {lang})")
                rep = build_side(tfile, pfile, side_prefix(args.destdir, split, src, tgt, lang),
                                 marker=args.bpe_marker, binarize=args.binarize_trees, strict=args.strict)
                print(f"[syntrans] {split}.{lang}: {rep.summary()}", flush=True)
            if not found:
                raise SidecarError(f"no parsed corpus {parse}.{{{src},{tgt}}}.{{conllu,ptb}} for split {split}")
        t_side = time.perf_counter() - t1
        if not args.sidecars_only:
            print(f"[syntrans] fairseq binarization {t_fairseq:.2f}s, syntax sidecars {t_side:.2f}s", flush=True)
    except (SidecarError, ValueError, FileNotFoundError) as e:
        print(f"syntrans-preprocess: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
