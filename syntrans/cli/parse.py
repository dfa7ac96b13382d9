"""``syntrans-parse``: tokenized text in, parsed corpus (CoNLL-U with constituency comments) out.

INPUT holds one segment per line. With ``--tokenized`` (the default) a line's tokens are its
whitespace-separated fields (Moses-tokenized text, escapes such as ``&apos;`` included); with
``--raw`` each line is first tokenized with sacremoses ``MosesTokenizer(lang).tokenize(line,
escape=False)`` and the output words are those tokens. The output is CoNLL-U in the format of
:func:`syntrans.syntax.parsed.format_conllu`: every sentence carries ``# line = N`` (1-based line of
the full INPUT) and ``# constituency = (ROOT …)``; the words of a line's sentences, concatenated, are
exactly the line's tokens, spelled as in the input; an empty line gets no sentence.

A line is one sentence, unless ``--split-sentences``: then it is split after the tokens ``.``, ``!``,
``?`` (see :func:`syntrans.parsing.trivial.split_sentences`); all its sentences keep the line's number.

Parsers: ``stanza`` (default; pretokenized stanza pipeline with tokenize, mwt where the language has
it, pos, lemma, depparse, constituency; alignment of its words back to the tokens: see
:mod:`syntrans.parsing.stanza_parser`), or the model-free ``right-branching``, ``left-branching`` and
``flat`` (see :mod:`syntrans.parsing.trivial`). Without installed stanza models the command stops at
once (exit status 2) and says how to install them; it never downloads anything itself.

Failures: lines are parsed ``--batch-size`` at a time; when the parser raises on a batch, its lines
are parsed one by one, and a line that still fails gets the fallback parse (right-branching tree,
each word's head the next word, the last word the root) marked ``# parse_failed = REASON``; it is
counted and listed with its line number in the summary and in the ``.done`` marker. ``--strict``
makes such a failure an error (exit status 1) naming the line.

Shards (``--num-shards N --shard-id K``): shard K parses a contiguous block of lines and writes
``OUTPUT.shard{K}of{N}`` plus a ``.done`` marker; a finished shard is skipped on a re-run unless
``--force``. When a shard finishes (or is skipped) and all N shards are finished, they are merged
into OUTPUT automatically (unless OUTPUT is newer than every shard's marker); ``--merge`` only merges
(an error naming the unfinished shards if any).
See :mod:`syntrans.parsing.shards`.

Exit status: 0 success, 1 parse failure under ``--strict`` or an unfinished merge, 2 usage, input
or missing-model error.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ..parsing.shards import (
    InputError,
    atomic_writer,
    count_lines,
    is_finished,
    iter_lines,
    marker_path,
    merge_shards,
    missing_shards,
    shard_path,
    shard_range,
    write_marker,
)
from ..parsing.trivial import KINDS, TrivialParser, fallback_parse, split_sentences
from ..syntax.parsed import ParsedSentence, format_conllu

PARSERS = ("stanza",) + KINDS
MAX_LISTED_FAILURES = 20


class StrictParseError(RuntimeError):
    """A parser failure under ``--strict``; the message names the file and line."""


@dataclass
class Stats:
    lines: int = 0
    empty: int = 0
    sentences: int = 0
    words: int = 0
    failures: list[tuple[int, str]] = field(default_factory=list)


def _reason(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _parse_group(parser, group: Sequence[tuple[int, list[list[str]]]], strict: bool, stats: Stats,
                 where: str) -> list[ParsedSentence]:
    """Parse the sentences of some lines at once; on an exception retry line by line, then fall back."""
    flat = [s for _, sents in group for s in sents]
    try:
        parsed = parser.parse_batch(flat)
        if len(parsed) != len(flat):
            raise ValueError(f"the parser returned {len(parsed)} parses for {len(flat)} sentences")
        for p, toks in zip(parsed, flat):
            if list(p.words) != list(toks):
                raise ValueError(f"the parser's words {p.words[:8]} are not the input tokens {toks[:8]}")
            p.validate(where)
    except Exception as e:  # one bad line must not sink its batch
        if len(group) > 1:
            out: list[ParsedSentence] = []
            for item in group:
                out.extend(_parse_group(parser, [item], strict, stats, where))
            return out
        line = group[0][0]
        reason = _reason(e)
        if strict:
            raise StrictParseError(f"{where}, line {line}: the parser failed: {reason} "
                                   f"(without --strict this line would get the fallback parse, marked "
                                   f"'# parse_failed')") from e
        stats.failures.append((line, reason))
        return [fallback_parse(s, reason, line=line) for s in group[0][1]]
    out = []
    k = 0
    for line, sents in group:
        for _ in sents:
            parsed[k].line = line
            out.append(parsed[k])
            k += 1
    return out


def parse_lines(lines: Iterable[tuple[int, list[str]]], parser, batch_size: int = 64,
                split: bool = False, strict: bool = False, stats: Stats | None = None,
                where: str = "input", progress: Callable[[int], None] | None = None
                ) -> Iterator[list[ParsedSentence]]:
    """Parse (line number, tokens) pairs ``batch_size`` lines at a time; yields each batch's sentences.

    Empty lines give no sentence. ``parser`` has ``parse_batch(list of token lists) -> parses``.
    ``progress(k)`` is called with the number of lines done after each batch.
    """
    stats = stats if stats is not None else Stats()
    batch: list[tuple[int, list[list[str]]]] = []
    pending = 0

    def flush():
        out = _parse_group(parser, batch, strict, stats, where) if batch else []
        stats.sentences += len(out)
        stats.words += sum(len(s.words) for s in out)
        return out

    for line, tokens in lines:
        stats.lines += 1
        pending += 1
        if not tokens:
            stats.empty += 1
        else:
            batch.append((line, split_sentences(tokens) if split else [list(tokens)]))
        if pending >= batch_size:
            yield flush()
            if progress:
                progress(pending)
            batch, pending = [], 0
    if pending:
        yield flush()
        if progress:
            progress(pending)


def make_parser(name: str, lang: str, batch_size: int, raw: bool):
    """The parser object for ``--parser name`` (stanza: may raise MissingModelsError at once)."""
    if name == "stanza":
        # StanzaParser builds its pipeline with stanza_parser.make_pipeline, looked up at call time
        # so that tests can monkeypatch it
        from ..parsing import stanza_parser

        return stanza_parser.StanzaParser(lang=lang, batch_size=batch_size, unescape=not raw)
    return TrivialParser(name)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="syntrans-parse", description=__doc__.splitlines()[0].replace("``", ""),
        epilog="Output conventions, the alignment of stanza's words to the tokens, the failure fallback "
               "and the shard files are described in the module docs of syntrans.cli.parse.")
    p.add_argument("input", metavar="INPUT", help="text file, one segment per line")
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="parsed corpus to write (CoNLL-U)")
    p.add_argument("--lang", default="en", help="language code for stanza and --raw tokenization (default: en)")
    p.add_argument("--parser", choices=PARSERS, default="stanza", help="parser (default: stanza)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--tokenized", dest="raw", action="store_false",
                      help="INPUT is Moses-tokenized, tokens separated by spaces (default)")
    mode.add_argument("--raw", dest="raw", action="store_true",
                      help="INPUT is raw text: tokenize each line with sacremoses (escape=False); "
                           "the output words are those tokens")
    p.set_defaults(raw=False)
    p.add_argument("--split-sentences", action="store_true",
                   help="split a line into sentences after '.', '!', '?' tokens (all keep the line number)")
    p.add_argument("--batch-size", type=int, default=64, help="lines per parser call (default: 64)")
    p.add_argument("--num-shards", type=int, default=1, help="split INPUT into N contiguous shards (default: 1)")
    p.add_argument("--shard-id", type=int, default=0, help="which shard this run parses, 0..N-1 (default: 0)")
    p.add_argument("--merge", action="store_true",
                   help="only merge the finished shards OUTPUT.shard{K}of{N} into OUTPUT")
    p.add_argument("--strict", action="store_true", help="a parser failure is an error instead of a fallback parse")
    p.add_argument("--force", action="store_true", help="redo a shard even when it is already finished")
    return p


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _info(msg: str) -> None:
    print(f"syntrans-parse: {msg}", file=sys.stderr, flush=True)


def _tokenizer(raw: bool, lang: str) -> Callable[[str], list[str]]:
    if not raw:
        return str.split
    from sacremoses import MosesTokenizer

    mt = MosesTokenizer(lang=lang)
    return lambda line: mt.tokenize(line, escape=False) if line.strip() else []


def _maybe_merge(args, explicit: bool) -> int:
    if args.num_shards == 1:
        return 0
    missing = missing_shards(args.output, args.num_shards)
    if missing and not explicit:
        _info(f"{args.num_shards - len(missing)} of {args.num_shards} shards finished; {args.output} is "
              f"merged once all are (or run with --merge)")
        return 0
    if not explicit and os.path.exists(args.output):
        newest = max(os.path.getmtime(marker_path(shard_path(args.output, k, args.num_shards)))
                     for k in range(args.num_shards))
        if os.path.getmtime(args.output) >= newest:
            _info(f"{args.output} is already merged from its {args.num_shards} finished shards")
            return 0
    t0 = time.time()
    totals = merge_shards(args.output, args.num_shards)
    _info(f"merged {args.num_shards} shards into {args.output}: lines={totals['lines']} "
          f"sentences={totals['sentences']} words={totals['words']} failures={totals['n_failures']} "
          f"seconds={time.time() - t0:.2f}")
    return 0


def run(args) -> int:
    """Run one ``syntrans-parse`` invocation with parsed arguments; returns the exit status."""
    if args.merge:
        return _maybe_merge(args, explicit=True)
    out_path = shard_path(args.output, args.shard_id, args.num_shards)
    settings = {"input": os.path.abspath(args.input), "input_bytes": os.path.getsize(args.input),
                "num_shards": args.num_shards, "shard_id": args.shard_id, "parser": args.parser,
                "lang": args.lang, "raw": args.raw, "split_sentences": args.split_sentences}
    finished, why = is_finished(out_path, settings)
    if finished and not args.force:
        _info(f"skipped shard {args.shard_id} of {args.num_shards}: {out_path} is already finished "
              f"({marker_path(out_path)} exists; --force redoes it)")
        return _maybe_merge(args, explicit=False)
    if why:
        _info(f"{why}: parsing it again")

    parser = make_parser(args.parser, args.lang, args.batch_size, args.raw)  # fails here when models are missing
    t0 = time.time()
    n_lines = count_lines(args.input)
    start, stop = shard_range(n_lines, args.num_shards, args.shard_id)
    tokenize = _tokenizer(args.raw, args.lang)
    stats = Stats()
    if os.path.exists(marker_path(out_path)):
        os.remove(marker_path(out_path))  # a crash from here on must not leave a stale "finished" mark

    from tqdm import tqdm

    numbered = ((n, tokenize(text)) for n, text in iter_lines(args.input, start, stop))
    desc = "parse" if args.num_shards == 1 else f"parse shard {args.shard_id}/{args.num_shards}"
    with tqdm(total=stop - start, unit="line", desc=desc, file=sys.stderr,
              mininterval=1.0 if sys.stderr.isatty() else 30.0) as bar, atomic_writer(out_path) as f:
        for sentences in parse_lines(numbered, parser, args.batch_size, args.split_sentences, args.strict,
                                     stats, where=args.input, progress=bar.update):
            f.write(format_conllu(sentences))
    seconds = time.time() - t0
    write_marker(out_path, dict(settings, n_lines=n_lines, first_line=start + 1, last_line=stop,
                                lines=stats.lines, empty_lines=stats.empty, sentences=stats.sentences,
                                words=stats.words, n_failures=len(stats.failures),
                                failures=[[n, r] for n, r in stats.failures], seconds=round(seconds, 3)))
    for n, r in stats.failures[:MAX_LISTED_FAILURES]:
        _info(f"parse failed on {args.input} line {n} (fallback parse written): {r}")
    if len(stats.failures) > MAX_LISTED_FAILURES:
        _info(f"... and {len(stats.failures) - MAX_LISTED_FAILURES} more failed lines "
              f"(all listed in {marker_path(out_path)})")
    rng = f"lines {start + 1}-{stop} of {n_lines}" if stop > start else f"no lines of the {n_lines}"
    _info(f"summary {out_path} ({rng}): lines={stats.lines} sentences={stats.sentences} words={stats.words} "
          f"failures={len(stats.failures)} seconds={seconds:.2f} (empty lines: {stats.empty})")
    return _maybe_merge(args, explicit=False)


def main(argv: list[str] | None = None) -> int:
    """Run ``syntrans-parse``; returns the exit status (see the module docs)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.batch_size < 1:
        ap.error(f"--batch-size must be at least 1, found {args.batch_size}")
    try:
        shard_range(0, args.num_shards, args.shard_id)
    except ValueError as e:
        ap.error(str(e))
    if not args.merge:
        if not os.path.isfile(args.input):
            _err(f"syntrans-parse: {args.input}: expected an existing text file (INPUT), found "
                 f"{'a directory' if os.path.isdir(args.input) else 'nothing'}")
            return 2
        if os.path.abspath(args.input) == os.path.abspath(args.output):
            ap.error(f"OUTPUT must differ from INPUT, found {args.output} for both")
        out_dir = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(out_dir):
            _err(f"syntrans-parse: {args.output}: expected an existing output directory {out_dir}, found nothing; "
                 f"create it first")
            return 2
    from ..parsing.stanza_parser import MissingModelsError

    try:
        return run(args)
    except MissingModelsError as e:
        _err(str(e))
        return 2
    except InputError as e:
        _err(f"syntrans-parse: {e}")
        return 2 if not args.merge else 1
    except StrictParseError as e:
        _err(f"syntrans-parse: {e}")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
