"""Syntax sidecar files next to fairseq's binarized data. See docs/commands.md (data layout).

``{split}.{src}-{tgt}.{lang}.{kind}.{bin,idx}`` mmap indexed datasets, one item per corpus line; the kinds, their
value types and what each item holds are :mod:`syntrans.data.sidecar_format`'s.
"""
from __future__ import annotations

import array
import os
import struct
from typing import Dict, Iterable, Sequence

import numpy as np
from fairseq.data import indexed_dataset

from .sidecar_format import KINDS


def side_prefix(data_dir: str, split: str, src: str, tgt: str, lang: str) -> str:
    """Prefix of one side's sidecars: fairseq's ``{split}.{src}-{tgt}.{lang}``; a sidecar adds ``.{kind}``."""
    return os.path.join(data_dir, f"{split}.{src}-{tgt}.{lang}")


def sidecar_prefix(data_dir: str, split: str, src: str, tgt: str, lang: str, kind: str) -> str:
    """Path prefix (no .bin/.idx) of one sidecar."""
    return f"{side_prefix(data_dir, split, src, tgt, lang)}.{kind}"


def exists(prefix: str) -> bool:
    return os.path.exists(prefix + ".idx") and os.path.exists(prefix + ".bin")


class SidecarWriter:
    """Writes one sidecar item by item in fairseq's mmap format (``MMapIndexedDataset``: ``.bin`` the values in
    ``dtype``, ``.idx`` the item sizes and byte offsets), in memory that does not grow with the corpus beyond the
    index's own 4 bytes per item: values go to ``.bin`` every ``flush_items`` items; :meth:`close` writes ``.idx``
    (offsets in pieces). A value ``dtype`` cannot hold is a ValueError naming the item (the line). Use as a context
    manager; on an error both files are removed."""

    def __init__(self, prefix: str, flush_items: int = 10000, dtype=np.int32):
        self.prefix, self.flush_items, self.dtype = prefix, flush_items, np.dtype(dtype)
        self._bin = open(prefix + ".bin", "wb")
        self._sizes = array.array("i")
        self._pending_sizes: list = []
        self._values: list = []

    def add(self, item: Sequence[int]) -> None:
        self._values.extend(item)
        self._pending_sizes.append(len(item))
        if len(self._pending_sizes) >= self.flush_items:
            self._flush()

    def _flush(self) -> None:
        sizes = self._pending_sizes
        flat = np.array(self._values, dtype=np.int64) if self._values else np.zeros(0, dtype=np.int64)
        info = np.iinfo(self.dtype)
        bad = np.nonzero((flat < info.min) | (flat > info.max))[0]
        if len(bad):
            item = int(np.searchsorted(np.cumsum(sizes), bad[0], side="right"))
            raise ValueError(f"{self.prefix}: item {len(self._sizes) + item + 1} (line {len(self._sizes) + item + 1} of "
                             f"the text) holds the value {int(flat[bad[0]])}, which the sidecar's {self.dtype.name} "
                             f"cannot hold ({info.min}..{info.max})")
        self._bin.write(flat.astype(self.dtype).tobytes(order="C"))
        self._sizes.extend(sizes)
        self._pending_sizes, self._values = [], []

    def close(self) -> int:
        """Write the rest and the index; returns the item count."""
        self._flush()
        self._bin.close()
        n = len(self._sizes)
        sizes = np.frombuffer(self._sizes, dtype=np.int32) if n else np.zeros(0, dtype=np.int32)
        with open(self.prefix + ".idx", "wb") as f:  # MMapIndexedDataset.Index's layout, version 1
            f.write(indexed_dataset.MMapIndexedDataset.Index._HDR_MAGIC)
            f.write(struct.pack("<Q", 1))
            f.write(struct.pack("<B", indexed_dataset._dtype_header_code(self.dtype.type)))
            f.write(struct.pack("<Q", n))
            f.write(sizes.tobytes(order="C"))
            offset = 0
            for start in range(0, n, 1 << 20):  # byte offsets of each item, a million at a time
                piece = sizes[start:start + (1 << 20)].astype(np.int64) * self.dtype.itemsize
                pointers = np.cumsum(piece) - piece + offset
                f.write(pointers.tobytes(order="C"))
                offset += int(piece.sum())
        return n

    def __enter__(self) -> "SidecarWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self.close()
                return
            except BaseException:
                self.discard()
                raise
        self.discard()

    def discard(self) -> None:
        """Close and remove both files (after an error)."""
        self._bin.close()
        for ext in (".bin", ".idx"):
            if os.path.exists(self.prefix + ext):
                os.remove(self.prefix + ext)


def write(prefix: str, items: Iterable[Sequence[int]], dtype=np.int32) -> int:
    """Write one item per line (fairseq's mmap format, :class:`SidecarWriter`); returns the item count."""
    with SidecarWriter(prefix, dtype=dtype) as w:
        for item in items:
            w.add(item)
    return len(w._sizes)


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
