"""Byte-level BPE as fairseq's ``--bpe gpt2`` applies it (GPT-2's encoder.json + vocab.bpe), without fairseq.

What a line becomes (fairseq's ``gpt2_bpe_utils``, read, not copied; ``tests/test_char_align.py`` checks
that the ids are fairseq's own on a hand-made vocabulary and real lines):

1. the line is cut into pre-tokens by GPT-2's pattern (:data:`PRETOKEN`): contractions, a letter run, a
   digit run or a run of other non-space characters each with at most one leading space, whitespace runs;
2. each pre-token's UTF-8 bytes are written as printable characters, one per byte (:func:`byte_alphabet`:
   the printable Latin-1 bytes stand for themselves, the other 68 for the characters from U+0100 on in
   byte order; a leading space is ``Ġ``);
3. the pair of neighbouring symbols with the best (lowest) merge rank is merged everywhere, left to right,
   until no neighbouring pair has a rank;
4. each symbol is replaced by its id in encoder.json. fairseq writes the ids as decimal text joined by
   spaces: that is the line ``fairseq-preprocess`` reads (examples/roberta/multiprocessing_bpe_encoder.py
   strips each line first).

A piece (an id) spells bytes, not characters: a character of several bytes may be split between two pieces.
:meth:`ByteLevelBPE.piece_bytes` gives those bytes for :func:`syntrans.syntax.char_align.align_piece_bytes`.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Dict, List, Mapping, Sequence, Tuple

import regex

#: GPT-2's pre-tokenization pattern (as in its encoder, without re.IGNORECASE)
PRETOKEN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


@lru_cache(maxsize=1)
def byte_alphabet() -> Tuple[str, ...]:
    """The character that stands for each byte value 0..255 in byte-level BPE vocabularies."""
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(ord("¡"), ord("¬") + 1)) | set(range(ord("®"), 256))
    table, extra = [], 0
    for b in range(256):
        if b in printable:
            table.append(chr(b))
        else:
            table.append(chr(256 + extra))
            extra += 1
    return tuple(table)


def to_symbols(data: bytes) -> str:
    """``data`` written in the byte alphabet."""
    alphabet = byte_alphabet()
    return "".join(alphabet[b] for b in data)


@lru_cache(maxsize=1)
def _byte_values() -> Dict[str, int]:
    return {c: b for b, c in enumerate(byte_alphabet())}


def from_symbols(symbols: str) -> bytes:
    """The bytes a string of byte-alphabet characters stands for; ValueError for another character."""
    value = _byte_values()
    try:
        return bytes(value[c] for c in symbols)
    except KeyError as e:
        raise ValueError(f"{symbols!r} holds {e.args[0]!r}, which is not a byte-level BPE character") from None


class ByteLevelBPE:
    """A byte-level BPE model: ``vocab`` (symbol string → id, encoder.json) and ``merges`` (pairs, best first)."""

    def __init__(self, vocab: Mapping[str, int], merges: Sequence[Tuple[str, str]]):
        self.vocab: Dict[str, int] = dict(vocab)
        self.symbols: Dict[int, str] = {i: s for s, i in self.vocab.items()}
        # a pair listed twice keeps its last rank, as fairseq's dict(zip(merges, range(...))) does
        self.ranks: Dict[Tuple[str, str], int] = {tuple(pair): r for r, pair in enumerate(merges)}
        self._cache: Dict[str, List[str]] = {}

    @classmethod
    def load(cls, encoder_json: str, vocab_bpe: str) -> "ByteLevelBPE":
        """Read fairseq's two files. As fairseq reads vocab.bpe, its first line (a version header) and the last
        element after splitting on newlines (empty when the file ends in one) are not merges."""
        with open(encoder_json, encoding="utf-8") as f:
            vocab = json.load(f)
        with open(vocab_bpe, encoding="utf-8") as f:
            lines = f.read().split("\n")[1:-1]
        return cls(vocab, [tuple(line.split()) for line in lines])

    def merge(self, token: str) -> List[str]:
        """The symbols one pre-token (in the byte alphabet) becomes."""
        if token in self._cache:
            return self._cache[token]
        syms = list(token)
        while len(syms) > 1:
            best = min(((self.ranks.get(p), p) for p in zip(syms, syms[1:]) if p in self.ranks), default=None)
            if best is None:
                break
            a, b = best[1]
            out, k = [], 0
            while k < len(syms):
                if k + 1 < len(syms) and syms[k] == a and syms[k + 1] == b:
                    out.append(a + b)
                    k += 2
                else:
                    out.append(syms[k])
                    k += 1
            syms = out
        self._cache[token] = syms
        return syms

    def encode(self, line: str) -> List[int]:
        """The ids of ``line``; ValueError naming a symbol encoder.json lacks."""
        ids: List[int] = []
        for pre in PRETOKEN.findall(line):
            for sym in self.merge(to_symbols(pre.encode("utf-8"))):
                if sym not in self.vocab:
                    raise ValueError(f"byte-level BPE: the symbol {sym!r} (of {pre!r} in {line[:60]!r}) is not in "
                                     "encoder.json")
                ids.append(self.vocab[sym])
        return ids

    def piece_bytes(self, piece: int) -> bytes:
        """The bytes one id spells; ValueError for an id encoder.json lacks."""
        if piece not in self.symbols:
            raise ValueError(f"byte-level BPE: id {piece} is not in encoder.json")
        return from_symbols(self.symbols[piece])
