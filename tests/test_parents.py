"""Subword parent positions (PASCAL "middle", LISA "first", DBSA "chain") from word dependency heads."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntrans.syntax import PARENT_MODES, read_parsed, subword_parents, subword_parents_array

pytestmark = pytest.mark.fast

GUM = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gum"


# --------------------------------------------------------------------------- independent reference

def word_spans(pieces):
    """[(first, last)] subword positions of each word, by counting."""
    spans, pos = [], 0
    for p in pieces:
        spans.append((pos, pos + p - 1))
        pos += p
    return spans


def reference_parents(heads, pieces, mode):
    """Loop-based parents, written from the definitions (no numpy)."""
    spans = word_spans(pieces)
    out = []
    for w, (first, last) in enumerate(spans):
        t = w if heads[w] == 0 else heads[w] - 1
        t_first, t_last = spans[t]
        for s in range(first, last + 1):
            if mode == "middle":
                out.append((t_first + t_last) / 2)
            elif mode == "first":
                out.append(float(t_first))
            elif s < last:  # chain, non-final piece
                out.append(float(s + 1))
            else:  # chain, final piece
                out.append(float(s if heads[w] == 0 else t_first))
    return out


# --------------------------------------------------------------------------- hand examples

# words "the" | "cat@@ s" | "sle@@ ep@@ s", pieces [1, 2, 3], heads [2, 3, 0]
# subwords: 0 the | 1 cat@@ 2 s | 3 sle@@ 4 ep@@ 5 s; starts [0, 1, 3]
# the → cats, cats → sleeps, sleeps = root
HEADS, PIECES = [2, 3, 0], [1, 2, 3]


def test_constant():
    assert PARENT_MODES == ("middle", "first", "chain")


def test_hand_middle():
    # the → mean(1, 2) = 1.5; cat@@, s → mean(3, 4, 5) = 4.0; sleeps is root → its own mean 4.0
    assert subword_parents(HEADS, PIECES, "middle") == [1.5, 4.0, 4.0, 4.0, 4.0, 4.0]


def test_hand_first():
    # the → 1 (cat@@); cat@@, s → 3 (sle@@); sleeps root → its own first, 3
    assert subword_parents(HEADS, PIECES, "first") == [1.0, 3.0, 3.0, 3.0, 3.0, 3.0]


def test_hand_chain():
    # 0 the (final) → 1 (cat@@); 1 cat@@ → 2; 2 s (final) → 3 (sle@@);
    # 3 sle@@ → 4; 4 ep@@ → 5; 5 s (final of root) → 5 itself
    assert subword_parents(HEADS, PIECES, "chain") == [1.0, 2.0, 3.0, 4.0, 5.0, 5.0]


def test_hand_even_middle_and_root_split():
    # "a@@ b" (2 pieces) ← "c" ; "a@@ b" is root: heads [0, 1], pieces [2, 1]
    # middle: ab's own mean 0.5 for its pieces, c → 0.5
    assert subword_parents([0, 1], [2, 1], "middle") == [0.5, 0.5, 0.5]
    assert subword_parents([0, 1], [2, 1], "first") == [0.0, 0.0, 0.0]
    # chain: 0 → 1; 1 (final of root) → 1; 2 (final of c) → 0 (first of ab)
    assert subword_parents([0, 1], [2, 1], "chain") == [1.0, 1.0, 0.0]


def test_returns_python_floats_and_array_dtype():
    out = subword_parents(HEADS, PIECES, "first")
    assert all(type(x) is float for x in out)
    arr = subword_parents_array(np.array(HEADS), np.array(PIECES), "middle")
    assert arr.dtype == np.float64 and arr.shape == (6,)


def test_empty():
    for mode in PARENT_MODES:
        assert subword_parents([], [], mode) == []
        assert subword_parents_array(np.zeros(0, np.int64), np.zeros(0, np.int64), mode).shape == (0,)


# --------------------------------------------------------------------------- multi-sentence line

# sentence 1: "a" "b@@ c", heads [2, 0]; sentence 2: "d" "e", local heads [0, 1] → offset by 2: [0, 3]
# line: heads [2, 0, 0, 3], pieces [1, 2, 1, 1]; subwords 0 a | 1 b@@ 2 c | 3 d | 4 e
LINE_HEADS, LINE_PIECES = [2, 0, 0, 3], [1, 2, 1, 1]
SENT_SPAN = [(0, 2), (0, 2), (0, 2), (3, 4), (3, 4)]  # subword span of each subword's sentence


def test_multi_sentence_hand():
    # middle: a → mean(1, 2) = 1.5; bc root → 1.5; d root → 3; e → d = 3
    assert subword_parents(LINE_HEADS, LINE_PIECES, "middle") == [1.5, 1.5, 1.5, 3.0, 3.0]
    assert subword_parents(LINE_HEADS, LINE_PIECES, "first") == [1.0, 1.0, 1.0, 3.0, 3.0]
    # chain: a → 1; b@@ → 2; c (final of root) → 2; d (root) → 3; e → 3
    assert subword_parents(LINE_HEADS, LINE_PIECES, "chain") == [1.0, 2.0, 2.0, 3.0, 3.0]


@pytest.mark.parametrize("mode", PARENT_MODES)
def test_multi_sentence_parents_stay_in_sentence(mode):
    for s, parent in enumerate(subword_parents(LINE_HEADS, LINE_PIECES, mode)):
        lo, hi = SENT_SPAN[s]
        assert lo <= parent <= hi, (mode, s, parent)


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("fn", [subword_parents, lambda h, p, m: subword_parents_array(np.asarray(h), np.asarray(p), m)])
@pytest.mark.parametrize("heads, pieces, mode, match", [
    ([0, 1], [1], "first", r"1 piece counts but 2 heads"),
    ([0, 1], [1, 0], "first", r"word 1 .*0 pieces.*at least 1"),
    ([0, 3], [1, 1], "middle", r"word 1 .*head 3.*0\.\.2"),
    ([-1, 1], [1, 1], "chain", r"word 0 .*head -1.*0\.\.2"),
    ([0, 2], [1, 1], "chain", r"word 1 .*its own head"),
    ([0, 1], [1, 1], "last", r"unknown parent mode 'last'.*middle, first, chain"),
    ([0.0, 1.5], [1, 1], "first", r"heads must be integers"),
])
def test_errors(fn, heads, pieces, mode, match):
    with pytest.raises(ValueError, match=match):
        fn(heads, pieces, mode)


# --------------------------------------------------------------------------- property: vectorised == reference

@st.composite
def lines(draw):
    """(heads, pieces): any heads in 0..n other than the word itself (cycles allowed), pieces 1..4."""
    n = draw(st.integers(0, 12))
    pieces = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    heads = [draw(st.integers(0, n).filter(lambda h, w=w: h != w + 1)) for w in range(n)]
    return heads, pieces


@settings(max_examples=200, deadline=None)
@given(lines(), st.sampled_from(PARENT_MODES))
def test_matches_reference(line, mode):
    heads, pieces = line
    got = subword_parents_array(np.array(heads, dtype=np.int64), np.array(pieces, dtype=np.int64), mode)
    assert got.tolist() == reference_parents(heads, pieces, mode)
    assert subword_parents(heads, pieces, mode) == got.tolist()


# --------------------------------------------------------------------------- GUM gold trees

def fake_bpe(word: str) -> int:
    """Pieces of a deterministic fake BPE: chunks of 3 characters (at least one)."""
    return max(1, math.ceil(len(word) / 3))


def check_line(heads, pieces, sent_of_word):
    """Check all modes on one line against the gold heads; ``sent_of_word[w]`` is w's sentence number."""
    spans = word_spans(pieces)
    sent_span = {}
    for w, k in enumerate(sent_of_word):
        lo, hi = sent_span.get(k, (spans[w][0], spans[w][1]))
        sent_span[k] = (min(lo, spans[w][0]), max(hi, spans[w][1]))
    got = {mode: subword_parents(heads, pieces, mode) for mode in PARENT_MODES}
    for w, (first, last) in enumerate(spans):
        t = w if heads[w] == 0 else heads[w] - 1
        assert sent_of_word[t] == sent_of_word[w]  # the gold data itself does not cross sentences
        lo, hi = sent_span[sent_of_word[w]]
        for s in range(first, last + 1):
            for mode in PARENT_MODES:
                assert lo <= got[mode][s] <= hi, (mode, w, s)
            assert got["first"][s] == spans[t][0]
            assert spans[t][0] <= got["middle"][s] <= spans[t][1]
            if s < last:
                assert got["chain"][s] == s + 1
            elif heads[w] == 0:
                assert got["chain"][s] == s
            else:
                assert got["chain"][s] == spans[t][0]


@pytest.fixture(scope="module")
def gum_docs():
    if not (GUM / "dep").is_dir():
        pytest.skip(f"GUM data not found at {GUM}")
    docs = [read_parsed(str(p)) for p in sorted((GUM / "dep").glob("*.conllu"))]
    if not docs:
        pytest.skip(f"no CoNLL-U files under {GUM / 'dep'}")
    return docs


def test_gum_sentences(gum_docs):
    n = 0
    for doc in gum_docs:
        for sent in doc:
            check_line(sent.heads, [fake_bpe(x) for x in sent.words], [0] * len(sent.words))
            n += 1
    assert n > 1000  # the stored copy has 1536 sentences


def test_gum_multi_sentence_lines(gum_docs):
    n = 0
    for doc in gum_docs:
        i, size = 0, 2
        while i < len(doc):
            group = doc[i:i + size]
            heads, pieces, sent_of_word, offset = [], [], [], 0
            for k, sent in enumerate(group):
                heads += [h + offset if h else 0 for h in sent.heads]
                pieces += [fake_bpe(x) for x in sent.words]
                sent_of_word += [k] * len(sent.words)
                offset += len(sent.words)
            assert heads.count(0) == len(group)  # one root per sentence
            check_line(heads, pieces, sent_of_word)
            n += 1
            i, size = i + size, 5 - size  # alternate lines of 2 and 3 sentences
    assert n > 400
