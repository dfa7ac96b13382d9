"""Syntax sidecar files next to fairseq's binarized data. See docs/commands.md (data layout).

``{split}.{src}-{tgt}.{lang}.{kind}.{bin,idx}`` int32 mmap indexed datasets, one item per corpus
line, where ``kind`` is one of :data:`KINDS`:

* ``word``: per subword token (EOS excluded) the 0-based index of its word in the line;
* ``head``: per word its head, 1-based within the line, 0 = root (sentence offsets applied);
* ``dist``: per gap between consecutive words the syntactic distance, ``SENTENCE_BREAK`` (−1)
  between two sentences of one line;
* ``label``: per word the id of its dependency relation (CoNLL-U DEPREL) in the fixed inventory of
  :mod:`syntrans.syntax.deprels` (the 37 universal relations of UD v2, then "other"); written with ``head``.
"""
from __future__ import annotations

import os
import struct
from typing import Dict, Iterable, Sequence

import numpy as np
from fairseq.data import indexed_dataset

KINDS = ("word", "head", "dist", "label")

#: how to get a sidecar that data binarized by an earlier version lacks (kinds added since the first release)
ADDED_LATER = {
    "label": "it holds the dependency labels (the DEPREL column of the CoNLL-U parses), which data binarized before "
             "syntrans stored them lacks: re-run syntrans-preprocess with the same parses (--sidecars-only keeps the "
             "binarized tokens), or syntrans-prepare on its output folder (it redoes its binarize step)",
}


def how_to_write(kinds) -> str:
    """How to get the sidecars ``kinds`` that a split lacks (for error messages)."""
    later = [ADDED_LATER[k] for k in kinds if k in ADDED_LATER]
    return "; ".join(later) if later else "write it with syntrans-preprocess from parsed corpora"


def side_prefix(data_dir: str, split: str, src: str, tgt: str, lang: str) -> str:
    """Prefix of one side's sidecars: fairseq's ``{split}.{src}-{tgt}.{lang}``; a sidecar adds ``.{kind}``."""
    return os.path.join(data_dir, f"{split}.{src}-{tgt}.{lang}")


def sidecar_prefix(data_dir: str, split: str, src: str, tgt: str, lang: str, kind: str) -> str:
    """Path prefix (no .bin/.idx) of one sidecar."""
    return f"{side_prefix(data_dir, split, src, tgt, lang)}.{kind}"


def exists(prefix: str) -> bool:
    return os.path.exists(prefix + ".idx") and os.path.exists(prefix + ".bin")


def write(prefix: str, items: Iterable[Sequence[int]]) -> int:
    """Write one int32 item per line (fairseq's mmap format, data in one write); returns the item count."""
    items = list(items)
    sizes = [len(it) for it in items]
    flat = np.fromiter((v for it in items for v in it), dtype=np.int32, count=sum(sizes))
    with open(prefix + ".bin", "wb") as f:
        f.write(flat.tobytes(order="C"))
    with indexed_dataset.MMapIndexedDataset.Index.writer(prefix + ".idx", np.int32) as index:
        index.write(sizes)
    return len(items)


_HEADER = 26  # bytes before the sizes in fairseq's mmap index: magic (9), version (8), dtype code (1), count (8)


def binarized_sizes(prefix: str) -> np.ndarray:
    """The item sizes (int64) of a fairseq mmap dataset ``prefix.{idx,bin}`` (a sidecar, or binarized text), after
    checking that both files are whole: ValueError naming the file, its size and the size its index implies."""
    idx, data = f"{prefix}.idx", f"{prefix}.bin"
    fix = "write it again (syntrans-preprocess)"
    n_idx = os.path.getsize(idx)
    with open(idx, "rb") as f:
        head = f.read(_HEADER)
    magic = indexed_dataset.MMapIndexedDataset.Index._HDR_MAGIC
    if head[:len(magic)] != magic[:len(head)]:  # a short file is checked as far as it goes
        raise ValueError(f"{idx}: not an index of fairseq's mmap format (it starts {head[:len(magic)]!r}); {fix}")
    if len(head) < _HEADER:
        raise ValueError(f"{idx}: {n_idx} bytes, shorter than the {_HEADER}-byte header of an index: the file is "
                         f"truncated; {fix}")
    _version, code, n = struct.unpack("<QBQ", head[len(magic):])
    dtype = indexed_dataset._code_to_dtype.get(code)
    if dtype is None:
        raise ValueError(f"{idx}: unknown item type code {code} in its header: the file is corrupt; {fix}")
    want = _HEADER + 12 * n  # int32 sizes and int64 pointers
    if n_idx != want:
        raise ValueError(f"{idx}: {n_idx} bytes, but an index of {n} items has {want}: the file is "
                         f"{'truncated' if n_idx < want else 'corrupt'}; {fix}")
    sizes = np.fromfile(idx, dtype=np.int32, count=n, offset=_HEADER).astype(np.int64)
    last = np.fromfile(idx, dtype=np.int64, count=1, offset=_HEADER + 4 * n + 8 * (n - 1)) if n else np.zeros(1, np.int64)
    want = int(last[0]) + int(sizes[-1]) * np.dtype(dtype).itemsize if n else 0
    n_data = os.path.getsize(data)
    if n_data != want:
        raise ValueError(f"{data}: {n_data} bytes, but its index {idx} describes {n} items of {want} bytes: the file is "
                         f"{'truncated' if n_data < want else 'corrupt'}; {fix}")
    return sizes


class Sidecar:
    """A loaded sidecar: ``sizes`` and int64 items as numpy arrays, with its path for error messages. Files that are
    cut short or do not match their index are refused naming the file (:func:`binarized_sizes`)."""

    def __init__(self, prefix: str):
        if not exists(prefix):
            raise FileNotFoundError(f"syntax sidecar {prefix}.idx/.bin is missing; write it with syntrans-preprocess")
        self.prefix = prefix
        self.sizes = binarized_sizes(prefix)
        self.data = None  # every item empty: an empty .bin cannot be mapped
        if self.sizes.sum():
            try:
                self.data = indexed_dataset.MMapIndexedDataset(prefix)
            except (ValueError, OSError, AssertionError, struct.error) as e:
                raise ValueError(f"{prefix}.idx/.bin: cannot read this sidecar ({type(e).__name__}: {e}); write it "
                                 "again (syntrans-preprocess)") from None

    def __len__(self) -> int:
        return len(self.sizes)

    def __getitem__(self, i: int) -> np.ndarray:
        if self.data is None:
            if not -len(self.sizes) <= i < len(self.sizes):
                raise IndexError(f"{self.prefix}: item {i} of {len(self.sizes)}")
            return np.zeros(0, dtype=np.int64)
        return self.data[i].numpy()


def load_side(data_dir: str, split: str, src: str, tgt: str, lang: str) -> Dict[str, Sidecar]:
    """Every sidecar kind present for one split and side (possibly none)."""
    out = {}
    for kind in KINDS:
        p = sidecar_prefix(data_dir, split, src, tgt, lang, kind)
        if exists(p):
            out[kind] = Sidecar(p)
    return out


def _first_mismatch(sizes: np.ndarray, expect: np.ndarray):
    """(index of the first sentence whose size differs, number of differing sentences)."""
    bad = np.nonzero(sizes != expect)[0]
    return (int(bad[0]) if len(bad) else -1), len(bad)


def validate_side(side: Dict[str, Sidecar], token_sizes: np.ndarray, what: str) -> None:
    """Check sidecar lengths against the binarized tokens (sizes include EOS); raise naming the first bad sentence.

    Vectorised over the corpus: ``word`` has one value per token but EOS; ``label`` has one value per word
    as ``head`` has, and ``dist`` one fewer, wherever both exist.
    """
    n = len(token_sizes)
    for kind, sc in side.items():
        if len(sc) != n:
            raise ValueError(f"{sc.prefix}: {len(sc)} sentences but the binarized {what} has {n}")
    if "word" in side:
        expect = token_sizes - 1
        i, n_bad = _first_mismatch(side["word"].sizes, expect)
        if n_bad:
            raise ValueError(
                f"{side['word'].prefix}: sentence {i} (line {i + 1} of the text) has {side['word'].sizes[i]} "
                f"subword entries but the binarized {what} has {expect[i]} tokens before EOS "
                f"({n_bad} sentences differ); re-run syntrans-preprocess"
            )
    if "head" in side and "label" in side:
        i, n_bad = _first_mismatch(side["label"].sizes, side["head"].sizes)
        if n_bad:
            raise ValueError(
                f"{side['label'].prefix}: sentence {i} (line {i + 1} of the text) has {side['label'].sizes[i]} labels "
                f"but {side['head'].prefix} has {side['head'].sizes[i]} words; re-run syntrans-preprocess"
            )
    if "head" in side and "dist" in side:
        expect = np.maximum(side["head"].sizes - 1, 0)
        i, n_bad = _first_mismatch(side["dist"].sizes, expect)
        if n_bad:
            raise ValueError(
                f"{side['dist'].prefix}: sentence {i} (line {i + 1} of the text) has {side['dist'].sizes[i]} gaps but "
                f"{side['head'].prefix} has {side['head'].sizes[i]} words"
            )
