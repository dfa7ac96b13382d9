"""``syntrans-plot``: figures of what a trained syntrans model does (needs matplotlib: ``pip install syntrans[plot]``).

Subcommands (one per kind of figure; more to come, e.g. ``sentence`` and ``attention``):

``gates``
    The syntax gates of a gated model (Hou et al.) as a layer × head heat map, with the matrix as TSV next to
    the image (``--out`` with suffix ``.tsv``). Either from a checkpoint run over a split of the data::

        syntrans-plot gates --checkpoint CKPT --data DATA_BIN [--split valid] [--max-sentences N] --out gates.png

    or from a fairseq training log (``--log-format simple``, ``tqdm`` or ``json``), the heat map of its last
    validation, and with ``--epochs-out`` each layer's mean gate over the epochs::

        syntrans-plot gates --log train.log --out gates.png [--epochs-out gates_epochs.png]

Errors (a missing file, a log without gate values, a model without gates) are reported on stderr, exit status 2.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import List, Optional

PROG = "syntrans-plot"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, found {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    p = argparse.ArgumentParser(prog=PROG, description="Figures of what a trained syntrans model does.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    g = sub.add_parser("gates", help="syntax gates per encoder layer x head (heat map + TSV; per epoch from a log)",
                       description="Heat map of the mean syntax gate per encoder layer x head of a gated model, from a "
                                   "checkpoint run over a data split or from the last validation of a training log.")
    source = g.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", metavar="CKPT", help="a fairseq checkpoint of a gated syntax_transformer")
    source.add_argument("--log", metavar="TRAIN_LOG", help="a fairseq-train log (--log-format simple, tqdm or json)")
    g.add_argument("--data", metavar="DATA_BIN", help="with --checkpoint: the data-bin folder (syntrans-preprocess)")
    g.add_argument("--split", default=None,
                   help="with --checkpoint: the split to run (default: valid); with --log: only this validation subset")
    g.add_argument("--max-sentences", type=_positive, default=None, metavar="N",
                   help="with --checkpoint: sentences per batch (every sentence of the split is run)")
    g.add_argument("--max-tokens", type=_positive, default=None, metavar="N",
                   help="with --checkpoint: tokens per batch (default 4096 when --max-sentences is not given)")
    g.add_argument("--device", default=None, help="with --checkpoint: cpu or cuda (default: cuda when available)")
    g.add_argument("--out", required=True, metavar="FILE", help="the heat map (.png, .pdf or .svg); the TSV goes next to it")
    g.add_argument("--epochs-out", metavar="FILE", help="with --log: each layer's mean gate per epoch (.png, .pdf or .svg)")
    g.add_argument("--title", default=None, help="title of the heat map")
    g.set_defaults(run=run_gates)
    return p


def _fmt_mean(value: float) -> str:
    return "nan" if value != value else f"{value:.4f}"


def run_gates(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """``syntrans-plot gates``; returns the summary line."""
    from ..plots import gates as G

    if args.checkpoint is not None:
        if args.data is None:
            parser.error("gates --checkpoint needs --data DATA_BIN")
        if args.epochs_out is not None:
            parser.error("--epochs-out needs a training log (--log); a checkpoint holds one point in time")
        split = args.split or "valid"
        matrix = G.gate_matrix_from_checkpoint(args.checkpoint, args.data, split, max_sentences=args.max_sentences,
                                               max_tokens=args.max_tokens, device=args.device)
        source = f"{args.checkpoint} on split {split!r}"
        title = args.title if args.title is not None else f"mean syntax gate: {Path(args.checkpoint).name}, {split}"
    else:
        for flag, value in (("--data", args.data), ("--max-sentences", args.max_sentences),
                            ("--max-tokens", args.max_tokens), ("--device", args.device)):
            if value is not None:
                parser.error(f"{flag} goes with --checkpoint, not --log")
        history = G.gate_history_from_log(args.log, subset=args.split)
        epoch, updates, matrix = history[-1]
        when = ", ".join(x for x in (f"epoch {epoch}" if epoch is not None else "",
                                     f"{updates} updates" if updates is not None else "") if x)
        source = f"{args.log}, last of {len(history)} validations ({when or 'no epoch logged'})"
        title = args.title if args.title is not None else f"mean syntax gate: {Path(args.log).name}, {when or 'last validation'}"
    out = Path(args.out)
    G.plot_gate_heatmap(matrix, out, title=title)
    written = f"{out} and {out.with_suffix('.tsv')}"
    if args.log is not None and args.epochs_out is not None:
        G.plot_gate_epochs(history, args.epochs_out)
        written += f" and {args.epochs_out} ({len(G.last_per_epoch(history))} epochs)"
    gated = int((matrix == matrix).sum())
    return (f"gates: wrote {written}: {matrix.shape[0]}x{matrix.shape[1]} matrix (layers x heads, {gated} gated), "
            f"mean gate {_fmt_mean(G.mean_gate(matrix))}, from {source}")


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``syntrans-plot``; returns the exit status (2 on errors, with a message on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("matplotlib", "PIL"):  # importing fairseq sets the root logger to DEBUG (its text_to_speech task)
        if logging.getLogger(name).level == logging.NOTSET:
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        summary = args.run(args, parser)
    except ModuleNotFoundError as e:
        if e.name != "matplotlib" and not str(e.name or "").startswith("matplotlib."):
            raise
        print(f"{PROG} {args.command}: error: matplotlib is needed for plots: pip install 'syntrans[plot]'", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError) as e:
        print(f"{PROG} {args.command}: error: {e}", file=sys.stderr)
        return 2
    print(summary, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
