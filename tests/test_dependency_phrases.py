"""Phrase-structure trees from dependency trees (syntrans.syntax.dependency_phrases): the German constituency parser's
training trees, converted from UD GSD. Expected trees are written out by hand from the rules of the module."""
from __future__ import annotations

import pytest

from syntrans.syntax.dependency_phrases import phrase_tree, projectivize
from syntrans.syntax.trees import tree_distances

pytestmark = pytest.mark.fast


def test_heads_project_phrases_in_word_order():
    """``Ein Hund läuft im Park .``: Hund ← Ein (det); läuft root ← Hund (nsubj), Park (obl), . (punct);
    Park ← im (case): an NP with a case marker is a PP; the verbal root is S."""
    words = ["Ein", "Hund", "läuft", "im", "Park", "."]
    heads = [2, 3, 0, 5, 3, 3]
    upos = ["DET", "NOUN", "VERB", "ADP", "NOUN", "PUNCT"]
    rels = ["det", "nsubj", "root", "case", "obl", "punct"]
    tree, lifted = phrase_tree(words, heads, upos, rels)
    assert lifted == 0
    assert tree == "(ROOT (S (NP (DET Ein) (NOUN Hund)) (VERB läuft) (PP (ADP im) (NOUN Park)) (PUNCT .)))"
    # the distances it gives: a boundary inside a small phrase is lower than one between the root's phrases
    assert tree_distances(tree) == [1, 2, 2, 1, 2]


def test_a_non_projective_arc_is_lifted_to_the_heads_head():
    """w1 → w4, w2 → w4, w3 → w1, w4 root: the arc w3 → w1 spans w2, which w1 does not dominate (its head is w4):
    non-projective; lifted to w1's head, w4: heads 4, 4, 4, 0, one phrase of w4 over all four words."""
    heads, lifted = projectivize([4, 4, 1, 0])
    assert (heads, lifted) == ([4, 4, 4, 0], 1)
    tree, n = phrase_tree(["a", "b", "c", "d"], [4, 4, 1, 0], ["X"] * 4)
    assert n == 1 and tree == "(ROOT (XP (X a) (X b) (X c) (X d)))"


def test_brackets_are_escaped_and_bad_input_is_refused():
    tree, _ = phrase_tree(["(", "x", ")"], [2, 0, 2], ["PUNCT", "NOUN", "PUNCT"])
    assert tree == "(ROOT (NP (PUNCT -LRB-) (NOUN x) (PUNCT -RRB-)))"
    tree, _ = phrase_tree(["super", ":-)", "100 000"], [0, 1, 1], ["ADJ", "SYM", "NUM"])
    assert tree == "(ROOT (AP (ADJ super) (SYM :--RRB-) (NUM 100_000)))"
    with pytest.raises(ValueError, match="expected one root, found 2"):
        phrase_tree(["a", "b"], [0, 0], ["X", "X"])
    with pytest.raises(ValueError, match="2 words but 1 heads"):
        phrase_tree(["a", "b"], [0], ["X", "X"])
