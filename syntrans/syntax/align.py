"""Word ↔ subword alignment and the word-level facts of one corpus line (pure, no fairseq).

A line of BPE text (subword-nmt style: a piece that continues into the next one ends in ``@@``)
is mapped to words by position: a word ends at every piece that does not end in the marker.
The word-level facts of a line are what the sidecars store (docs/commands.md, data layout):

* ``word``: for each subword, the index of its word in the line (0-based);
* ``head``: for each word its head, 1-based within the line (sentence offsets applied), 0 = root;
* ``dist``: for each gap between consecutive words, the syntactic distance (Hou et al. 2022,
  Algorithm 1), ``SENTENCE_BREAK`` between two sentences of the line.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

import numpy as np

from .gaps import SENTENCE_BREAK

if TYPE_CHECKING:  # only named in annotations: reading parses (stanza's tree reader) is not loaded here
    from .parsed import ParsedSentence


def bpe_word_index(pieces: Sequence[str], marker: str = "@@", open_end: bool = False) -> List[int]:
    """Index of the word each BPE piece belongs to; a piece ending in ``marker`` continues its word.

    A last piece ending in the marker is an error, unless ``open_end`` (a hypothesis may stop mid-word: the EOS
    that follows closes its word)."""
    out: List[int] = []
    w = 0
    for k, p in enumerate(pieces):
        out.append(w)
        if not p.endswith(marker):
            w += 1
        elif k == len(pieces) - 1 and not open_end:
            raise ValueError(f"the last piece {p!r} ends in the continuation marker {marker!r}: the word never ends")
    return out


def bpe_words(pieces: Sequence[str], marker: str = "@@", open_end: bool = False) -> List[str]:
    """The words a BPE line spells (continuation markers removed); with ``open_end``, a last word left open by the
    marker is closed and kept (see :func:`bpe_word_index`)."""
    words: List[str] = []
    cur = ""
    for p in pieces:
        if p.endswith(marker):
            cur += p[: -len(marker)]
        else:
            words.append(cur + p)
            cur = ""
    if cur and open_end:
        words.append(cur)
    return words


def check_line_words(words: Sequence[str], parse_words: Sequence[str], where: str, parse_name: Optional[str] = None) -> None:
    """Check that a line's text and its parse have the same number of words (the one check of sidecar building and
    of translation). Raises ValueError naming ``where`` (the file and line), both counts and the first words of each;
    ``parse_name`` names the parse (default: "its parse")."""
    if len(words) == len(parse_words):
        return
    raise ValueError(
        f"{where}: the tokenized line has {len(words)} words but {parse_name or 'its parse'} has {len(parse_words)} "
        f"for that line (the text spells {len(words)} words: {' '.join(words[:8])!r}…; the parse: "
        f"{' '.join(parse_words[:8])!r}…); the parse must be of the same tokenized text the BPE was applied to")


def check_piece_counts(pieces: np.ndarray, other: np.ndarray, other_name: str) -> None:
    """Validate per-word arrays: ``pieces`` and ``other`` integer, every word with at least one subword;
    raises ValueError naming the first bad word."""
    for name, arr in ((other_name, other), ("pieces", pieces)):
        if arr.dtype.kind not in "iu":
            raise ValueError(f"{name} must be integers, found dtype {arr.dtype}")
    bad = np.flatnonzero(pieces < 1)
    if len(bad):
        w = int(bad[0])
        raise ValueError(f"word {w} (0-based) has {int(pieces[w])} pieces, expected at least 1")


def pieces_per_word(word_index: np.ndarray) -> np.ndarray:
    """Subword count per word from a nondecreasing 0-based word index (n_sub,) → (n_words,)."""
    if len(word_index) == 0:
        return np.zeros(0, dtype=np.int64)
    if word_index[0] != 0 or np.any(np.diff(word_index) < 0) or np.any(np.diff(word_index) > 1):
        raise ValueError(f"a word index must start at 0 and rise by 0 or 1, found {word_index[:20].tolist()}")
    return np.bincount(word_index)


def line_facts(
    sentences: Sequence[ParsedSentence], binarize: bool = False, need_tree: bool = True, need_heads: bool = True
) -> Tuple[Optional[List[int]], Optional[List[int]]]:
    """(heads, dists) of one line holding ``sentences`` in order; None for a view a sentence lacks.

    heads are offset to line positions (1-based, 0 = root, each root within its own sentence);
    dists join each sentence's :func:`tree_distances` with ``SENTENCE_BREAK``.
    """
    heads: Optional[List[int]] = [] if need_heads else None
    dists: Optional[List[int]] = [] if need_tree else None
    offset = 0
    for k, s in enumerate(sentences):
        if heads is not None:
            if s.heads is None:
                heads = None
            else:
                heads.extend(h + offset if h else 0 for h in s.heads)
        if dists is not None:
            if s.tree is None:
                dists = None
            else:
                if k:
                    dists.append(SENTENCE_BREAK)
                dists.extend(s.distances(binarize))
        offset += len(s.words)
    return heads, dists
