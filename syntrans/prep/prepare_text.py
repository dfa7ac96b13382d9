"""Step 3 (tokenize): ``OUT/text/{split}.{lang}`` → ``OUT/tok/{split}.{lang}``, training pairs cleaned.

Per split, the first ``limits[split]`` pairs (all when None; the smoke slice) are tokenized
(:mod:`syntrans.prep.tokenization`); training pairs go through the filters of :mod:`syntrans.prep.clean`,
whose drop counts are returned. With ``valid_every`` N (IWSLT14), every N-th *kept* training pair
becomes the valid split instead (fairseq's order: clean, then hold out), and its raw text is written to
``OUT/text/valid.{lang}`` too; valid and test pairs are never filtered. ``workers`` > 1 tokenizes in a
process pool (order kept).

``pair.train_limit`` (a recipe's) keeps only the first N training pairs, as a limit would (the smaller one
wins). With ``pair.langid`` the raw text of every training side is classified
(:mod:`syntrans.prep.langid_filter`, or the ``classify`` function given) and a pair that passed the other
filters is dropped, counted under ``language``, when a side is identified as another language.
"""
from __future__ import annotations

import itertools
import multiprocessing
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from tqdm import tqdm

from ..atomic_write import atomic_files
from . import langid_filter
from .clean import LANGUAGE, REASONS, drop_reason, is_holdout
from .corpora import SPLITS, PairData
from .errors import PrepError
from .extract import read_lines
from .tokenization import TokenizerSpec, looks_unsegmented, tokenize_lines

BATCH = 2000  # pairs per unit of work


def specs_for(pair: PairData, moses: bool = True) -> dict[str, TokenizerSpec]:
    """The tokenizer of each language of ``pair`` (``moses`` False: the raw-text route, no tokenization)."""
    return {lang: TokenizerSpec(lang, lowercase=pair.lowercase, aggressive_dashes=pair.aggressive_dashes,
                                segmented=lang in pair.segmented, passthrough=not pair.tokenize,
                                normalize_punctuation=pair.normalize_punctuation,
                                remove_non_printing=pair.remove_non_printing, moses=moses)
            for lang in pair.langs}


def parallel_lines(a: Path, b: Path, limit: int | None = None) -> Iterator[tuple[str, str]]:
    """(line of a, line of b) without line ends, the first ``limit`` pairs; PrepError if the counts differ."""
    n = 0
    for x, y in itertools.zip_longest(read_lines(a), read_lines(b)):
        if limit is not None and n >= limit:
            return
        if x is None or y is None:
            raise PrepError(f"{a} and {b}: expected the same number of lines (parallel text), found "
                            f"{_count(a)} and {_count(b)}; run with --force to extract them again")
        n += 1
        yield x.rstrip("\r\n"), y.rstrip("\r\n")


def _count(path: Path) -> int:
    return sum(1 for _ in read_lines(path))


def _tok_batch(specs: tuple[TokenizerSpec, TokenizerSpec], classify: Callable[[str], str] | None,
               batch: list[tuple[str, str]]):
    """(raw pairs, tokenized a sides, tokenized b sides, (language of a, language of b) per pair or None)."""
    xs, ys = zip(*batch) if batch else ((), ())
    found = [(classify(x), classify(y)) for x, y in batch] if classify is not None else None
    return batch, tokenize_lines(xs, specs[0]), tokenize_lines(ys, specs[1]), found


def _batches(pairs: Iterator[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    while True:
        batch = list(itertools.islice(pairs, size))
        if not batch:
            return
        yield batch


def check_segmented(pair: PairData, text_dir: Path) -> None:
    """PrepError when a language that must come word-segmented looks unsegmented (first 1000 train lines)."""
    for lang in pair.segmented:
        path = text_dir / f"train.{lang}"
        if looks_unsegmented(itertools.islice(read_lines(path), 1000)):
            raise PrepError(f"{path}: expected word-segmented {lang} text (tokens separated by spaces), found mostly "
                            f"lines that are one long token; segment the {lang} side first (e.g. KyTea or MeCab for "
                            f"ja, Jieba for zh), put the segmented files into --raw-dir in the same layout, and run "
                            f"again with --force")


def _limit(a: int | None, b: int | None) -> int | None:
    return a if b is None else b if a is None else min(a, b)


def tokenize_corpus(pair: PairData, text_dir: Path, tok_dir: Path, limits: dict[str, int | None], workers: int = 1,
                    log: Callable[[str], None] = print, classify: Callable[[str], str] | None = None,
                    moses: bool = True) -> dict:
    """Tokenize and clean every split; returns {"sizes": {split: pairs}, "dropped": {reason: n}, "read": {split: n}}.

    ``dropped`` has every reason of REASONS, and ``language`` too where ``pair.langid`` is on. ``classify``
    (text → language code) replaces langid's identifier (a top-level function when ``workers`` > 1). ``moses`` False:
    the raw-text route: ``tok_dir`` gets the cleaned raw text (:mod:`.tokenization`), and the filters count its
    whitespace-separated words."""
    tok_dir.mkdir(parents=True, exist_ok=True)
    check_segmented(pair, text_dir)
    a, b = pair.langs
    limits = dict(limits, train=_limit(limits.get("train"), pair.train_limit))
    if pair.langid and classify is None:
        langid_filter.check_languages(pair.langs)
        langid_filter.load()  # before the pool forks
        classify = langid_filter.classify
    specs = specs_for(pair, moses)
    work = partial(_tok_batch, (specs[a], specs[b]), None)
    work_train = partial(_tok_batch, (specs[a], specs[b]), classify if pair.langid else None)
    pool = None
    if workers > 1:
        pool = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn").Pool(workers)
    reasons = REASONS + ((LANGUAGE,) if pair.langid else ())
    sizes, read, dropped = {}, {}, dict.fromkeys(reasons, 0)
    clean = pair.clean
    filtered = clean is not None or pair.langid
    try:
        for split in SPLITS:
            if split == "valid" and pair.valid_every:
                continue  # made from the cleaned train below
            pairs = parallel_lines(text_dir / f"{split}.{a}", text_dir / f"{split}.{b}", limits.get(split))
            outs = {(split, lang): tok_dir / f"{split}.{lang}" for lang in (a, b)}
            holdout = split == "train" and pair.valid_every > 0
            if holdout:
                outs.update({("valid", lang): tok_dir / f"valid.{lang}" for lang in (a, b)})
                outs.update({("raw-valid", lang): text_dir / f"valid.{lang}" for lang in (a, b)})
            n_read = n_kept = n_valid = 0
            batches = _batches(pairs, BATCH)
            fn = work_train if split == "train" else work
            results = pool.imap(fn, batches) if pool else map(fn, batches)
            # every file of the split replaces its path when the split is whole (an error leaves the old files)
            with atomic_files(outs) as files:
                with tqdm(unit="pair", desc=f"tokenize {split}", file=sys.stderr,
                          mininterval=1.0 if sys.stderr.isatty() else 30.0) as bar:
                    for raw, ta, tb, found in results:
                        for k, ((ra, rb), x, y) in enumerate(zip(raw, ta, tb)):
                            n_read += 1
                            if split == "train" and filtered:
                                why = None
                                if clean is not None:
                                    why = drop_reason(len(x.split()), len(y.split()), clean.min_len, clean.max_len,
                                                      clean.ratio)
                                if why is None and found is not None and found[k] != (a, b):
                                    why = LANGUAGE
                                if why is not None:
                                    dropped[why] += 1
                                    continue
                            n_kept += 1
                            if holdout and is_holdout(n_kept, pair.valid_every):
                                n_valid += 1
                                files[("valid", a)].write(x + "\n")
                                files[("valid", b)].write(y + "\n")
                                files[("raw-valid", a)].write(ra + "\n")
                                files[("raw-valid", b)].write(rb + "\n")
                                continue
                            files[(split, a)].write(x + "\n")
                            files[(split, b)].write(y + "\n")
                        bar.update(len(raw))
            read[split] = n_read
            sizes[split] = n_kept - n_valid
            if holdout:
                sizes["valid"] = read["valid"] = n_valid
            msg = f"tokenize: {split}: {n_read} pairs read, {sizes[split]} written"
            if split == "train" and filtered:
                msg += " (dropped: " + ", ".join(f"{k} {v}" for k, v in dropped.items()) + ")"
            if split == "train" and pair.train_limit is not None:
                msg += f" (the first {limits['train']} training pairs only)"
            if holdout:
                msg += f", valid = every {pair.valid_every}th kept pair: {n_valid}"
            log(msg)
    finally:
        if pool is not None:
            pool.terminate()
    return {"sizes": {s: sizes[s] for s in SPLITS}, "dropped": dropped, "read": {s: read[s] for s in SPLITS}}
