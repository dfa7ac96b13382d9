"""Subword gap sequences (released code's convention, Hou et al. 2022 §3)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntrans.syntax import EOS_GAP, SENTENCE_BREAK, SENTENCE_GAP, subword_gaps, subword_gaps_array

pytestmark = pytest.mark.fast


def test_constants():
    assert SENTENCE_GAP == 999
    assert EOS_GAP == 2000
    assert SENTENCE_BREAK < 0  # never a valid word distance


def test_split_words():
    # words: w0 (1 piece) | w1 (2 pieces) | w2 (1 piece); word gaps 2, 1
    # after w0: 2 + 1 = 3; inside w1: 1; after w1: 1 + 1 = 2; after w2: EOS
    assert subword_gaps([2, 1], [1, 2, 1]) == [3, 1, 2, 2000]


def test_split_last_and_first_word():
    # w0 in 3 pieces, w1 in 2 pieces, word gap 4
    assert subword_gaps([4], [3, 2]) == [1, 1, 5, 1, 2000]


def test_paper_sentence_no_splits():
    # "I swim across the river ." distances [4, 3, 2, 1, 4] → +1 each, then EOS
    assert subword_gaps([4, 3, 2, 1, 4], [1] * 6) == [5, 4, 3, 2, 5, 2000]


def test_multi_sentence_line():
    # two sentences "a b" + "c d" on one line: word gaps [1, BREAK, 1]
    assert subword_gaps([1, SENTENCE_BREAK, 1], [1, 1, 1, 1]) == [2, 999, 2, 2000]
    # with a split word right before the break and a three-sentence line
    assert subword_gaps([1, SENTENCE_BREAK, SENTENCE_BREAK], [1, 2, 1, 1]) == [2, 1, 999, 999, 2000]


def test_eos_larger_than_everything():
    g = subword_gaps([3, SENTENCE_BREAK, 7], [2, 1, 3, 1])
    assert g[-1] == 2000
    assert all(x < g[-1] for x in g[:-1])
    # a word gap that already reaches EOS_GAP: EOS is still strictly the largest
    g = subword_gaps([2500, 1], [1, 1, 1])
    assert g[:-1] == [2501, 2]
    assert g[-1] > 2501


def test_one_word_line():
    assert subword_gaps([], [1]) == [2000]
    assert subword_gaps([], [3]) == [1, 1, 2000]


def test_empty_line():
    assert subword_gaps([], []) == []
    assert subword_gaps_array(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).shape == (0,)


@pytest.mark.parametrize("word_gaps, pieces", [
    ([1], [1]),            # one word needs no gap
    ([], [1, 1]),          # two words need one gap
    ([1, 2, 3], [1, 1]),   # too many
    ([1], []),             # gap for an empty line
])
def test_mismatched_lengths_raise(word_gaps, pieces):
    with pytest.raises(ValueError):
        subword_gaps(word_gaps, pieces)


def test_zero_pieces_raise():
    with pytest.raises(ValueError):
        subword_gaps([1], [1, 0])


def test_negative_word_gap_other_than_break_raises():
    with pytest.raises(ValueError):
        subword_gaps([-2], [1, 1])


def reference(word_gaps, pieces):
    """Loop version of the convention, independent of the code under test."""
    out = []
    n = len(pieces)
    for w in range(n):
        out.extend([1] * (pieces[w] - 1))
        if w < n - 1:
            out.append(999 if word_gaps[w] == SENTENCE_BREAK else word_gaps[w] + 1)
    if n:
        out.append(None)  # EOS placeholder
    return out


@st.composite
def lines(draw):
    n = draw(st.integers(0, 12))
    pieces = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    word_gaps = draw(st.lists(st.one_of(st.integers(0, 30), st.just(SENTENCE_BREAK), st.integers(0, 3000)),
                              min_size=max(n - 1, 0), max_size=max(n - 1, 0)))
    return word_gaps, pieces


@settings(max_examples=200, deadline=None)
@given(lines())
def test_property_against_loop_reference(line):
    word_gaps, pieces = line
    got = subword_gaps(word_gaps, pieces)
    exp = reference(word_gaps, pieces)
    assert len(got) == sum(pieces)
    assert all(isinstance(x, int) for x in got)
    if not pieces:
        assert got == []
        return
    assert got[:-1] == exp[:-1]
    others = got[:-1]
    assert got[-1] > max(others, default=0)
    if max(others, default=0) < 2000:
        assert got[-1] == 2000
    # the array version agrees
    arr = subword_gaps_array(np.asarray(word_gaps, dtype=np.int64), np.asarray(pieces, dtype=np.int64))
    assert arr.tolist() == got
