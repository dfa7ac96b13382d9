"""``syntrans-average-checkpoints``: average the parameters of fairseq checkpoints into one checkpoint.

    syntrans-average-checkpoints --inputs ckpt/checkpoint8.pt ckpt/checkpoint9.pt ckpt/checkpoint10.pt --output avg.pt
    syntrans-average-checkpoints --inputs ckpt --num-epoch-checkpoints 5 --output avg.pt
    syntrans-average-checkpoints --inputs ckpt --num-update-checkpoints 5 [--checkpoint-upper-bound 50000] --output avg.pt

The element-wise mean of the models' parameters (float32 accumulation, cast back); integer buffers must be
equal, and so must the model configs (the first differing field is named; ``--allow-different-config`` averages
them anyway). Everything else comes from the last checkpoint (the newest with ``--num-*-checkpoints``), so the output
loads in fairseq-generate like any checkpoint. ``--output`` must not be one of the inputs (it would be lost; refused).
Exit status 0, or 2 with a message naming the file.
See :mod:`syntrans.checkpoints.average`.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional

from .argtypes import positive_int as _positive
from .clean_exit import clean_main

PROG = "syntrans-average-checkpoints"



def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Average the parameters of fairseq checkpoints.")
    p.add_argument("--inputs", nargs="+", required=True, metavar="PATH",
                   help="checkpoint files, or one directory with --num-epoch-checkpoints/--num-update-checkpoints")
    count = p.add_mutually_exclusive_group()
    count.add_argument("--num-epoch-checkpoints", type=_positive, metavar="N",
                       help="average the last N checkpoint{epoch}.pt of the directory")
    count.add_argument("--num-update-checkpoints", type=_positive, metavar="N",
                       help="average the last N checkpoint_{epoch}_{update}.pt of the directory")
    p.add_argument("--checkpoint-upper-bound", type=int, default=None, metavar="K",
                   help="with --num-*-checkpoints: only epochs (updates) up to K")
    p.add_argument("--output", required=True, metavar="FILE", help="the averaged checkpoint to write")
    p.add_argument("--allow-different-config", action="store_true",
                   help="average checkpoints whose model configs differ (refused by default, naming the first "
                        "differing field); the output keeps the last checkpoint's config")
    return p


def resolve_inputs(args, parser: argparse.ArgumentParser) -> List[str]:
    """The checkpoint files to average, oldest first."""
    from ..checkpoints.average import last_checkpoints  # lazy: torch (a second), not for --help
    n = args.num_epoch_checkpoints or args.num_update_checkpoints
    if n is None:
        if args.checkpoint_upper_bound is not None:
            parser.error("--checkpoint-upper-bound needs --num-epoch-checkpoints or --num-update-checkpoints")
        dirs = [p for p in args.inputs if os.path.isdir(p)]
        if dirs:
            parser.error(f"{dirs[0]} is a directory: name checkpoint files, or give --num-epoch-checkpoints N or "
                         "--num-update-checkpoints N")
        return list(args.inputs)
    if len(args.inputs) != 1:
        parser.error(f"with --num-*-checkpoints, --inputs must be one directory, found {len(args.inputs)} paths")
    return last_checkpoints(args.inputs[0], n, by_update=args.num_update_checkpoints is not None,
                            upper_bound=args.checkpoint_upper_bound)


def check_output(paths: List[str], output: str) -> None:
    """Refuse an ``--output`` that is one of the checkpoints averaged (ValueError): writing over it would lose it, and
    ``checkpoint_last.pt`` is where fairseq-train resumes."""
    for path in paths:
        if os.path.realpath(path) == os.path.realpath(output):
            why = " (fairseq-train's resume point)" if os.path.basename(path) == "checkpoint_last.pt" else ""
            raise ValueError(f"--output {output}: it is one of the --inputs ({path}{why}); {PROG} never writes over a "
                             "checkpoint it averages: choose another output file")


@clean_main(PROG)
def main(argv: Optional[List[str]] = None) -> int:
    """Run ``syntrans-average-checkpoints``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from ..checkpoints.average import average_checkpoints, save_checkpoint  # lazy: as in resolve_inputs
    from ..models.config_fields import model_fields  # lazy: fairseq's TransformerConfig
    t0 = time.perf_counter()
    try:
        paths = resolve_inputs(args, parser)
        check_output(paths, args.output)
        state = average_checkpoints(paths, config_fields=None if args.allow_different_config else model_fields)
        save_checkpoint(state, args.output)
    except (FileNotFoundError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr, flush=True)
        return 2
    n_params = sum(t.numel() for t in state["model"].values())
    print(f"{PROG}: averaged {len(paths)} checkpoints ({', '.join(os.path.basename(p) for p in paths)}) into "
          f"{args.output}: {len(state['model'])} tensors, {n_params} values, {time.perf_counter() - t0:.1f}s",
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
