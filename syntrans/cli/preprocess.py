"""``syntrans-preprocess``: fairseq-preprocess and, beside it, syntax sidecars next to its output.

Takes every fairseq-preprocess flag, plus the parsed corpora of each split: ``--trainparse P``
(and ``--validparse``/``--testparse``, comma-separated like ``--validpref``) where ``P.{lang}.conllu``
(or ``P.{lang}.ptb``) parses the tokenized text that ``--trainpref`` holds after BPE. Sides with
no parse file get no sidecars. The work is :func:`syntrans.data.binarization.preprocess`'s.
"""
from __future__ import annotations

import sys
from typing import List, Optional

from ..data.preprocess_options import help_parser
from .clean_exit import clean_main


def _print(message: str) -> None:
    print(message, flush=True)


@clean_main("syntrans-preprocess")
def main(argv: Optional[List[str]] = None) -> int:
    """Run ``syntrans-preprocess``; returns the exit status (2 with a message on bad options or inputs)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if "-h" in argv or "--help" in argv:  # fairseq's parser takes seconds to import: --help lists ours and names its
        help_parser("syntrans-preprocess", __doc__.splitlines()[0].replace("``", "")).print_help()
        return 0
    from ..data.binarization import SidecarError, check_usage, preprocess, preprocessing_parser  # lazy: fairseq
    parser = preprocessing_parser()
    args = parser.parse_args(argv)
    try:
        check_usage(args)
    except SidecarError as e:
        parser.error(str(e))
    try:
        preprocess(args, log=_print)
    except (SidecarError, ValueError, FileNotFoundError, FileExistsError) as e:
        print(f"syntrans-preprocess: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
