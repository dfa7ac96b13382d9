"""``python -m syntrans.cli.checkpoint_flags CHECKPOINT``: the Transformer flags a fairseq checkpoint (a released
mBART-50, M2M-100 or NLLB-200 model, or any other) was trained with, on one line, for the fairseq-train command that
starts a syntax model from it (:mod:`syntrans.tasks.trained_flags`)."""
from __future__ import annotations

import argparse
import shlex
import sys
from typing import List, Optional

from .clean_exit import clean_main


@clean_main("checkpoint_flags")
def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m syntrans.cli.checkpoint_flags", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    args = parser.parse_args(argv)
    import syntrans  # noqa: F401  (allow-lists fairseq's checkpoint classes; registers NLLB's architecture names)
    from ..tasks.trained_flags import transformer_flags

    try:
        print(" ".join(shlex.quote(x) for x in transformer_flags(args.checkpoint)))
    except (ValueError, FileNotFoundError) as e:
        print(f"checkpoint_flags: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
