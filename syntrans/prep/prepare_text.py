"""Step 3 (tokenize): ``OUT/text/{split}.{lang}`` → ``OUT/tok/{split}.{lang}``, training pairs cleaned.

Per split, the first ``limits[split]`` pairs (all when None; the smoke slice) are tokenized
(:mod:`syntrans.prep.tokenization`); training pairs go through the filters of :mod:`syntrans.prep.clean`,
whose drop counts are returned. With ``valid_every`` N (IWSLT14), every N-th *kept* training pair
becomes the valid split instead (fairseq's order: clean, then hold out), and its raw text is written to
``OUT/text/valid.{lang}`` too; valid and test pairs are never filtered. ``workers`` > 1 tokenizes in a
process pool (order kept).
"""
from __future__ import annotations

import itertools
import multiprocessing
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from tqdm import tqdm

from .clean import REASONS, drop_reason, is_holdout
from .corpora import SPLITS, PairData
from .errors import PrepError
from .extract import read_lines
from .tokenization import TokenizerSpec, looks_unsegmented, tokenize_lines

BATCH = 2000  # pairs per unit of work


def specs_for(pair: PairData) -> dict[str, TokenizerSpec]:
    """The tokenizer of each language of ``pair``."""
    return {lang: TokenizerSpec(lang, lowercase=pair.lowercase, aggressive_dashes=pair.aggressive_dashes,
                                segmented=lang in pair.segmented, passthrough=not pair.tokenize)
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


def _tok_batch(specs: tuple[TokenizerSpec, TokenizerSpec], batch: list[tuple[str, str]]):
    xs, ys = zip(*batch) if batch else ((), ())
    return batch, tokenize_lines(xs, specs[0]), tokenize_lines(ys, specs[1])


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


def tokenize_corpus(pair: PairData, text_dir: Path, tok_dir: Path, limits: dict[str, int | None], workers: int = 1,
                    log: Callable[[str], None] = print) -> dict:
    """Tokenize and clean every split; returns {"sizes": {split: pairs}, "dropped": {reason: n}, "read": {split: n}}."""
    tok_dir.mkdir(parents=True, exist_ok=True)
    check_segmented(pair, text_dir)
    a, b = pair.langs
    specs = specs_for(pair)
    work = partial(_tok_batch, (specs[a], specs[b]))
    pool = None
    if workers > 1:
        pool = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn").Pool(workers)
    sizes, read, dropped = {}, {}, dict.fromkeys(REASONS, 0)
    clean = pair.clean
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
            tmp = {k: p.with_name(p.name + ".tmp") for k, p in outs.items()}
            files = {k: open(p, "w", encoding="utf-8", newline="\n") for k, p in tmp.items()}
            n_read = n_kept = n_valid = 0
            batches = _batches(pairs, BATCH)
            results = pool.imap(work, batches) if pool else map(work, batches)
            try:
                with tqdm(unit="pair", desc=f"tokenize {split}", file=sys.stderr,
                          mininterval=1.0 if sys.stderr.isatty() else 30.0) as bar:
                    for raw, ta, tb in results:
                        for (ra, rb), x, y in zip(raw, ta, tb):
                            n_read += 1
                            if split == "train" and clean is not None:
                                why = drop_reason(len(x.split()), len(y.split()), clean.min_len, clean.max_len, clean.ratio)
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
            finally:
                for f in files.values():
                    f.close()
            for k, t in tmp.items():
                t.replace(outs[k])
            read[split] = n_read
            sizes[split] = n_kept - n_valid
            if holdout:
                sizes["valid"] = read["valid"] = n_valid
            msg = f"tokenize: {split}: {n_read} pairs read, {sizes[split]} written"
            if split == "train" and clean is not None:
                msg += " (dropped: " + ", ".join(f"{k} {v}" for k, v in dropped.items()) + ")"
            if holdout:
                msg += f", valid = every {pair.valid_every}th kept pair: {n_valid}"
            log(msg)
    finally:
        if pool is not None:
            pool.terminate()
    return {"sizes": {s: sizes[s] for s in SPLITS}, "dropped": dropped, "read": {s: read[s] for s in SPLITS}}
