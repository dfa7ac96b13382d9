"""``syntrans-preprocess``: fairseq-preprocess, then syntax sidecars next to its output.

Takes every fairseq-preprocess flag, plus the parsed corpora of each split: ``--trainparse P``
(and ``--validparse``/``--testparse``, comma-separated like ``--validpref``) where ``P.{lang}.conllu``
(or ``P.{lang}.ptb``) parses the tokenized text that ``--trainpref`` holds after BPE. Sides with
no parse file get no sidecars. The work is :func:`syntrans.data.preprocess.preprocess`'s.
"""
from __future__ import annotations

import sys
from typing import List, Optional

from ..data.preprocess import SidecarError, check_usage, preprocess, preprocessing_parser


def _print(message: str) -> None:
    print(message, flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``syntrans-preprocess``; returns the exit status (2 with a message on bad options or inputs)."""
    parser = preprocessing_parser()
    args = parser.parse_args(argv)
    try:
        check_usage(args)
    except SidecarError as e:
        parser.error(str(e))
    try:
        preprocess(args, log=_print)
    except (SidecarError, ValueError, FileNotFoundError) as e:
        print(f"syntrans-preprocess: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
