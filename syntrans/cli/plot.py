"""``syntrans-plot``: figures of what a trained syntrans model does (needs matplotlib: ``pip install syntrans[plot]``).

Subcommands (one per kind of figure):

``gates``
    The syntax gates of a gated model (Hou et al.) as a layer × head heat map, with the matrix as TSV next to
    the image (``--out`` with suffix ``.tsv``). Either from a checkpoint run over a split of the data::

        syntrans-plot gates --checkpoint CKPT --data DATA_BIN [--split valid] [--max-sentences N] --out gates.png

    or from a fairseq training log (``--log-format simple``, ``tqdm`` or ``json``), the heat map of its last
    validation, and with ``--epochs-out`` each layer's mean gate over the epochs::

        syntrans-plot gates --log train.log --out gates.png [--epochs-out gates_epochs.png]

``sentence``
    One parsed sentence and what the methods compute from it (Hou et al. 2022, Fig. 1): (a) its constituency
    tree, (b) the syntactic distances between its words (Algorithm 1), (c) the hard and (d) the soft (Eq. 6–7,
    ``--tau``) local range masks, (e) the PASCAL weights N(j; p_i, σ²) (``--sigma``) with the dependency arcs.
    The sentence is tokenized text parsed here (``--parser``; stanza needs its models) or sentence N of a parsed
    corpus (CoNLL-U with or without ``# constituency`` trees, or PTB brackets; ``--sentence K`` picks one of several
    sentences on that line); without a tree only (e) is drawn. ``--matrices`` writes the drawn arrays (gaps, hard,
    soft, pascal, words) as .npz::

        syntrans-plot sentence "I swim across the river ." [--parser stanza --lang en] --out fig.png
        syntrans-plot sentence --parse test.tok.en.conllu --line 7 [--tau 10 --sigma 1] --out fig.png [--matrices m.npz]

``attention``
    A trained model's syntax heads on one sentence of a binarized split: per layer with syntax heads, each syntax
    head's attention matrix (queries × keys, subword tokens as labels) as the model computes it, the gold parent
    marked for LISA and DBSA heads (the Gaussian centre for PASCAL) with × the parent the head predicts next to it
    (the argmax; for DBSA of the layer's DBSA heads' mean, the subword heads ``fairseq-generate --print-syntax``
    prints), the gate G in the title of gated heads; decoder DBSA heads are run teacher-forced on the target. The
    summary line counts, per parse, the query rows whose predicted parent is the gold one::

        syntrans-plot attention --checkpoint CKPT --data DATA_BIN [--split test] [--sentence-index 0] --out fig.png \
            [--matrices m.npz]

Errors (a missing file, a log without gate values, a model without gates or syntax heads, a line without a
sentence, missing stanza models) are reported on stderr, exit status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

import numpy as np

from ..parsing.names import TRIVIAL_PARSERS
from .argtypes import positive_int as _positive
from .clean_exit import clean_main
from .read_folders import check_outputs_outside

PROG = "syntrans-plot"



def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, found {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, found {value}")
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

    s = sub.add_parser("sentence", help="one parsed sentence: tree, distances, local range masks, PASCAL weights",
                       description="The constituency tree, syntactic distances (Hou et al. 2022, Algorithm 1), hard and "
                                   "soft local range masks (Algorithm 2, Eq. 6-7) and PASCAL weights (Bugliarello & "
                                   "Okazaki 2020) of one sentence, parsed here or read from a parsed corpus.")
    s.add_argument("text", nargs="?", metavar="SENTENCE", help="tokenized words separated by spaces (quote them)")
    s.add_argument("--parser", choices=("stanza",) + TRIVIAL_PARSERS, default=None,
                   help="with SENTENCE: the parser (default: stanza, which needs its installed models)")
    s.add_argument("--lang", default=None, help="with SENTENCE and --parser stanza: the language (default: en)")
    s.add_argument("--parse", metavar="FILE", help="a parsed corpus (CoNLL-U of syntrans-parse, or PTB brackets)")
    s.add_argument("--line", type=_positive, metavar="N",
                   help="with --parse: the sentence of text line N (1-based; the '# line = N' comment)")
    s.add_argument("--sentence", type=_positive, default=None, metavar="K",
                   help="with --parse: the K-th sentence of that line when it holds several (default 1)")
    s.add_argument("--tau", type=_positive_float, default=10.0, help="temperature of the soft mask (Eq. 6-7; default 10)")
    s.add_argument("--sigma", type=_positive_float, default=1.0, help="PASCAL's Gaussian standard deviation (default 1)")
    s.add_argument("--out", required=True, metavar="FILE", help="the figure (.png, .pdf or .svg)")
    s.add_argument("--matrices", metavar="FILE.npz", help="also write the drawn arrays (gaps, hard, soft, pascal, words)")
    s.add_argument("--title", default=None, help="title of the figure (default: the sentence)")
    s.set_defaults(run=run_sentence)

    a = sub.add_parser("attention", help="a trained model's syntax heads on one sentence (attention matrices)",
                       description="Each syntax head's attention matrix on one sentence of a binarized split, as the "
                                   "model computes it (decoder DBSA heads teacher-forced on the target); the gold "
                                   "parent (○) and the predicted parent (×, the argmax) marked on LISA and DBSA heads.")
    a.add_argument("--checkpoint", required=True, metavar="CKPT", help="a fairseq checkpoint of a syntax_transformer")
    a.add_argument("--data", required=True, metavar="DATA_BIN", help="the data-bin folder (syntrans-preprocess)")
    a.add_argument("--split", default="test", help="the split holding the sentence (default: test)")
    a.add_argument("--sentence-index", type=_non_negative, default=0, metavar="I",
                   help="0-based index of the sentence in the split (line I+1 of its text; default 0)")
    a.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    a.add_argument("--out", required=True, metavar="FILE", help="the figure (.png, .pdf or .svg)")
    a.add_argument("--matrices", metavar="FILE.npz",
                   help="also write the drawn matrices, tokens, gold and predicted parents, and gates")
    a.add_argument("--title", default=None, help="title of the figure")
    a.set_defaults(run=run_attention)
    return p


def _fmt_mean(value: float) -> str:
    return "nan" if value != value else f"{value:.4f}"


def run_gates(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """``syntrans-plot gates``; returns the summary line."""
    from ..plots import gates as G  # lazy, like every figure's module: fairseq, torch or stanza (seconds), not for --help
    if args.checkpoint is not None:
        if args.data is None:
            parser.error("gates --checkpoint needs --data DATA_BIN")
        if args.epochs_out is not None:
            parser.error("--epochs-out needs a training log (--log); a checkpoint holds one point in time")
        check_outputs_outside({"--out": args.out, "--out (its TSV)": str(Path(args.out).with_suffix(".tsv"))},
                              {"--data": args.data}, PROG)
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


def run_sentence(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """``syntrans-plot sentence``; returns the summary line."""
    from ..parsing.stanza_parser import MissingModelsError
    from ..plots import sentence as S
    S.check_output_paths(args.out, args.matrices)
    if (args.text is None) == (args.parse is None):
        parser.error("sentence needs either SENTENCE (tokenized text to parse) or --parse FILE --line N, not both")
    if args.parse is not None:
        if args.line is None:
            parser.error("--parse needs --line N (the 1-based text line of the sentence)")
        for flag, value in (("--parser", args.parser), ("--lang", args.lang)):
            if value is not None:
                parser.error(f"{flag} goes with SENTENCE, not --parse (the corpus is parsed already)")
        parsed = S.sentence_from_corpus(args.parse, args.line, args.sentence or 1)
        source = f"{args.parse}, line {args.line}" + (f", sentence {args.sentence}" if args.sentence else "")
    else:
        for flag, value in (("--line", args.line), ("--sentence", args.sentence)):
            if value is not None:
                parser.error(f"{flag} goes with --parse FILE")
        name, lang = args.parser or "stanza", args.lang or "en"
        try:
            parsed = S.sentence_from_text(args.text, name, lang)
        except MissingModelsError as e:  # the message of syntrans-parse, under this command's name
            raise ValueError(str(e).replace("syntrans-parse: ", "", 1)) from None
        source = f"--parser {name}" + (f" --lang {lang}" if name == "stanza" else "")
    fig, matrices = S.plot_sentence(parsed, args.tau, args.sigma, title=args.title)
    out = S.save_figure(fig, args.out)
    written = str(out)
    if args.matrices is not None:
        S.save_matrices(args.matrices, {**matrices, "words": np.array(parsed.words, dtype=str)})
        written += f" and {args.matrices}"
    drawn = ", ".join(k for k in S.MATRIX_NAMES if k in matrices)
    gaps = f", distances {matrices['gaps'].tolist()}" if "gaps" in matrices else ", no constituency tree"
    deps = "" if "pascal" in matrices else ", no dependency heads"
    return (f"sentence: wrote {written}: {len(parsed.words)} words{gaps}{deps}; drew {drawn} "
            f"(tau {args.tau:g}, sigma {args.sigma:g}), from {source}")


def run_attention(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """``syntrans-plot attention``; returns the summary line."""
    from ..plots import attention as A
    from ..plots import sentence as S
    S.check_output_paths(args.out, args.matrices)  # a bad suffix is refused before the model is loaded
    check_outputs_outside({"--out": args.out, "--matrices": args.matrices}, {"--data": args.data}, PROG)
    attention = A.attention_from_checkpoint(args.checkpoint, args.data, args.split, args.sentence_index, args.device)
    fig, matrices = A.plot_attention(attention, title=args.title)
    out = S.save_figure(fig, args.out)
    written = str(out)
    if args.matrices is not None:
        S.save_matrices(args.matrices, A.attention_arrays(attention))
        written += f" and {args.matrices}"
    layers = sorted({(side, layer) for side, layer, _ in matrices})
    where = ", ".join(f"{side} layer {layer}" for side, layer in layers)
    agree = A.predicted_agreement(attention)
    parses = "".join(f"; {kind} {side} layer {layer}: predicted = gold on {hits}/{rows} rows"
                     for (side, layer, kind), (hits, rows) in agree.items())
    return (f"attention: wrote {written}: {len(matrices)} syntax heads ({where}) on sentence {args.sentence_index} of "
            f"split {args.split!r} ({len(attention.src_tokens)} source, {len(attention.tgt_tokens)} target tokens), "
            f"from {args.checkpoint}{parses}")


@clean_main(PROG)
def main(argv: Optional[List[str]] = None) -> int:
    """Run ``syntrans-plot``; returns the exit status (2 on errors, with a message on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
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
