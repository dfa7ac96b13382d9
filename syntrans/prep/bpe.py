"""Step 4 (bpe): subword-nmt codes learned on the tokenized training text, applied to every split.

Joint BPE (the default of every corpus but the separate-script ones): one ``OUT/bpe/codes`` learned on
the training text of both sides (``cat train.src train.tgt | subword-nmt learn-bpe -s OPS``). Separate:
``OUT/bpe/codes.{lang}`` per language, each with its own number of merges (a recipe may give one per
language). Applied output: ``OUT/bpe/{split}.{lang}`` (pieces joined with subword-nmt's ``@@ `` marker,
the line count unchanged). Word-level data (a recipe's ``word_vocab``): no codes, and ``OUT/bpe/{split}.{lang}``
are copies of the tokenized text (:func:`copy_words`), so the binarize step reads one folder either way.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from ..atomic_write import atomic_file, atomic_path
from .corpora import SPLITS


def learn_codes(inputs: Iterable[Path], codes: Path, ops: int, workers: int = 1) -> None:
    """Learn ``ops`` merges on the concatenation of ``inputs`` into ``codes`` (written atomically)."""
    inputs = list(inputs)
    joined = codes.with_name(codes.name + ".input.tmp")
    try:
        with open(joined, "wb") as out:
            for p in inputs:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        with open(joined, encoding="utf-8") as fin, atomic_file(codes) as fout:
            learn_bpe(fin, fout, ops, num_workers=workers)
    finally:
        joined.unlink(missing_ok=True)


def apply_codes(codes: Path, inp: Path, out: Path, workers: int = 1) -> None:
    """Segment ``inp`` with ``codes`` into ``out`` (written atomically)."""
    with open(codes, encoding="utf-8") as f:
        bpe = BPE(f)
    with atomic_file(out) as fout:
        bpe.process_lines(str(inp), fout, dropout=0, num_workers=workers)


def codes_paths(bpe_dir: Path, langs: tuple[str, str], joint: bool) -> dict[str, Path]:
    """{lang: codes file}: the same file for both languages when joint."""
    return {lang: bpe_dir / ("codes" if joint else f"codes.{lang}") for lang in langs}


def run_bpe(tok_dir: Path, bpe_dir: Path, langs: tuple[str, str], ops: int | Mapping[str, int], joint: bool,
            workers: int = 1, log: Callable[[str], None] = print) -> dict[str, Path]:
    """Learn and apply; ``ops``: merges, or {lang: merges} (separate BPE, or the same number twice); returns
    {lang: codes file}."""
    per_lang = dict(ops) if isinstance(ops, Mapping) else dict.fromkeys(langs, ops)
    if set(per_lang) != set(langs):
        raise ValueError(f"BPE merges: expected a number for each of {langs}, found {per_lang}")
    if joint and len(set(per_lang.values())) > 1:
        raise ValueError(f"joint BPE learns one model: expected one number of merges, found {per_lang}")
    bpe_dir.mkdir(parents=True, exist_ok=True)
    codes = codes_paths(bpe_dir, langs, joint)
    if joint:
        n = per_lang[langs[0]]
        learn_codes([tok_dir / f"train.{lang}" for lang in langs], codes[langs[0]], n, workers)
        log(f"bpe: learned {n} joint merges on train.{{{','.join(langs)}}} -> {codes[langs[0]]}")
    else:
        for lang in langs:
            learn_codes([tok_dir / f"train.{lang}"], codes[lang], per_lang[lang], workers)
            log(f"bpe: learned {per_lang[lang]} merges on train.{lang} -> {codes[lang]}")
    for split in SPLITS:
        for lang in langs:
            apply_codes(codes[lang], tok_dir / f"{split}.{lang}", bpe_dir / f"{split}.{lang}", workers)
    log(f"bpe: applied to {', '.join(SPLITS)} -> {bpe_dir}/{{split}}.{{lang}}")
    return codes


def copy_words(tok_dir: Path, bpe_dir: Path, langs: tuple[str, str], log: Callable[[str], None] = print) -> None:
    """Word-level data: ``bpe_dir/{split}.{lang}`` are copies of ``tok_dir``'s (written atomically), any codes removed."""
    bpe_dir.mkdir(parents=True, exist_ok=True)
    for old in bpe_dir.glob("codes*"):
        old.unlink()
    for split in SPLITS:
        for lang in langs:
            out = bpe_dir / f"{split}.{lang}"
            with atomic_path(out) as tmp:
                shutil.copyfile(tok_dir / f"{split}.{lang}", tmp)
    log(f"bpe: none (word-level data): {tok_dir}/{{split}}.{{lang}} copied to {bpe_dir}")
