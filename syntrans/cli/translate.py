"""``syntrans-translate``: translate raw text with a trained model, streaming stdin → stdout in batches.

    syntrans-translate --checkpoint ckpt/checkpoint_best.pt --data data-bin --bpe-codes codes < in.de > out.en

Reads ``--batch-size`` lines, translates them, writes and flushes their translations, and goes on, so it works in
a pipe; one output line per input line, in order (an empty line gives an empty line, reported on stderr). Each
line is Moses-tokenized (``--no-tokenize``: it already is), parsed only when the model needs the source syntax at
generation (``--parser``: ``auto``/``stanza`` use the installed stanza models; ``right-branching``,
``left-branching``, ``flat`` need none; a sentence the parser fails on gets the right-branching fallback and is
reported with its line number), BPE-encoded with ``--bpe-codes``, translated with fairseq's beam search as
fairseq-generate does (``--beam``, ``--lenpen``, ``--max-len-a``, ``--max-len-b``), and the hypothesis is
BPE-removed and Moses-detokenized (``--no-detokenize``: left tokenized).

``--no-moses`` (with ``--bpe sentencepiece``): the model's corpus took the raw-text route (``syntrans-prepare --bpe
sentencepiece --no-moses``): the input is not Moses-tokenized, stanza tokenizes each line itself (each word's character
span kept, as in training), and the hypotheses, decoded from their pieces, are written as they are (no Moses
detokenization). Where the data-bin lies in a folder that ``syntrans-prepare`` made, its ``prepared.json`` says which
route the corpus took, and a run that asks for the other one is refused, naming both; so is a ``--bpe-codes`` or
``--sentencepiece-model`` that is not, by its sha256, the file the corpus was encoded with.

``--parse FILE``: the parses of the input lines (CoNLL-U or PTB brackets, as syntrans-preprocess reads them,
``# line = N`` tying sentences to input lines); the input is then taken as tokenized and nothing is parsed. Each
line's sentences must spell its tokens (a parser's respelling allowed): a parse with other words, even as many, is
no parse of the line.
A summary (sentences, empty lines, parse fallbacks, time) goes to stderr. Exit status 0, or 2 for a usage,
input or model error (a missing stanza model included: the message says how to install it), each one line
(:mod:`.clean_exit`); a closed pipe ends it quietly (141). No output may be one of the inputs, nor a file of the
``--data`` folder (:mod:`.read_folders`).

A line longer than the model takes (``--max-source-positions`` tokens, BPE pieces and EOS) stops the command, naming
the line, after the translations of every line before it are written; with ``--skip-invalid`` it is translated to an
empty line, reported on stderr and counted in the summary, and the command goes on. So does a line with words that
has no sentence in ``--parse FILE``, or whose sentences there have other words; the other lines of its batch are
translated either way.

``--print-syntax FILE`` / ``--print-target-syntax FILE``: the parse the model itself predicts of each source line
(encoder LISA or DBSA heads) / of its hypothesis (decoder DBSA heads, as computed while decoding), word-level CoNLL-U
with ``# line = N``, one sentence per line that has words. Each subword's predicted parent is the argmax of its
attention row (DBSA: of the layer's DBSA heads' mean), collapsed to words with the convention the heads were trained
on (:func:`syntrans.syntax.heads.word_heads`: DBSA reads each word's last piece, LISA its first); it is not decoded
into a tree. A word whose head points inside itself, or at EOS (source) / BOS (target), gets HEAD 0 with DEPREL
``dep:self`` / ``dep:eos``. With several parse layers on a side, the last is written (the deepest; DBSA after LISA
within one layer), named in the summary. With ``--parse``, the source word UAS against it is in the summary. A model
without parse heads on the asked side is refused before any input is read.
"""
from __future__ import annotations

import argparse
import ast
import itertools
import os
import sys
import time
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, TextIO

from ..parsing.names import AUTO_PARSERS as PARSER_CHOICES
from .argtypes import positive_int as _positive
from .clean_exit import clean_main
from .read_folders import check_outputs_outside

if TYPE_CHECKING:
    from ..hub.predicted_syntax import Translation

PROG = "syntrans-translate"



def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Translate raw text with a trained model, streaming stdin → stdout.",
                                epilog="Details: the module docs of syntrans.cli.translate and syntrans.hub.")
    p.add_argument("--checkpoint", required=True, metavar="CKPT", help="fairseq checkpoint (e.g. ckpt/checkpoint_best.pt)")
    p.add_argument("--data", required=True, metavar="DATA_BIN", help="data-bin folder with the dictionaries (dict.*.txt)")
    p.add_argument("--bpe-codes", metavar="CODES", help="subword-nmt BPE codes the training data used (--bpe subword_nmt)")
    p.add_argument("--bpe", choices=("subword_nmt", "sentencepiece"), default="subword_nmt",
                   help="the segmentation of the training data (fairseq's name; default: %(default)s)")
    p.add_argument("--sentencepiece-model", metavar="FILE",
                   help="--bpe sentencepiece: the model the training text was encoded with (syntrans-prepare's "
                        "OUT/bpe/spm.model); the input is raw text, Moses-tokenized as the training text was, unless "
                        "--no-tokenize (already tokenized) or --no-moses (a corpus of the raw-text route)")
    p.add_argument("--bpe-marker", default="@@", help="BPE continuation marker (default: @@)")
    p.add_argument("--parser", choices=PARSER_CHOICES, default="auto",
                   help="source parser when the model needs one (default: auto = stanza with installed models)")
    p.add_argument("--parser-lang", default=None, help="stanza language (default: the source language)")
    p.add_argument("--parse", metavar="FILE", default=None,
                   help="parses of the input lines (CoNLL-U/PTB); the input is then tokenized text, not re-parsed")
    p.add_argument("--binarize-trees", action="store_true",
                   help="the training data was binarized with syntrans-preprocess --binarize-trees")
    p.add_argument("--source-lang", default=None, help="default: the checkpoint's task config")
    p.add_argument("--target-lang", default=None, help="default: the checkpoint's task config")
    p.add_argument("--beam", type=_positive, default=5, help="beam size (default: 5)")
    p.add_argument("--lenpen", type=float, default=1.0, help="length penalty (default: 1.0)")
    p.add_argument("--max-len-a", type=float, default=0, help="max length = a·source length + b (default a: 0)")
    p.add_argument("--max-len-b", type=int, default=200, help="(default b: 200)")
    p.add_argument("--batch-size", type=_positive, default=32, help="lines per batch (default: 32)")
    p.add_argument("--lowercase", action="store_true", help="lowercase the input (for a lowercased training corpus)")
    p.add_argument("--no-tokenize", action="store_true", help="the input is Moses-tokenized already")
    p.add_argument("--no-detokenize", action="store_true", help="write tokenized hypotheses (BPE removed)")
    p.add_argument("--no-moses", action="store_true",
                   help="--bpe sentencepiece: the corpus took the raw-text route (syntrans-prepare --no-moses): no Moses "
                        "tokenization nor detokenization; the parser tokenizes each raw line itself")
    p.add_argument("--model-overrides", default="{}",
                   help="like fairseq-generate's, e.g. \"{'lisa': {'gold_parents': True}}\" (a mechanism's fields also "
                        "by their flat names, e.g. 'lisa_gold_parents')")
    p.add_argument("--skip-invalid", action="store_true",
                   help="translate a line longer than the model takes to an empty line, reported on stderr, and go on "
                        "(default: stop at it, after writing the translations of the lines before it)")
    p.add_argument("--input", metavar="FILE", default=None, help="input text (default: stdin)")
    p.add_argument("--output", metavar="FILE", default=None, help="output text (default: stdout)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--print-syntax", metavar="FILE", default=None,
                   help="write the source parse the model's encoder LISA/DBSA heads predict: word-level CoNLL-U, "
                        "'# line = N', one sentence per non-empty line; the argmax heads collapsed to words (DBSA: each "
                        "word's last subword, LISA: its first), not a decoded tree (HEAD 0 with DEPREL dep:self / dep:eos "
                        "for a head inside the word / at EOS); with several parse layers, the last. With --parse, the "
                        "source word UAS against it goes into the summary")
    p.add_argument("--print-target-syntax", metavar="FILE", default=None,
                   help="write the hypothesis parse the model's decoder DBSA heads predict while decoding, as "
                        "--print-syntax (dep:eos: a head at BOS); with several DBSA decoder layers, the last")
    return p


def _info(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def line_batches(stream: TextIO, size: int) -> Iterator[List[str]]:
    """Lists of up to ``size`` lines (line ends removed) as they arrive."""
    while True:
        lines = list(itertools.islice(stream, size))
        if not lines:
            return
        yield [line.rstrip("\n").rstrip("\r") for line in lines]


def read_parse_file(path: str) -> Dict[int, list]:
    """line number → its parsed sentences, from a parsed corpus (errors name the file). Dependency heads that are no
    tree get the chain fallback, reported, as syntrans-preprocess gives them without --strict."""
    from ..syntax.parsed import read_parsed  # lazy: stanza's trees (seconds), not for --help
    from ..syntax.tree_checks import gate_heads
    by_line: Dict[int, list] = {}
    for k, s in enumerate(read_parsed(path)):
        where = f"{path}, sentence {k + 1} (line {s.line} of the input)"
        fault = gate_heads(s, where, strict=False)  # the one gate: the chain fallback, reported
        if fault:
            _info(f"{where}: the dependency heads are no tree: {fault}; the chain fallback is used (each word headed by "
                  "the next)")
        by_line.setdefault(s.line, []).append(s)
    return by_line


def _parses_of(by_line: Dict[int, list], lines: List[str], first: int, path: str, name: str, translator=None):
    """(the parses of ``lines`` in order, {index in ``lines``: what is wrong} for the lines whose parse is missing,
    stray or another line's: a line with words that has no sentence in ``path``, an empty line that has some, a line
    whose words are not those of its sentences (:func:`syntrans.hub.parsed_input.parse_fault`; ``translator``: its
    route and lowercasing))."""
    from ..hub.parsed_input import parse_fault  # lazy: as in read_parse_file
    out, faults = [], {}
    route = getattr(translator, "source", None)
    for k, line in enumerate(lines):
        n, sentences = first + k, by_line.get(first + k)
        if line.split() and not sentences:
            faults[k] = f"{name}, line {n}: {path} has no sentence for this line, which is not empty"
        elif not line.split() and sentences:
            faults[k] = f"{name}, line {n}: {path} has sentences for this line, which is empty"
        elif sentences:
            fault = parse_fault(line.split(), sentences, bool(route and route.route.char_spans),
                                bool(route and route.lowercase))
            if fault:
                faults[k] = f"{name}, line {n}: its sentences in {path} are not its parse: {fault}"
        out.append(sentences)
    return out, faults


def translate_batch(translator, lines: List[str], first: int, name: str, by_line: Optional[Dict[int, list]],
                    parse_file: Optional[str], skip_invalid: bool):
    """(translations, the error that stopped the batch or None, lines whose parse was missing or stray) of one batch.

    Without parses, the translator's own. With them, the lines between two faulty ones are translated together; a
    faulty line stops the batch after the lines before it, or with ``skip_invalid`` is translated to an empty line,
    reported, and the batch goes on: no line that can be translated is dropped with its batch. A line whose parse is
    another line's (other words) is such a faulty line."""
    from ..hub.predicted_syntax import Translation  # lazy: as in run()
    from ..hub.translator import LineTooLong
    done: List[Translation] = []
    if by_line is None:
        try:
            return translator.translate_syntax(lines, first_line=first, name=name), None, 0
        except LineTooLong as e:  # the lines before it are translated
            return e.done, e, 0
    parses, faults = _parses_of(by_line, lines, first, parse_file, name, translator)
    start, skipped = 0, 0
    for stop in sorted(faults) + [len(lines)]:
        if stop > start:
            try:
                done += translator.translate_parsed_syntax([line.split() for line in lines[start:stop]], parses[start:stop],
                                                           first_line=first + start, name=name)
            except LineTooLong as e:
                return done + e.done, e, skipped
        if stop == len(lines):
            break
        if not skip_invalid:
            return done, ValueError(faults[stop]), skipped
        _info(f"{faults[stop]}: translated to an empty line (--skip-invalid)")
        done.append(Translation(""))
        skipped, start = skipped + 1, stop + 1
    return done, None, skipped


def check_files(args) -> None:
    """Refuse a run that would write over one of its inputs (or write two outputs into one file), and a closed stdin or
    stdout, before the model is loaded."""
    needs = {"subword_nmt": ("--bpe-codes", args.bpe_codes), "sentencepiece": ("--sentencepiece-model",
                                                                                args.sentencepiece_model)}
    flag, value = needs[args.bpe]
    if not value:
        raise ValueError(f"--bpe {args.bpe} needs {flag}")
    other = {"--bpe-codes": args.bpe_codes, "--sentencepiece-model": args.sentencepiece_model}
    stray = [f for f, v in other.items() if v and f != flag]
    if stray:
        raise ValueError(f"{stray[0]} does not go with --bpe {args.bpe}")
    if args.no_moses and args.bpe != "sentencepiece":
        raise ValueError(f"--no-moses is the raw-text route of SentencePiece: expected --bpe sentencepiece, found --bpe "
                         f"{args.bpe}")
    if args.no_moses and args.no_tokenize:
        raise ValueError("--no-tokenize says the input is Moses-tokenized, --no-moses that the corpus is raw text: "
                         "expected one of them")
    check_route(args.data, args.no_moses)
    check_segmentation(args.data, args.bpe, value)  # the model prepared.json names, by content
    inputs = {"--input": args.input, "--parse": args.parse, "--checkpoint": args.checkpoint, flag: value}
    outputs = {"--output": args.output, "--print-syntax": args.print_syntax,
               "--print-target-syntax": args.print_target_syntax}
    check_outputs_outside(outputs, {"--data": args.data}, PROG)  # e.g. --output DATA/dict.src.txt
    seen: Dict[str, str] = {}
    for flag, path in [*inputs.items(), *outputs.items()]:
        if not path or path == "-":
            continue
        real = os.path.realpath(path)
        if real in seen and (flag in outputs or seen[real] in outputs):
            raise ValueError(f"{flag} {path}: the same file as {seen[real]}; {PROG} never writes over one of its inputs "
                             "nor writes two outputs into one file: choose another path")
        seen.setdefault(real, flag)
    if not args.input and sys.stdin is None:
        raise ValueError("stdin is closed: give the input lines on stdin (a pipe or a file) or with --input FILE")
    if not args.output and sys.stdout is None:
        raise ValueError("stdout is closed: give the output file with --output FILE")


def read_prepared(data: str):
    """(path, summary) of the ``prepared.json`` beside ``data`` when ``syntrans-prepare`` made the folder ``data``
    lies in (its ``data_bin`` is ``data``); (path, None) otherwise."""
    import json

    summary = os.path.join(os.path.dirname(os.path.abspath(data)), "prepared.json")
    try:
        with open(summary, encoding="utf-8") as f:
            prepared = json.load(f)
    except (OSError, ValueError):
        return summary, None
    if not isinstance(prepared, dict) or os.path.realpath(str(prepared.get("data_bin"))) != os.path.realpath(data):
        return summary, None
    return summary, prepared


def check_route(data: str, raw_text: bool) -> None:
    """Refuse a text route (``--no-moses`` or not) other than the one the corpus took, where ``data`` lies in a folder
    ``syntrans-prepare`` made: its ``prepared.json`` (beside ``data``) records ``text_route`` (absent: ``moses``,
    written before the raw-text route existed). A data-bin made otherwise is not checked."""
    summary, prepared = read_prepared(data)
    if prepared is None:
        return
    found = prepared.get("text_route", "moses")
    asked = "raw" if raw_text else "moses"
    if found != asked:
        said = {"raw": "the raw text (--no-moses)", "moses": "the Moses-tokenized text (no --no-moses)"}
        raise ValueError(f"{summary}: the corpus of {data} took the {found} route (SentencePiece on {said[found]}); this "
                         f"run asks for the {asked} route ({said[asked]}): expected the corpus's route, "
                         f"{'add' if found == 'raw' else 'drop'} --no-moses")


def check_segmentation(data: str, bpe: str, model: str) -> None:
    """Refuse a segmentation other than the corpus's, where ``data`` lies in a folder ``syntrans-prepare`` made: its
    ``prepared.json`` names the segmentation (``segmentation``) and the file the source side was encoded with
    (``codes_by_lang``); ``model`` (``--bpe-codes`` or ``--sentencepiece-model``) must be that file by content (its
    sha256), not only a file of the same kind: another corpus's model encodes the input into pieces the model never
    saw. Not checked where the named file is gone (the folder moved) or the data-bin was made otherwise."""
    summary, prepared = read_prepared(data)
    if prepared is None:
        return
    found = prepared.get("segmentation", "subword_nmt")
    flag = {"subword_nmt": "--bpe-codes", "sentencepiece": "--sentencepiece-model"}.get(bpe, bpe)
    if found != bpe:
        raise ValueError(f"{summary}: the corpus of {data} was segmented with {found}; this run asks for --bpe {bpe}: "
                         f"expected --bpe {found}")
    named = (prepared.get("codes_by_lang") or {}).get(prepared.get("src")) or prepared.get("codes")
    if not named or not os.path.isfile(named) or not os.path.isfile(model):
        return
    from pathlib import Path

    from ..prep.checksums import file_digest

    if os.path.realpath(named) == os.path.realpath(model):
        return
    want, got = file_digest(Path(named)).sha256, file_digest(Path(model)).sha256
    if want != got:
        raise ValueError(f"{flag} {model}: not the {found} model the corpus of {data} was encoded with ({named}, which "
                         f"{summary} names): expected that file (sha256 {want[:12]}…), found another (sha256 "
                         f"{got[:12]}…)")


def _write(stream: TextIO, text: str, path: str) -> None:
    """Write and flush ``text``; a write that fails (a full disk, a file system gone) names ``path``. A closed pipe
    stays a BrokenPipeError (the command then ends quietly, see :mod:`.clean_exit`)."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OSError(e.errno, f"cannot write there ({e.strerror})", path) from None


def _close(stream: TextIO) -> None:
    """Close a file after an error: a second error (the same full disk) would hide the first."""
    try:
        stream.close()
    except OSError:
        pass


def run(args) -> int:
    from ..hub.predicted_syntax import NoParseHeads  # lazy: fairseq and torch (seconds), not for --help
    from ..hub.translator import Translator
    t0 = time.perf_counter()
    check_files(args)
    try:
        overrides = ast.literal_eval(args.model_overrides)
    except (ValueError, SyntaxError) as e:
        raise ValueError(f"--model-overrides must be a Python dict literal, found {args.model_overrides!r} ({e})") from None
    if not isinstance(overrides, dict):
        raise ValueError(f"--model-overrides must be a Python dict literal, found {args.model_overrides!r}")
    files = {"source": args.print_syntax, "target": args.print_target_syntax}
    files = {side: path for side, path in files.items() if path}
    try:
        translator = Translator.from_checkpoint(
            args.checkpoint, args.data, args.bpe_codes, parser=None if args.parse else args.parser,
            source_lang=args.source_lang, target_lang=args.target_lang, beam=args.beam, lenpen=args.lenpen,
            max_len_a=args.max_len_a, max_len_b=args.max_len_b, batch_size=args.batch_size, device=args.device,
            lowercase=args.lowercase, tokenize=not (args.no_tokenize or args.parse), detokenize=not args.no_detokenize,
            parser_lang=args.parser_lang, binarize_trees=args.binarize_trees, bpe_marker=args.bpe_marker,
            model_overrides=overrides, log=_info, syntax=tuple(files), skip_invalid=args.skip_invalid,
            sentencepiece_model=args.sentencepiece_model if args.bpe == "sentencepiece" else None,
            raw_text=args.no_moses)
    except NoParseHeads as e:
        flag = {"source": "--print-syntax", "target": "--print-target-syntax"}
        raise ValueError(f"{' and '.join(flag[s] for s in files)}: {args.checkpoint}: {e}") from None
    by_line: Optional[Dict[int, list]] = None
    if args.parse:
        by_line = read_parse_file(args.parse)
        if not translator.needs_parse:
            _info(f"the model needs no source parse at generation: the parses in {args.parse} are only checked "
                  "against the input")
    t_load = time.perf_counter() - t0
    name = args.input or "stdin"
    out_name = args.output or "stdout"
    inp = open(args.input, encoding="utf-8") if args.input else sys.stdin
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    syntax_out = {side: open(path, "w", encoding="utf-8") for side, path in files.items()}
    uas = [0, 0]  # source word attachment: hits, words
    n = skipped = 0
    try:
        for lines in line_batches(inp, args.batch_size):
            done, stopped, bad = translate_batch(translator, lines, n + 1, name, by_line, args.parse, args.skip_invalid)
            _write(out, "".join(t.text + "\n" for t in done), out_name)
            write_parses(syntax_out, done, n + 1, uas, files)
            n, skipped = n + len(done), skipped + bad
            if stopped is not None:
                before = "line 1" if n == 1 else f"lines 1-{n}"
                written = f"the translations of {before} are written to {out_name}" if n else \
                    "no line was translated before it"
                raise ValueError(f"{stopped}; stopped there ({written}; --skip-invalid translates such a line to an "
                                 "empty line and goes on)")
    finally:
        for f in syntax_out.values():
            _close(f)
        if args.input:
            _close(inp)
        if args.output:
            _close(out)
    if by_line and max(by_line) > n:
        raise ValueError(f"{args.parse}: sentences for line {max(by_line)} but {name} has {n} lines")
    seconds = time.perf_counter() - t0
    source = "not needed" if not translator.needs_parse else (f"from {args.parse}" if args.parse else f"parser {args.parser}")
    too_long = f", {translator.too_long} too long for the model, written empty" if translator.too_long else ""
    missing = f", {skipped} without their parse, written empty" if skipped else ""
    _info(f"summary: {n} sentences ({translator.empty_lines} empty, {translator.parse_failures} parse fallbacks{too_long}"
          f"{missing}) in {seconds:.1f}s (loading {t_load:.1f}s, {n / max(seconds - t_load, 1e-9):.1f} sentences/s); "
          f"source parse: {source}")
    for side, path in files.items():
        what = "source" if side == "source" else "hypothesis"
        line = f"{what} parse {translator.parses[side].tag} written to {path}"
        if side == "source" and args.parse:
            line += (f"; source {translator.parses[side].tag} word UAS = {100 * uas[0] / max(uas[1], 1):.2f} "
                     f"({uas[0]}/{uas[1]} words) against {args.parse}")
        _info(line)
    return 0


def write_parses(streams: Dict[str, TextIO], done: List[Translation], first: int, uas: List[int],
                 paths: Optional[Dict[str, str]] = None) -> None:
    """Write one batch's predicted parses as CoNLL-U (``# line`` counted from ``first``; a line without words has no
    sentence) and add the source parse's attachment against the given parse to ``uas`` [hits, words]."""
    from ..syntax.heads import attachment  # lazy: as in read_parse_file
    from ..syntax.parsed import format_conllu
    for side, stream in streams.items():
        sentences = []
        for k, t in enumerate(done):
            parse = t.source if side == "source" else t.target
            if parse is not None and parse.words:
                sentences.append(parse.sentence(first + k))
            if side == "source" and parse is not None and t.gold is not None:
                hits, words = attachment(parse.heads, t.gold)
                uas[0] += hits
                uas[1] += words
        _write(stream, format_conllu(sentences), (paths or {}).get(side, side))


@clean_main(PROG)
def main(argv: Optional[List[str]] = None) -> int:
    """Run ``syntrans-translate``; returns the exit status (see the module docs)."""
    args = build_parser().parse_args(argv)
    for stream, given in ((sys.stdin, args.input), (sys.stdout, args.output)):
        if not given and hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    from ..parsing.stanza_parser import MissingModelsError  # lazy: stanza (seconds), not for --help
    try:
        return run(args)
    except MissingModelsError as e:
        print(f"{PROG}: {e}", file=sys.stderr, flush=True)
        return 2
    # any other error: one line naming the file (clean_main)


if __name__ == "__main__":
    raise SystemExit(main())
