"""Training-set filters with Moses clean-corpus-n semantics, and the every-N-th validation holdout.

Lengths are token counts (whitespace fields of the tokenized line; on the raw-text route, ``--no-moses``, of the raw
line: its whitespace-separated words, punctuation attached). A pair is dropped by the first
filter it fails, in this order, and counted under that filter's name:

* ``empty``: a side has no token;
* ``too_short``: a side has fewer than ``min_len`` tokens;
* ``too_long``: a side has more than ``max_len`` tokens;
* ``ratio``: one side has more than ``ratio`` times the tokens of the other.

With a recipe's language filter (:mod:`syntrans.prep.langid_filter`), a pair that passes these is dropped
when either side is not identified as its language, counted under :data:`LANGUAGE` (``language``).

The filters apply to the training split only; valid and test pairs are never dropped.
"""
from __future__ import annotations

from collections.abc import Iterable

REASONS = ("empty", "too_short", "too_long", "ratio")
LANGUAGE = "language"  # the language filter's reason, after REASONS (only where the filter is on)


def drop_reason(n_a: int, n_b: int, min_len: int = 1, max_len: int | None = None,
                ratio: float | None = None) -> str | None:
    """Why a pair with ``n_a`` and ``n_b`` tokens is dropped (a name from REASONS), or None to keep it."""
    if n_a == 0 or n_b == 0:
        return "empty"
    if n_a < min_len or n_b < min_len:
        return "too_short"
    if max_len is not None and (n_a > max_len or n_b > max_len):
        return "too_long"
    if ratio is not None and (n_a / n_b > ratio or n_b / n_a > ratio):
        return "ratio"
    return None


def clean_pairs(pairs: Iterable[tuple[str, str]], min_len: int = 1, max_len: int | None = None,
                ratio: float | None = None) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """(kept pairs in order, {reason: number dropped} with every reason in REASONS) for tokenized pairs."""
    kept, dropped = [], dict.fromkeys(REASONS, 0)
    for a, b in pairs:
        why = drop_reason(len(a.split()), len(b.split()), min_len, max_len, ratio)
        if why is None:
            kept.append((a, b))
        else:
            dropped[why] += 1
    return kept, dropped


def is_holdout(k: int, every: int) -> bool:
    """Whether the k-th (1-based) kept training pair goes to valid: every ``every``-th (awk ``NR % every == 0``)."""
    return every > 0 and k % every == 0
