"""Parsing a text file into a parsed corpus (CoNLL-U with constituency comments): what ``syntrans-parse`` runs.

The input holds one segment per line. Tokenized input (the default) gives a line's tokens as its
whitespace-separated fields (Moses-tokenized text, escapes such as ``&apos;`` included); raw input
(``--raw``) is first tokenized with sacremoses ``MosesTokenizer(lang).tokenize(line, escape=False)`` and
the output words are those tokens. The output is CoNLL-U in the format of
:func:`syntrans.syntax.parsed.format_conllu`: every sentence carries ``# line = N`` (1-based line of the
full input) and ``# constituency = (ROOT …)``; the words of a line's sentences, concatenated, are exactly
the line's tokens, spelled as in the input; an empty line gets no sentence.

A line is one sentence, unless sentences are split (``--split-sentences``): then it is split after the
tokens ``.``, ``!``, ``?`` (see :func:`syntrans.parsing.trivial.split_sentences`); all its sentences keep
the line's number.

Parsers (:func:`make_parser`): ``stanza`` (pretokenized stanza pipeline with tokenize, mwt where the
language has it, pos, lemma, depparse, constituency; alignment of its words back to the tokens: see
:mod:`syntrans.parsing.stanza_parser`), or the model-free ``right-branching``, ``left-branching`` and
``flat`` (see :mod:`syntrans.parsing.trivial`). Without installed stanza models building the parser
raises :class:`~syntrans.parsing.stanza_parser.MissingModelsError` at once, saying how to install them;
nothing is ever downloaded here.

Failures (:func:`parse_lines`): lines are parsed ``batch_size`` at a time; when the parser raises on a
batch, its lines are parsed one by one, and a line that still fails gets the fallback parse
(right-branching tree, each word's head the next word, the last word the root) marked
``# parse_failed = REASON``; it is counted and listed with its line number in the summary and in the
``.done`` marker. Under ``strict`` such a failure is a :class:`StrictParseError` naming the line.

Shards (:class:`ParseJob` with ``num_shards`` N and ``shard_id`` K; :func:`parse_job`): shard K parses a
contiguous block of lines and writes ``OUTPUT.shard{K}of{N}`` plus a ``.done`` marker; a finished shard
is skipped on a re-run unless ``force``. When a shard finishes (or is skipped) and all N shards are
finished, they are merged into OUTPUT automatically (unless OUTPUT is newer than every shard's marker);
:func:`merge_finished` with ``explicit=True`` only merges (an :class:`~syntrans.parsing.shards.InputError`
naming the unfinished shards if any). See :mod:`syntrans.parsing.shards`.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from tqdm import tqdm

from ..syntax.parsed import ParsedSentence, format_conllu
from . import stanza_parser
from .shards import (
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
from .trivial import TrivialParser, fallback_parse, split_sentences

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
        return stanza_parser.StanzaParser(lang=lang, batch_size=batch_size, unescape=not raw)
    return TrivialParser(name)


def line_tokenizer(raw: bool, lang: str) -> Callable[[str], list[str]]:
    """A line's tokens: its whitespace-separated fields, or with ``raw`` sacremoses' tokens (escape=False)."""
    if not raw:
        return str.split
    from sacremoses import MosesTokenizer  # lazy: a slow import, needed only for raw input

    mt = MosesTokenizer(lang=lang)
    return lambda line: mt.tokenize(line, escape=False) if line.strip() else []


@dataclass
class ParseJob:
    """One ``syntrans-parse`` run: parse ``input`` (shard ``shard_id`` of ``num_shards``) into ``output``."""

    input: str
    output: str
    lang: str = "en"
    parser: str = "stanza"
    raw: bool = False
    split_sentences: bool = False
    batch_size: int = 64
    num_shards: int = 1
    shard_id: int = 0
    strict: bool = False
    force: bool = False


def _quiet(message: str) -> None:
    pass


def merge_finished(output: str, num_shards: int, explicit: bool = False, log: Callable[[str], None] = _quiet) -> None:
    """Merge the shards of ``output`` into it once all are finished.

    ``explicit`` (``--merge``): merge now, an InputError naming the unfinished shards if any; otherwise merge
    only when every shard is finished and ``output`` is older than the newest shard marker.
    """
    if num_shards == 1:
        return
    missing = missing_shards(output, num_shards)
    if missing and not explicit:
        log(f"{num_shards - len(missing)} of {num_shards} shards finished; {output} is "
            f"merged once all are (or run with --merge)")
        return
    if not explicit and os.path.exists(output):
        newest = max(os.path.getmtime(marker_path(shard_path(output, k, num_shards))) for k in range(num_shards))
        if os.path.getmtime(output) >= newest:
            log(f"{output} is already merged from its {num_shards} finished shards")
            return
    t0 = time.time()
    totals = merge_shards(output, num_shards)
    log(f"merged {num_shards} shards into {output}: lines={totals['lines']} "
        f"sentences={totals['sentences']} words={totals['words']} failures={totals['n_failures']} "
        f"seconds={time.time() - t0:.2f}")


def parse_job(job: ParseJob, log: Callable[[str], None] = _quiet) -> None:
    """Parse ``job.input`` (its shard) into ``job.output`` (its shard file) with a ``.done`` marker, then merge the
    shards when all are finished. A shard finished with the same settings is skipped unless ``job.force``.

    ``log`` gets the messages (skips, failed lines, the summary, merges). Raises MissingModelsError (before any
    input is read), InputError (a bad input file) and StrictParseError (a failure under ``job.strict``).
    """
    out_path = shard_path(job.output, job.shard_id, job.num_shards)
    settings = {"input": os.path.abspath(job.input), "input_bytes": os.path.getsize(job.input),
                "num_shards": job.num_shards, "shard_id": job.shard_id, "parser": job.parser,
                "lang": job.lang, "raw": job.raw, "split_sentences": job.split_sentences}
    finished, why = is_finished(out_path, settings)
    if finished and not job.force:
        log(f"skipped shard {job.shard_id} of {job.num_shards}: {out_path} is already finished "
            f"({marker_path(out_path)} exists; --force redoes it)")
        merge_finished(job.output, job.num_shards, explicit=False, log=log)
        return
    if why:
        log(f"{why}: parsing it again")

    parser = make_parser(job.parser, job.lang, job.batch_size, job.raw)  # fails here when models are missing
    t0 = time.time()
    n_lines = count_lines(job.input)
    start, stop = shard_range(n_lines, job.num_shards, job.shard_id)
    tokenize = line_tokenizer(job.raw, job.lang)
    stats = Stats()
    if os.path.exists(marker_path(out_path)):
        os.remove(marker_path(out_path))  # a crash from here on must not leave a stale "finished" mark

    numbered = ((n, tokenize(text)) for n, text in iter_lines(job.input, start, stop))
    desc = "parse" if job.num_shards == 1 else f"parse shard {job.shard_id}/{job.num_shards}"
    with tqdm(total=stop - start, unit="line", desc=desc, file=sys.stderr,
              mininterval=1.0 if sys.stderr.isatty() else 30.0) as bar, atomic_writer(out_path) as f:
        for sentences in parse_lines(numbered, parser, job.batch_size, job.split_sentences, job.strict,
                                     stats, where=job.input, progress=bar.update):
            f.write(format_conllu(sentences))
    seconds = time.time() - t0
    write_marker(out_path, dict(settings, n_lines=n_lines, first_line=start + 1, last_line=stop,
                                lines=stats.lines, empty_lines=stats.empty, sentences=stats.sentences,
                                words=stats.words, n_failures=len(stats.failures),
                                failures=[[n, r] for n, r in stats.failures], seconds=round(seconds, 3)))
    for n, r in stats.failures[:MAX_LISTED_FAILURES]:
        log(f"parse failed on {job.input} line {n} (fallback parse written): {r}")
    if len(stats.failures) > MAX_LISTED_FAILURES:
        log(f"... and {len(stats.failures) - MAX_LISTED_FAILURES} more failed lines "
            f"(all listed in {marker_path(out_path)})")
    rng = f"lines {start + 1}-{stop} of {n_lines}" if stop > start else f"no lines of the {n_lines}"
    log(f"summary {out_path} ({rng}): lines={stats.lines} sentences={stats.sentences} words={stats.words} "
        f"failures={len(stats.failures)} seconds={seconds:.2f} (empty lines: {stats.empty})")
    merge_finished(job.output, job.num_shards, explicit=False, log=log)
