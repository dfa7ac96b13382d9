"""Checks of parsed sentences: CoNLL-U word IDs, and whether dependency heads form a tree; the one place heads are
validated.

Sentence checks (:func:`id_fault`, :func:`dependency_fault`) return what is wrong (a sentence-level message, words
1-based as in CoNLL-U) or None, and the callers add the file, line and sentence. Line checks
(:func:`check_head_range`, :func:`line_roots`: the heads of a corpus line, offset to line positions, one root per
sentence) raise ValueError naming the first bad word (0-based), for the algorithms that read heads.

A dependency tree (CoNLL-U, heads 1-based, 0 = root) has exactly one root, no word that is its own head and no
cycle, so that every word reaches the root by its heads. The fallback for a sentence whose heads are no tree is
:func:`chain_heads`, the dependency of the parser's own fallback for a failed parse
(``syntrans.parsing.trivial.fallback_parse``).
"""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

import numpy as np

_RANGE = re.compile(r"[1-9][0-9]*-[1-9][0-9]*")  # a multi-word token, e.g. 7-8
_EMPTY = re.compile(r"[0-9]+\.[1-9][0-9]*")  # an empty node, e.g. 8.1


def is_word_id(value: str) -> bool:
    """Whether a CoNLL-U ID is a syntactic word's (not a multi-word token's range nor an empty node)."""
    return value.isdigit() or not (_RANGE.fullmatch(value) or _EMPTY.fullmatch(value))  # digits: the common case


_COUNTING: List[str] = []  # "1", "2", …: the IDs of a sentence without ranges or empty nodes, grown on demand


def _counting(n: int) -> List[str]:
    while len(_COUNTING) < n:
        _COUNTING.append(str(len(_COUNTING) + 1))
    return _COUNTING[:n]


def id_fault(ids: Sequence[str]) -> Optional[Tuple[int, str]]:
    """(0-based row, what is wrong) for the first bad ID of one sentence's CoNLL-U rows, or None.

    ``ids``: the ID column of every row in file order. Ranges (``7-8``) and empty nodes (``8.1``) are allowed
    anywhere; the other IDs must be the integers 1, 2, … n in order, each once.
    """
    if list(ids) == _counting(len(ids)):  # the common case, compared in one pass
        return None
    seen = {}
    expected = 1
    for row, value in enumerate(ids):
        if not is_word_id(value):
            continue
        if not value.isdigit() or not value.isascii():
            return row, (f"word ID {value!r} is not a positive integer (nor a range like 7-8 or an empty node like "
                         "8.1)")
        if value in seen:
            return row, f"word ID {value} appears twice (rows {seen[value] + 1} and {row + 1} of the sentence)"
        if int(value) != expected:
            return row, f"word IDs must run 1, 2, … in order: expected {expected}, found {value}"
        seen[value] = row
        expected += 1
    return None


def dependency_fault(heads: Sequence[int], words: Optional[Sequence[str]] = None) -> Optional[str]:
    """What keeps ``heads`` (1-based, 0 = root, each in 0..n) from being a tree, or None when they are one.

    The first fault in this order: a word that is its own head, no root or several, a cycle (named by its words).
    """
    n = len(heads)

    def name(w: int) -> str:  # w 1-based
        return f"word {w} ({words[w - 1]!r})" if words is not None else f"word {w}"

    for w, h in enumerate(heads, 1):
        if h == w:
            return f"{name(w)} is its own head"
    roots = [w for w, h in enumerate(heads, 1) if h == 0]
    if not roots:
        return f"no word has head 0: the sentence has no root (expected exactly one among its {n} words)"
    if len(roots) > 1:
        shown = ", ".join(str(w) for w in roots[:5]) + (", …" if len(roots) > 5 else "")
        return f"{len(roots)} words have head 0 (words {shown}): a tree has exactly one root"
    state = [0] * (n + 1)  # 0: not seen, 1: on the current path, 2: reaches the root
    state[0] = 2
    for start in range(1, n + 1):
        path: List[int] = []
        w = start
        while state[w] == 0:
            state[w] = 1
            path.append(w)
            w = heads[w - 1]
        if state[w] == 1:  # back on the current path: a cycle through w
            cycle = path[path.index(w):] + [w]
            return "the heads run into a cycle: " + " → ".join(name(x) for x in cycle)
        for x in path:
            state[x] = 2
    return None


def head_range_fault(heads: Sequence[int], words: Optional[Sequence[str]] = None) -> Optional[str]:
    """What is wrong with the first head of ``heads`` (1-based, 0 = root) outside 0..n (n = ``len(heads)``), or None:
    the range check every reader of heads shares (a tree is :func:`dependency_fault`'s)."""
    n = len(heads)
    for w, h in enumerate(heads, 1):
        if not isinstance(h, (int, np.integer)) or not 0 <= h <= n:
            name = f"word {w} ({words[w - 1]!r})" if words is not None else f"word {w}"
            return f"{name} has head {h!r}, outside 0..{n} (1-based word index, 0 = root)"
    return None


class NotATree(ValueError):
    """Dependency heads that are no tree, refused (``--strict``, or a route that has no fallback)."""


def gate_heads(sentence, where: str, strict: bool) -> Optional[str]:
    """The one gate of a parse's dependency heads, and the one fallback policy, that every route passes a parsed
    sentence through (preprocessing, translation, the Python API): None when ``sentence.heads`` form a tree (or it has
    none). Otherwise, under ``strict``, :class:`NotATree` naming ``where`` and the fault; else the sentence's heads
    are replaced in place by :func:`chain_heads` and its relations dropped, and the fault is returned for the caller
    to count and report."""
    if sentence.heads is None:
        return None
    fault = head_range_fault(sentence.heads, sentence.words) or dependency_fault(sentence.heads, sentence.words)
    if fault is None:
        return None
    if strict:
        raise NotATree(f"{where}: the dependency heads are no tree: {fault}")
    sentence.heads, sentence.deprels = chain_heads(len(sentence.words)), None
    return fault


def chain_heads(n: int) -> List[int]:
    """The fallback heads of an n-word sentence: each word's head is the next word, the last word is the root."""
    return [w + 1 for w in range(1, n)] + [0]


def check_head_range(heads) -> None:
    """``heads`` (n,) ints: each a 1-based head word in 0..n (0 = root) and not the word itself; raises ValueError naming
    the first bad word (0-based). Cycles are not checked (:func:`line_roots`)."""
    heads = np.asarray(heads)
    n = len(heads)
    bad = np.flatnonzero((heads < 0) | (heads > n))
    if len(bad):
        w = int(bad[0])
        raise ValueError(f"word {w} (0-based) has head {int(heads[w])}, expected 0..{n} (1-based word index, 0 = root)")
    bad = np.flatnonzero(heads == np.arange(1, n + 1))
    if len(bad):
        w = int(bad[0])
        raise ValueError(f"word {w} (0-based) is its own head (head {int(heads[w])}), expected another word or 0 (root)")


def line_roots(heads: Sequence[int]) -> List[int]:
    """The 0-based root word each word reaches by its heads (1-based line positions, 0 = root; a line may hold several
    sentences, each with its own root), after :func:`check_head_range`. ValueError naming the first word whose heads
    run into a cycle."""
    check_head_range(heads)
    h = [int(x) for x in heads]
    n = len(h)
    root = [-1] * n  # 0-based root word of each word
    for w in range(n):
        chain, on_chain = [], set()
        cur = w
        while root[cur] < 0:
            if h[cur] == 0:
                root[cur] = cur
                break
            if cur in on_chain:
                raise ValueError(f"the heads of word {w} (0-based) run into a cycle through word {cur}; "
                                 f"every word must reach a root (head 0)")
            chain.append(cur)
            on_chain.add(cur)
            cur = h[cur] - 1
        for c in chain:
            root[c] = root[cur]
    return root


def tree_lines(text: str, one_per_line: bool = True) -> List[int]:
    """The 1-based line on which each tree of a PTB bracket file starts, in order.

    Raises :class:`BracketError` naming the line of the fault (not the line of the tree it is in) for a ')' that closes
    nothing, a tree not closed by the end of the file (the line where it starts), text outside brackets, and a tree
    that starts on the line where the previous one ends (tree k belongs to line k of the text, so trees go one per
    line, or on lines of their own separated by blank lines; not checked when ``one_per_line`` is False, for files whose
    trees are not tied to lines). Vectorised over the file's bytes.
    """
    import numpy as np  # lazy: this module's other checks need no numpy

    b = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if not len(b):
        return []
    step = (b == ord("(")).astype(np.int8) - (b == ord(")")).astype(np.int8)
    depth = np.cumsum(step, dtype=np.int32)  # (n_bytes,) depth after each byte
    newlines = np.flatnonzero(b == ord("\n"))

    def line_of(pos) -> int:
        return int(np.searchsorted(newlines, pos)) + 1

    below = np.flatnonzero(depth < 0)
    if len(below):
        return _fault(line_of(below[0]), "a ')' that closes no bracket (the trees before it are complete)")
    starts = np.flatnonzero((step == 1) & (depth == 1))
    if depth[-1] > 0:
        end = line_of(len(b) - 1)
        return _fault(line_of(starts[-1]), f"the tree that starts on this line is not closed: {int(depth[-1])} ')' "
                                           f"missing at the end of the file (line {end})")
    space = np.isin(b, np.frombuffer(b" \t\n\r\v\f", dtype=np.uint8))
    outside = np.flatnonzero((depth == 0) & (step == 0) & ~space)
    if len(outside):
        pos = int(outside[0])
        return _fault(line_of(pos), f"text outside brackets: {text.encode('utf-8')[pos:pos + 40].decode('utf-8', 'replace')!r}")
    ends = np.flatnonzero((step == -1) & (depth == 0))
    start_lines = np.searchsorted(newlines, starts) + 1
    end_lines = np.searchsorted(newlines, ends) + 1
    same = np.flatnonzero(start_lines[1:] == end_lines[:-1]) if one_per_line else []
    if len(same):
        k = int(same[0]) + 1  # 0-based tree that starts where tree k - 1 ends
        return _fault(int(start_lines[k]), f"tree {k + 1} starts on the line where tree {k} ends: tree k belongs to "
                                           "line k of the text, so write one tree per line (or trees on lines of their "
                                           "own, separated by blank lines)")
    return start_lines.tolist()


class BracketError(ValueError):
    """A fault in the brackets of a PTB file: ``line`` (1-based) and ``what``; the message is ``line L: what``."""

    def __init__(self, line: int, what: str):
        super().__init__(f"line {line}: {what}")
        self.line, self.what = line, what


def _fault(line: int, what: str):
    raise BracketError(line, what)
