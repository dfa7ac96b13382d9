"""Subword gap sequences in the released distance-mask code's convention (Hou et al. 2022, §3)."""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

#: Marker in a word-gap list for the gap between two sentences of one line.
SENTENCE_BREAK = -1
#: Gap inside a BPE-split word.
INSIDE_WORD_GAP = 1
#: Gap between two sentences of one line, after the +1 shift.
SENTENCE_GAP = 999
#: Gap between the last subword and EOS: larger than any other gap.
EOS_GAP = 2000


def subword_gaps(word_gaps: Sequence[int], pieces: Sequence[int]) -> List[int]:
    """One gap after each subword (length ``sum(pieces)``, the last one before EOS), Hou et al. 2022 §3.

    Inside a split word the gap is 1; between words it is the word distance + 1; between sentences
    of one line (``SENTENCE_BREAK`` in ``word_gaps``) it is 999; before EOS it is 2000, or one more than
    the largest other gap if that is larger.
    """
    return subword_gaps_array(np.asarray(word_gaps, dtype=np.int64), np.asarray(pieces, dtype=np.int64)).tolist()


def subword_gaps_array(word_gaps: np.ndarray, pieces: np.ndarray) -> np.ndarray:
    """Vectorised :func:`subword_gaps` on int arrays (n − 1,) and (n,) → (sum(pieces),)."""
    n = len(pieces)
    if len(word_gaps) != max(n - 1, 0):
        raise ValueError(f"{n} words need {max(n - 1, 0)} word gaps, found {len(word_gaps)}")
    if n and int(pieces.min()) < 1:
        raise ValueError(f"every word needs at least one subword, found pieces {pieces.tolist()}")
    between = np.where(word_gaps == SENTENCE_BREAK, SENTENCE_GAP, word_gaps + 1)
    if len(between) and int(word_gaps[word_gaps != SENTENCE_BREAK].min(initial=0)) < 0:
        raise ValueError(f"word gaps must be >= 0 or SENTENCE_BREAK, found {word_gaps.tolist()}")
    out = np.full(int(pieces.sum()), INSIDE_WORD_GAP, dtype=np.int64)
    if n == 0:
        return out
    ends = np.cumsum(pieces) - 1  # index of each word's last subword
    out[ends[:-1]] = between
    out[ends[-1]] = max(EOS_GAP, int(between.max(initial=0)) + 1)
    return out
