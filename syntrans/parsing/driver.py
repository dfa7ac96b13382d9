"""Parsing a text file into a parsed corpus (CoNLL-U with constituency comments): what ``syntrans-parse`` runs.

The input holds one segment per line. Tokenized input (the default) gives a line's tokens as its
whitespace-separated fields (Moses-tokenized text, escapes such as ``&apos;`` included); raw input
(``--raw``) is first tokenized with sacremoses ``MosesTokenizer(lang).tokenize(line, escape=False)`` and
the output words are those tokens. The output is CoNLL-U in the format of
:func:`syntrans.syntax.parsed.format_conllu`: every sentence carries ``# line = N`` (1-based line of the
full input) and ``# constituency = (ROOT …)``; the words of a line's sentences, concatenated, are exactly
the line's tokens, spelled as in the input; an empty line gets no sentence.

Raw text with character spans (``char_spans``, ``--char-spans``): a line is taken as raw text, its whitespace made
single spaces (:func:`syntrans.syntax.word_spans.spanned_line`), and the parser tokenizes it itself: stanza's tokenizer
and sentence splitter (a line may give several sentences, all with the line's number), the model-free parsers its
whitespace-separated fields as one sentence. Every word carries its character span in that line (CoNLL-U MISC
``start_char=S|end_char=E``), and a line's words need not be its whitespace fields. A failed line gets the fallback
parse of its whitespace fields, with their spans. Not with ``--split-sentences`` (stanza splits) nor ``--raw``.

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

Views (``views``, :mod:`syntrans.data.parse_views`): a parse holds dependencies (``deps``), constituency trees
(``trees``) or both; the stanza pipeline runs only the processors of the views asked for, and a model-free parser's
output is cut to them. The ``.done`` marker records the views an output holds; asking an output for a view it lacks
parses that view alone and merges it into the output (:func:`~syntrans.syntax.parsed.combine_views`), sentence by
sentence, without parsing again what is there.

Device and workers: stanza runs on ``device`` (``cuda`` when torch sees a GPU, else ``cpu``) with the batch sizes of
:data:`~syntrans.parsing.stanza_parser.DEFAULT_BATCH_SIZES` for that device unless given; on CPU, ``workers`` > 1
parses batches in that many processes (each its own pipeline and ``cores ÷ workers`` torch threads), written in input
order, so the output is the same as one process's.

Shards (:class:`ParseJob` with ``num_shards`` N and ``shard_id`` K; :func:`parse_job`): shard K parses a
contiguous block of lines and writes ``OUTPUT.shard{K}of{N}`` plus a ``.done`` marker; a finished shard of the same
input content and settings is skipped on a re-run unless ``force`` (its missing views, if any, are added); a shard
that died mid-way resumes from its last checkpoint (``.partial``). When a shard finishes (or is skipped) and all N
shards are finished with the same views of the same input, they are merged into OUTPUT automatically (unless OUTPUT
is already that merge); :func:`merge_finished` with ``explicit=True`` only merges (an
:class:`~syntrans.parsing.shards.InputError` naming the unfinished shards if any). See :mod:`syntrans.parsing.shards`;
all shards as jobs of a launcher: :mod:`syntrans.parsing.cluster`.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

from tqdm import tqdm

from ..data.parse_views import VIEWS, format_views, parse_views
from ..syntax.parsed import ParsedSentence, combine_views, format_conllu, iter_conllu, only_views
from ..syntax.word_spans import check_word_spans, whitespace_spans
from . import stanza_parser
from .shards import (
    InputError,
    clear_progress,
    file_sha256,
    finished_views,
    iter_lines,
    marker_path,
    merge_shards,
    missing_shards,
    partial_path,
    read_marker,
    read_progress,
    scan_input,
    shard_path,
    shard_range,
    write_marker,
    write_progress,
)
from .trivial import TrivialParser, fallback_parse, split_sentences

MAX_LISTED_FAILURES = 20
CHECKPOINT_S = 60.0  # seconds between checkpoints of an unfinished output


class StrictParseError(RuntimeError):
    """A parser failure under ``--strict``; the message names the file and line."""


@dataclass
class Stats:
    lines: int = 0
    empty: int = 0
    sentences: int = 0
    words: int = 0
    failures: list[tuple[int, str]] = field(default_factory=list)

    def add(self, other: "Stats") -> None:
        self.lines += other.lines
        self.empty += other.empty
        self.sentences += other.sentences
        self.words += other.words
        self.failures.extend(other.failures)


def _reason(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _text_parses(parser, flat: Sequence[list[str]], where: str) -> list[list[ParsedSentence]]:
    """The sentences of each raw line (given as its whitespace fields), each word with its character span in the
    spanned line, checked: stanza's :meth:`~syntrans.parsing.stanza_parser.StanzaParser.parse_texts`, or a parser that
    does not tokenize (``parse_batch``) on the whitespace fields, their spans added."""
    texts = [" ".join(toks) for toks in flat]
    if hasattr(parser, "parse_texts"):
        per_line = parser.parse_texts(texts)
    else:
        per_line = [[p] for p in parser.parse_batch(flat)]
        for (p,), toks in zip(per_line, flat):
            p.spans = whitespace_spans(" ".join(toks))[1]
    if len(per_line) != len(flat):
        raise ValueError(f"the parser returned the sentences of {len(per_line)} lines for {len(flat)} lines")
    for sentences, text in zip(per_line, texts):
        for p in sentences:
            if p.spans is None:
                raise ValueError("the parser gave no character spans (--char-spans needs them)")
            check_word_spans(text, p.words, p.spans, where)
            p.validate(where)
    return per_line


def _parse_group(parser, group: Sequence[tuple[int, list[list[str]]]], strict: bool, stats: Stats,
                 where: str, char_spans: bool = False) -> list[ParsedSentence]:
    """Parse the sentences of some lines at once; on an exception retry line by line, then fall back. ``char_spans``:
    each line's one token list is its raw text, which the parser may split into several sentences."""
    flat = [s for _, sents in group for s in sents]
    try:
        if char_spans:
            per_line = _text_parses(parser, flat, where)
        else:
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
                out.extend(_parse_group(parser, [item], strict, stats, where, char_spans))
            return out
        line = group[0][0]
        reason = _reason(e)
        if strict:
            raise StrictParseError(f"{where}, line {line}: the parser failed: {reason} "
                                   f"(without --strict this line would get the fallback parse, marked "
                                   f"'# parse_failed')") from e
        stats.failures.append((line, reason))
        fallbacks = [fallback_parse(s, reason, line=line) for s in group[0][1]]
        if char_spans:
            for p in fallbacks:
                p.spans = whitespace_spans(" ".join(p.words))[1]
        return fallbacks
    if char_spans:
        out = []
        for (line, _), sentences in zip(group, per_line):
            for p in sentences:
                p.line = line
                out.append(p)
        return out
    out = []
    k = 0
    for line, sents in group:
        for _ in sents:
            parsed[k].line = line
            out.append(parsed[k])
            k += 1
    return out


def parse_batch_lines(batch: Sequence[tuple[int, list[str]]], parser, split: bool = False, strict: bool = False,
                      where: str = "input", views=VIEWS, char_spans: bool = False) -> tuple[list[ParsedSentence], Stats]:
    """Parse one batch of (line number, tokens) pairs at once: (its sentences, cut to ``views``, and its counts).
    Empty lines give no sentence. ``char_spans``: the tokens are a raw line's whitespace fields, which the parser
    tokenizes itself (module docstring)."""
    stats = Stats()
    group = []
    for line, tokens in batch:
        stats.lines += 1
        if not tokens:
            stats.empty += 1
        else:
            group.append((line, split_sentences(tokens) if split else [list(tokens)]))
    out = _parse_group(parser, group, strict, stats, where, char_spans) if group else []
    deps, trees = "deps" in views, "trees" in views
    if not (deps and trees):
        out = [only_views(s, deps, trees) for s in out]
    stats.sentences += len(out)
    stats.words += sum(len(s.words) for s in out)
    return out, stats


def batches_of(lines: Iterable[tuple[int, list[str]]], batch_size: int) -> Iterator[list[tuple[int, list[str]]]]:
    """The (line number, tokens) pairs ``batch_size`` lines at a time (empty lines count)."""
    batch: list[tuple[int, list[str]]] = []
    for item in lines:
        batch.append(item)
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def parse_lines(lines: Iterable[tuple[int, list[str]]], parser, batch_size: int = 64,
                split: bool = False, strict: bool = False, stats: Stats | None = None,
                where: str = "input", progress: Callable[[int], None] | None = None, views=VIEWS,
                char_spans: bool = False) -> Iterator[list[ParsedSentence]]:
    """Parse (line number, tokens) pairs ``batch_size`` lines at a time; yields each batch's sentences.

    Empty lines give no sentence. ``parser`` has ``parse_batch(list of token lists) -> parses``.
    ``progress(k)`` is called with the number of lines done after each batch.
    """
    stats = stats if stats is not None else Stats()
    for batch in batches_of(lines, batch_size):
        out, got = parse_batch_lines(batch, parser, split, strict, where, views, char_spans)
        stats.add(got)
        yield out
        if progress:
            progress(len(batch))


def make_parser(name: str, lang: str, batch_size: int | None = None, raw: bool = False, views=VIEWS,
                device: str | None = None, batch_sizes: dict | None = None, char_spans: bool = False):
    """The parser object for ``--parser name`` (stanza: the pipeline of ``views`` on ``device`` with stanza's
    ``batch_sizes``, tokenizing raw lines itself with ``char_spans``; may raise MissingModelsError at once).
    ``batch_size`` (lines per call) is the caller's."""
    if name == "stanza":
        # StanzaParser builds its pipeline with stanza_parser.make_pipeline, looked up at call time
        # so that tests can monkeypatch it
        return stanza_parser.StanzaParser(lang=lang, unescape=not raw, views=views, device=device,
                                          batch_sizes=batch_sizes, char_spans=char_spans)
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
    """One ``syntrans-parse`` run: parse ``input`` (shard ``shard_id`` of ``num_shards``) into ``output``.

    ``views``: what the output must hold (:mod:`syntrans.data.parse_views`); ``device``: ``cpu``, ``cuda`` or None
    (cuda when torch sees a GPU); ``batch_size``: input lines per parser call (None: the device's default,
    :data:`~syntrans.parsing.stanza_parser.DEFAULT_LINES_PER_CALL`); ``stanza_batch_sizes``: stanza's own batch sizes
    over the device's defaults; ``workers``: parser processes on CPU; ``checkpoint_s``: seconds between checkpoints of
    an unfinished output.
    """

    input: str
    output: str
    lang: str = "en"
    parser: str = "stanza"
    raw: bool = False
    split_sentences: bool = False
    batch_size: int | None = None
    num_shards: int = 1
    shard_id: int = 0
    strict: bool = False
    force: bool = False
    views: tuple = VIEWS
    device: str | None = None
    workers: int = 1
    stanza_batch_sizes: dict = field(default_factory=dict)
    checkpoint_s: float = CHECKPOINT_S
    char_spans: bool = False  # raw lines, tokenized by the parser, each word's character span kept


def _quiet(message: str) -> None:
    pass


def content_settings(job: ParseJob, digest: str | None = None) -> dict:
    """The settings that decide what the parse of ``job.input`` holds (:data:`~syntrans.parsing.shards.CONTENT`, with
    the input's path and size); ``digest``: its sha256 when known, else it is read now."""
    settings = {"input": os.path.abspath(job.input), "input_bytes": os.path.getsize(job.input),
                "input_sha256": digest or file_sha256(job.input), "parser": job.parser, "lang": job.lang, "raw": job.raw,
                "split_sentences": job.split_sentences}
    if job.char_spans:  # named only when set: a parse made before the option existed keeps its marker
        settings["char_spans"] = True
    return settings


def shard_is_finished(job: ParseJob, content: dict, n_lines: int) -> bool:
    """Whether ``job``'s shard is finished: a parse of the same input content and settings holding every view asked
    for."""
    start, stop = shard_range(n_lines, job.num_shards, job.shard_id)
    info, _ = finished_views(shard_path(job.output, job.shard_id, job.num_shards), content, start + 1, stop)
    return info is not None and set(parse_views(job.views)) <= set(info["views"])


def merge_finished(output: str, num_shards: int, explicit: bool = False, log: Callable[[str], None] = _quiet) -> None:
    """Merge the shards of ``output`` into it once all are finished.

    ``explicit`` (``--merge``): merge now, an InputError naming the unfinished or disagreeing shards if any; otherwise
    merge only when every shard is finished with the same views of the same input and ``output`` is not that merge
    already (its marker is older than a shard's, or says other views or input).
    """
    if num_shards == 1:
        return
    if explicit:
        _merge(output, num_shards, log)
        return
    missing = missing_shards(output, num_shards)
    infos = [read_marker(shard_path(output, k, num_shards)) for k in range(num_shards)] if not missing else []
    same = [i for i in infos if all(i.get(k) == infos[0].get(k) for k in ("input_sha256", "views", "parser", "lang",
                                                                           "raw", "split_sentences", "char_spans"))]
    if missing or len(same) < num_shards:
        ready = num_shards - len(missing) if missing else len(same)
        log(f"{ready} of {num_shards} shards finished with the same input and views; {output} is merged once all "
            f"are (or run with --merge)")
        return
    merged = read_marker(output)
    if merged is not None and merged.get("merged_from") == num_shards and all(
            merged.get(k) == infos[0].get(k) for k in ("input_sha256", "views")):
        newest = max(os.path.getmtime(marker_path(shard_path(output, k, num_shards))) for k in range(num_shards))
        if os.path.getmtime(marker_path(output)) >= newest:
            log(f"{output} is already merged from its {num_shards} finished shards")
            return
    _merge(output, num_shards, log)


def _merge(output: str, num_shards: int, log: Callable[[str], None]) -> None:
    t0 = time.time()
    totals = merge_shards(output, num_shards)
    log(f"merged {num_shards} shards into {output}: lines={totals['lines']} "
        f"sentences={totals['sentences']} words={totals['words']} failures={totals['n_failures']} "
        f"seconds={time.time() - t0:.2f}")


# --------------------------------------------------------------------------------------------
# worker processes (CPU)

_WORKER: dict = {}


def _worker_init(parser_args: tuple, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    try:
        _WORKER["parser"] = make_parser(*parser_args)
    except Exception as e:  # raised with the first batch: an initializer that raises makes the pool respawn forever
        _WORKER["error"] = e


def _worker_parse(batch, split, strict, where, views, char_spans=False):
    if "error" in _WORKER:
        raise _WORKER["error"]
    out, stats = parse_batch_lines(batch, _WORKER["parser"], split, strict, where, views, char_spans)
    for s in out:  # picklable and small: a tree as its brackets
        if s.tree is not None and not isinstance(s.tree, str):
            s.tree = " ".join(str(s.tree).split())
    return out, stats


def _parsed_batches(job: ParseJob, parser, parser_args: tuple, batches: Iterable, views, device: str
                    ) -> Iterator[tuple[list, Stats, int]]:
    """(sentences, counts, input lines) of each batch in input order: parsed here, or by ``job.workers`` processes."""
    if job.workers <= 1:
        for batch in batches:
            out, stats = parse_batch_lines(batch, parser, job.split_sentences, job.strict, job.input, views,
                                           job.char_spans)
            yield out, stats, len(batch)
        return
    threads = max(1, (os.cpu_count() or 1) // job.workers)
    pool = multiprocessing.get_context("spawn").Pool(job.workers, initializer=_worker_init,
                                                     initargs=(parser_args, threads))
    ok = False
    try:
        window: deque = deque()
        for batch in batches:
            window.append((pool.apply_async(_worker_parse, (batch, job.split_sentences, job.strict, job.input, views,
                                                            job.char_spans)), len(batch)))
            if len(window) >= 2 * job.workers:  # bounded: the input is never read far ahead
                result, n = window.popleft()
                yield (*result.get(), n)
        while window:
            result, n = window.popleft()
            yield (*result.get(), n)
        ok = True
    finally:
        if ok:
            pool.close()
        else:
            pool.terminate()
        pool.join()


# --------------------------------------------------------------------------------------------
# one shard


def _check_job(job: ParseJob) -> tuple[str, tuple]:
    """(device, views) of a job, or an InputError for options that do not go together."""
    views = parse_views(job.views)
    device = stanza_parser.resolve_device(job.device) if job.parser == "stanza" else "cpu"
    if job.workers < 1:
        raise InputError(f"--workers must be at least 1, found {job.workers}")
    if job.char_spans and (job.raw or job.split_sentences):
        raise InputError(f"--char-spans: the parser tokenizes and splits each raw line itself; expected neither "
                         f"{'--raw (Moses tokenization)' if job.raw else '--split-sentences'} with it")
    if job.workers > 1 and device == "cuda":
        raise InputError(f"--workers {job.workers} runs parser processes on CPU; on --device cuda one process feeds "
                         "the GPU (run shards as jobs for more than one GPU)")
    return device, views


def parse_job(job: ParseJob, log: Callable[[str], None] = _quiet) -> dict:
    """Parse ``job.input`` (its shard) into ``job.output`` (its shard file) with a ``.done`` marker, then merge the
    shards when all are finished; returns the shard's marker.

    A shard finished from the same input content and settings is skipped unless ``job.force``, or, when it lacks some
    of ``job.views``, given those alone; an unfinished one resumes from its checkpoint. ``log`` gets the messages
    (skips, resumes, failed lines, the summary, merges). Raises MissingModelsError (before any input is read on a
    first run), InputError (a bad input file or options) and StrictParseError (a failure under ``job.strict``).
    """
    try:
        device, views = _check_job(job)
    except ValueError as e:
        raise InputError(str(e)) from None
    out_path = shard_path(job.output, job.shard_id, job.num_shards)
    batch_size = job.batch_size or stanza_parser.DEFAULT_LINES_PER_CALL[device]
    sizes = stanza_parser.batch_sizes_for(device, job.stanza_batch_sizes) if job.parser == "stanza" else None
    parser = None
    if job.force or read_marker(out_path) is None:  # a first run: fail before reading the input when models lack
        parser = make_parser(job.parser, job.lang, batch_size, job.raw, views, device, sizes, job.char_spans)
    n_lines, digest = scan_input(job.input)
    content = content_settings(job, digest)
    start, stop = shard_range(n_lines, job.num_shards, job.shard_id)
    have_info, why = (None, None) if job.force else finished_views(out_path, content, start + 1, stop)
    have = tuple(v for v in VIEWS if have_info and v in have_info["views"])
    if have_info is not None and set(views) <= set(have):
        log(f"skipped shard {job.shard_id} of {job.num_shards}: {out_path} is already finished with views "
            f"{format_views(have)} of this input ({marker_path(out_path)}; --force redoes it)")
        merge_finished(job.output, job.num_shards, explicit=False, log=log)
        return have_info
    if why:
        log(f"{why}: parsing it again")
    todo = tuple(v for v in views if v not in have)
    final = tuple(v for v in VIEWS if v in set(have) | set(todo))
    if have:
        log(f"{out_path} holds {format_views(have)}: parsing only {format_views(todo)} and merging it in")
    if parser is None or todo != views:  # the parser of the views to parse now (this also checks the models load)
        parser = make_parser(job.parser, job.lang, batch_size, job.raw, todo, device, sizes, job.char_spans)
    parser_args = (job.parser, job.lang, batch_size, job.raw, todo, device, sizes, job.char_spans)
    if job.workers > 1:
        parser = None  # each worker builds its own; the one built here only checked that the models load

    key = dict(content, first_line=start + 1, last_line=stop, views=list(final), adding=list(todo))
    progress = None if job.force else read_progress(out_path, key)
    stats, done = Stats(), 0
    if progress is not None:
        done = int(progress["lines_done"])
        saved = progress["stats"]
        stats = Stats(saved["lines"], saved["empty"], saved["sentences"], saved["words"],
                      [tuple(f) for f in saved["failures"]])
        with open(partial_path(out_path), "r+b") as f:
            f.truncate(int(progress["bytes"]))
        log(f"resuming {out_path} at line {start + done + 1} ({done} of its {stop - start} lines were parsed before)")
    else:
        clear_progress(out_path)
    if not have and os.path.exists(marker_path(out_path)):
        os.remove(marker_path(out_path))  # a crash from here on must not leave a stale "finished" mark
    d = os.path.dirname(os.path.abspath(out_path))
    if not os.path.isdir(d):
        raise InputError(f"{out_path}: the output directory {d} does not exist; create it first")

    t0 = time.time()
    tokenize = line_tokenizer(job.raw, job.lang)
    numbered = ((n, tokenize(text)) for n, text in iter_lines(job.input, start + done, stop))
    skip = start + done  # the lines parsed (and combined) before a resume
    existing = (s for s in iter_conllu(out_path) if s.line > skip) if have else None
    desc = "parse" if job.num_shards == 1 else f"parse shard {job.shard_id}/{job.num_shards}"
    last = time.time()
    part = partial_path(out_path)
    with tqdm(total=stop - start, initial=done, unit="line", desc=desc, file=sys.stderr,
              mininterval=1.0 if sys.stderr.isatty() else 30.0) as bar, open(part, "ab") as f:
        for sentences, got, n in _parsed_batches(job, parser, parser_args, batches_of(numbered, batch_size), todo,
                                                 device):
            if existing is not None:
                sentences = [_combine(existing, s, out_path) for s in sentences]
            f.write(format_conllu(sentences).encode("utf-8"))
            stats.add(got)
            done += n
            bar.update(n)
            if time.time() - last >= job.checkpoint_s:
                f.flush()
                os.fsync(f.fileno())
                write_progress(out_path, {"key": key, "lines_done": done, "bytes": f.tell(), "stats": asdict(stats)})
                last = time.time()
        f.flush()
        os.fsync(f.fileno())
    if existing is not None:
        extra = next(existing, None)
        if extra is not None:
            raise InputError(f"{out_path}: its parse has a sentence for line {extra.line} ({extra.words[:8]}) that "
                             f"the new parse of {job.input} lacks; redo it with --force")
    seconds = time.time() - t0
    failures = [[n, r] for n, r in stats.failures]
    if have:
        failures = sorted(have_info.get("failures", []) + failures, key=lambda x: x[0])
    os.replace(part, out_path)
    info = dict(content, n_lines=n_lines, first_line=start + 1, last_line=stop, num_shards=job.num_shards,
                shard_id=job.shard_id, views=list(final), device=device, lines=stats.lines, empty_lines=stats.empty,
                sentences=stats.sentences, words=stats.words, n_failures=len({x[0] for x in failures}),
                failures=failures, seconds=round(seconds + (float(have_info["seconds"]) if have else 0.0), 3))
    write_marker(out_path, info)
    clear_progress(out_path)
    for n, r in stats.failures[:MAX_LISTED_FAILURES]:
        log(f"parse failed on {job.input} line {n} (fallback parse written): {r}")
    if len(stats.failures) > MAX_LISTED_FAILURES:
        log(f"... and {len(stats.failures) - MAX_LISTED_FAILURES} more failed lines "
            f"(all listed in {marker_path(out_path)})")
    rng = f"lines {start + 1}-{stop} of {n_lines}" if stop > start else f"no lines of the {n_lines}"
    log(f"summary {out_path} ({rng}, views {format_views(final)}{', added ' + format_views(todo) if have else ''}): "
        f"lines={stats.lines} sentences={stats.sentences} words={stats.words} failures={len(stats.failures)} "
        f"seconds={seconds:.2f} (empty lines: {stats.empty})")
    merge_finished(job.output, job.num_shards, explicit=False, log=log)
    return info


def _combine(existing: Iterator[ParsedSentence], new: ParsedSentence, path: str) -> ParsedSentence:
    have = next(existing, None)
    if have is None:
        raise InputError(f"{path}: its parse ends before line {new.line}, which the new parse has; redo it with --force")
    try:
        return combine_views(have, new, f"{path}, line {new.line}")
    except ValueError as e:
        raise InputError(f"{e}; redo it with --force") from None
