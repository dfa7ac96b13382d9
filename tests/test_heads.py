"""Word-level parses from predicted subword heads: word_heads inverts subword_parents (chain, first), attachment
counts, the lenient hypothesis word index, and predicted parses written as CoNLL-U and read back."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntrans.syntax.align import bpe_word_index, bpe_words
from syntrans.syntax.heads import (
    HEAD_MODES,
    NO_PARENT,
    OUTSIDE,
    SELF_WORD,
    attachment,
    hypothesis_word_index,
    hypothesis_words,
    predicted_sentence,
    word_heads,
)
from syntrans.syntax.parents import subword_parents_array
from syntrans.syntax.parsed import format_conllu, read_conllu

pytestmark = pytest.mark.fast


# --------------------------------------------------------------------------- PUD-like random lines

def random_tree(rng, n: int) -> list:
    """A random dependency tree over n words (1-based heads, one root), non-projective arcs allowed: words are
    attached one by one, in a random order, to a word already in the tree."""
    order = rng.permutation(n)
    heads = [0] * n
    for k in range(1, n):
        heads[order[k]] = int(order[rng.integers(0, k)]) + 1
    return heads


def random_line(rng):
    """(heads, pieces) of a PUD-like line: 1-3 sentences of 1-30 words, heads offset to line positions, 1-4 BPE
    pieces per word (mostly 1, as in real BPE text)."""
    heads = []
    for _ in range(int(rng.integers(1, 4))):
        off = len(heads)
        heads += [h + off if h else 0 for h in random_tree(rng, int(rng.integers(1, 31)))]
    pieces = rng.choice([1, 1, 1, 1, 2, 2, 3, 4], size=len(heads))
    return np.array(heads, dtype=np.int64), pieces.astype(np.int64)


def is_tree_line(heads) -> bool:
    """Every word reaches a root by following heads (no cycle)."""
    for w in range(len(heads)):
        seen, h = set(), w + 1
        while h:
            if h in seen:
                return False
            seen.add(h)
            h = heads[h - 1]
    return True


@pytest.mark.parametrize("mode", HEAD_MODES)
def test_round_trip_random_pud_like_lines(mode):
    rng = np.random.default_rng(16)
    multi = 0
    for trial in range(600):
        heads, pieces = random_line(rng)
        assert is_tree_line(heads)
        multi += int(np.sum(heads == 0)) > 1
        word_index = np.repeat(np.arange(len(heads)), pieces)
        parents = subword_parents_array(heads, pieces, mode)  # float64 positions, as the sidecars hold them
        got = word_heads(parents, word_index, mode)
        assert got == heads.tolist(), (trial, mode, heads.tolist(), pieces.tolist(), got)
        # the same from int positions, as the generation records carry them (LongTensor → list)
        assert word_heads(parents.astype(np.int64).tolist(), word_index.tolist(), mode) == got
    assert multi > 100  # multi-sentence lines were exercised


@pytest.mark.parametrize("mode", HEAD_MODES)
def test_round_trip_cyclic_heads(mode):
    # subword_parents accepts any heads (cycles, several roots): the word-level reading still inverts it
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 15))
        heads = np.array([int(rng.choice([h for h in range(n + 1) if h != w + 1])) for w in range(n)])
        pieces = rng.integers(1, 5, size=n)
        word_index = np.repeat(np.arange(n), pieces)
        assert word_heads(subword_parents_array(heads, pieces, mode), word_index, mode) == heads.tolist()


def test_modes_read_different_pieces():
    # words "a@@ b" | "c": the chain convention ignores a@@'s parent, the first convention ignores b's
    word_index = [0, 0, 1]
    parents = [2, 1, 0]  # a@@ → c, b → itself, c → a@@
    assert word_heads(parents, word_index, "chain") == [0, 1]  # b (final) points at itself: root; c → word 1
    assert word_heads(parents, word_index, "first") == [2, 1]  # a@@ (first) → c; c → word 1


# --------------------------------------------------------------------------- edge cases

WI = [0, 0, 1, 2, 2]  # words [0 1] [2] [3 4]


def loop_reference(parents, word_index, mode):
    """word_heads written as a plain loop from its definition."""
    n_sub = len(word_index)
    out = []
    for w in range(max(word_index) + 1 if word_index else 0):
        own = [s for s in range(n_sub) if word_index[s] == w]
        r = own[-1] if mode == "chain" else own[0]
        k = parents[r]
        if not 0 <= k < n_sub:
            out.append(OUTSIDE)
        elif k == r:
            out.append(0)
        elif k in own:
            out.append(SELF_WORD)
        else:
            out.append(word_index[k] + 1)
    return out


def test_edge_cases_chain():
    assert word_heads([1, 2, 2, 3, 0], WI, "chain") == [2, 0, 1]  # w0 → w1, w1 root (itself), w2 → w0
    # final pieces pointing at another piece of their own word: no valid head
    assert word_heads([1, 0, 2, 3, 3], WI, "chain") == [SELF_WORD, 0, SELF_WORD]
    # EOS key (position n_sub = 5), past the end, and the -1 of the generation records (EOS/BOS)
    assert word_heads([1, 5, 9, 3, NO_PARENT], WI, "chain") == [OUTSIDE, OUTSIDE, OUTSIDE]


def test_edge_cases_first():
    assert word_heads([0, 3, 0, 4, 2], WI, "first") == [0, 1, SELF_WORD]
    assert word_heads([-1, 0, 5, 0, 0], WI, "first") == [OUTSIDE, OUTSIDE, 1]


def test_single_word_and_empty():
    for mode in HEAD_MODES:
        assert word_heads([0], [0], mode) == [0]
        assert word_heads([-1], [0], mode) == [OUTSIDE]
        assert word_heads([], [], mode) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=10).flatmap(
    lambda pieces: st.tuples(st.just(pieces), st.lists(st.integers(-2, sum(pieces) + 1),
                                                      min_size=sum(pieces), max_size=sum(pieces)))),
       st.sampled_from(HEAD_MODES))
def test_any_parents_match_loop(case, mode):
    pieces, parents = case
    word_index = [w for w, p in enumerate(pieces) for _ in range(p)]
    assert word_heads(parents, word_index, mode) == loop_reference(parents, word_index, mode)


@pytest.mark.parametrize("parents, word_index, mode, match", [
    ([0, 1], [0], "chain", r"one parent per subword"),
    ([0], [0], "middle", r"unknown head mode 'middle'.*chain, first"),
    ([0.5, 1.0], [0, 1], "first", r"whole subword positions.*0\.5"),
    ([0, 1], [1, 2], "chain", r"start at 0"),
    ([0, 1], [0, 2], "chain", r"rise by 0 or 1"),
])
def test_errors(parents, word_index, mode, match):
    with pytest.raises(ValueError, match=match):
        word_heads(parents, word_index, mode)


# --------------------------------------------------------------------------- attachment

def test_attachment():
    gold = [2, 0, 2, 3]
    assert attachment([2, 0, 1, 3], gold) == (3, 4)
    # the markers never count as hits, even against a gold root
    assert attachment([SELF_WORD, OUTSIDE, 2, 3], gold) == (2, 4)
    assert attachment([2, 0, 1, 1], gold, scorable=[True, False, True, True]) == (1, 3)
    assert attachment([], []) == (0, 0)
    with pytest.raises(ValueError, match="one predicted head per gold head"):
        attachment([1, 0], [0])
    with pytest.raises(ValueError, match="scorable flag"):
        attachment([0], [0], scorable=[True, False])


# --------------------------------------------------------------------------- hypothesis words

def test_hypothesis_word_index_matches_strict_one():
    pieces = "the cat@@ s sle@@ ep@@ s .".split()
    assert hypothesis_word_index(pieces) == bpe_word_index(pieces) == [0, 1, 1, 2, 2, 2, 3]
    assert hypothesis_words(pieces) == bpe_words(pieces) == ["the", "cats", "sleeps", "."]


def test_hypothesis_word_index_trailing_marker():
    pieces = ["the", "cat@@", "s", "sle@@"]  # decoding stopped mid-word: EOS closes "sle"
    with pytest.raises(ValueError):
        bpe_word_index(pieces)
    assert hypothesis_word_index(pieces) == [0, 1, 1, 2]
    assert hypothesis_words(pieces) == ["the", "cats", "sle"]
    assert hypothesis_word_index(["a@@"]) == [0] and hypothesis_words(["a@@"]) == ["a"]
    assert hypothesis_word_index([]) == [] and hypothesis_words([]) == []
    assert hypothesis_word_index(["x##", "y"], marker="##") == [0, 0]
    # one word per index, so a collapse over the hypothesis gives one head per spelled word
    assert len(hypothesis_words(pieces)) == max(hypothesis_word_index(pieces)) + 1


# --------------------------------------------------------------------------- CoNLL-U

def test_predicted_sentence_conllu_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    sentences, expected = [], []
    for line in range(1, 41):
        heads, pieces = random_line(rng)
        n = len(heads)
        parents = subword_parents_array(heads, pieces, "chain").astype(np.int64)
        # spoil a few read pieces so that the markers appear: one points at EOS, one inside its own word
        word_index = np.repeat(np.arange(n), pieces)
        last = np.cumsum(pieces) - 1
        parents[last[0]] = len(word_index)
        multi = np.flatnonzero(pieces > 1)
        if len(multi):
            parents[last[multi[0]]] = last[multi[0]] - 1
        pred = word_heads(parents, word_index, "chain")
        words = [f"w{line}_{w}" for w in range(n)]
        sentences.append(predicted_sentence(words, pred, line=line))
        expected.append((words, pred))
    path = tmp_path / "pred.conllu"
    path.write_text(format_conllu(sentences), encoding="utf-8")
    back = read_conllu(str(path))
    assert len(back) == 40
    kinds = set()
    for k, (s, (words, pred)) in enumerate(zip(back, expected)):
        assert s.line == k + 1 and s.words == words
        for h, rel, p in zip(s.heads, s.deprels, pred):
            if p == SELF_WORD:
                assert (h, rel) == (0, "dep:self")
            elif p == OUTSIDE:
                assert (h, rel) == (0, "dep:eos")
            elif p == 0:
                assert (h, rel) == (0, "root")
            else:
                assert (h, rel) == (p, "dep")
            kinds.add(rel)
    assert kinds == {"root", "dep", "dep:self", "dep:eos"}


def test_predicted_sentence_errors():
    with pytest.raises(ValueError, match="2 words but 1 heads"):
        predicted_sentence(["a", "b"], [0])
    with pytest.raises(ValueError, match="word 0 .*predicted head 1"):
        predicted_sentence(["a", "b"], [1, 0])  # a word as its own head is not a word_heads output
    with pytest.raises(ValueError, match="word 1 .*predicted head 5"):
        predicted_sentence(["a", "b"], [0, 5])
