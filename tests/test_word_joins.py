"""Words without a subword piece of their own (issue 50): joined to the word whose piece holds them, the parse
contracted by the multi-word-token rules (syntrans.syntax.word_groups, word_joins), in the sidecar build and in
translation alike; refused under --strict. Expected values are worked out by hand in each docstring."""
from __future__ import annotations

import pytest

from syntrans.data.build_sidecars import build_side
from syntrans.data.piece_routes import PieceRoute
from syntrans.data.sidecars import Sidecar
from syntrans.hub.source_syntax import line_arrays
from syntrans.syntax.parsed import ParsedSentence
from syntrans.syntax.trees import as_tree
from syntrans.syntax.word_groups import group_heads, group_tree
from syntrans.syntax.word_joins import join_uncovered, owners

SP = PieceRoute("sentencepiece")
RAW = PieceRoute("sentencepiece", char_spans=True)  # the raw-text route: the parse's character spans place the words


def lieferwagen(spans: bool = True) -> ParsedSentence:
    """``Ein Lieferwagen fährt`` parsed as if the tokenizer had split ``Liefer`` ``wagen``: Ein →det wagen,
    Liefer →compound wagen, wagen →nsubj fährt, fährt root; with the words' character spans in the line."""
    return ParsedSentence(["Ein", "Liefer", "wagen", "fährt"], [3, 3, 4, 0], ["det", "compound", "nsubj", "root"],
                          "(ROOT (S (NP (DET Ein) (NOUN Liefer) (NOUN wagen)) (VP (VERB fährt))))", line=1,
                          spans=[(0, 3), (4, 10), (10, 15), (16, 21)] if spans else None)


@pytest.mark.fast
def test_a_word_is_joined_to_the_word_whose_piece_holds_it():
    """``wagen`` (word 2, 0-based) has no piece: joined to ``Liefer``. The group {Liefer, wagen}'s external word is
    ``wagen`` (Liefer's head lies inside the group), so the group takes wagen's head (fährt, now word 3) and
    relation; Ein's head ``wagen`` becomes the group (word 2); the tree keeps Liefer's leaf, relabelled; the span runs
    from Liefer's start to wagen's end."""
    s = lieferwagen()
    got = join_uncovered([s], [2], "t.de, line 1")
    (j,) = got.sentences
    assert got.word_map == [0, 1, 1, 2] and (got.words, got.merged_sentences) == (1, 0)
    assert j.words == ["Ein", "Lieferwagen", "fährt"]
    assert j.heads == [2, 3, 0] and j.deprels == ["det", "nsubj", "root"]
    assert str(j.tree) == "(ROOT (S (NP (DET Ein) (NOUN Lieferwagen)) (VP (VERB fährt))))"
    assert j.spans == [(0, 3), (4, 15), (16, 21)] and j.line == 1
    assert s.words == ["Ein", "Liefer", "wagen", "fährt"] and s.heads == [3, 3, 4, 0]  # not changed in place


@pytest.mark.fast
def test_the_group_head_is_its_word_closest_to_the_root():
    """w1 → w3, w2 → w1, w3 → w5, w4 → w5, w5 root; the group {w2, w3} has two words headed outside it: w2 (depth 3)
    and w3 (depth 1). The group takes w3's head (w5, group 4) and relation; taking the first external word (w2 → w1)
    would make w1 and the group head each other."""
    heads, rels = group_heads([3, 1, 5, 5, 0], ["a", "b", "c", "d", "root"], [0, 1, 1, 2, 3])
    assert heads == [2, 4, 4, 0] and rels == ["a", "c", "d", "root"]


@pytest.mark.fast
def test_a_cycle_is_refused():
    with pytest.raises(ValueError, match="cycle"):
        group_heads([2, 1, 0], None, [0, 1, 2])


@pytest.mark.fast
def test_group_tree_drops_the_joined_leaves_and_empty_nodes():
    """The leaves ``b`` and ``c`` joined to ``a``: their preterminals and the node holding only them go."""
    tree = group_tree("(ROOT (S (X a) (Y (Z b) (W c)) (V d)))", [0, 0, 0, 1], ["abc", "d"])
    assert str(tree) == "(ROOT (S (X abc) (V d)))"
    assert str(as_tree("(ROOT (S (X a)))")) == "(ROOT (S (X a)))"


@pytest.mark.fast
def test_a_joined_first_word_of_a_sentence_merges_it_into_the_one_before():
    """``Hi .`` and ``Yes`` as two sentences under the pieces ``▁Hi .Yes``: ``Yes`` (line word 2) has no piece and
    joins ``.``. The sentences merge first: Yes's root is headed by Hi (the first root) as ``parataxis``; then the
    group {., Yes} has two words headed by Hi, both at depth 1: the first (``.``, punct) gives its relation."""
    a = ParsedSentence(["Hi", "."], [0, 1], ["root", "punct"], "(ROOT (S (INTJ Hi) (PUNCT .)))", line=4)
    b = ParsedSentence(["Yes"], [0], ["root"], "(ROOT (S (INTJ Yes)))", line=4)
    got = join_uncovered([a, b], [2], "line 4")
    (m,) = got.sentences
    assert (got.words, got.merged_sentences, got.word_map) == (1, 1, [0, 1, 1])
    assert m.words == ["Hi", ".Yes"] and m.heads == [0, 1] and m.deprels == ["root", "punct"]
    assert str(m.tree) == "(ROOT (S (INTJ Hi) (PUNCT .Yes)))"


@pytest.mark.fast
def test_the_first_word_without_a_piece_is_an_error():
    assert owners([1, 2], 4) == [0, 0, 0, 3]
    with pytest.raises(ValueError, match="line 9: the first word has no subword piece of its own"):
        owners([0], 3, "line 9")


def _conllu(s: ParsedSentence) -> str:
    """CoNLL-U of one sentence (with start_char/end_char in MISC when it has spans)."""
    misc = [f"start_char={a}|end_char={b}" for a, b in s.spans] if s.spans else ["_"] * len(s.words)
    return "".join(f"{i}\t{w}\t_\tX\tX\t_\t{h}\t{r}\t_\t{m}\n" for i, (w, h, r, m) in
                   enumerate(zip(s.words, s.heads, s.deprels, misc), 1)) + "\n"


def test_the_sidecar_build_joins_and_counts_and_strict_refuses(tmp_path):
    """Line 1, ``▁Ein ▁Lieferwagen ▁fährt``: ``wagen`` lies wholly inside Liefer's piece and is joined; the sidecars
    hold the joined parse (3 words: word index 0, 1, 2; heads 2, 3, 0). Line 2, ``▁Ein ▁Lieferw agen ▁fährt``:
    ``agen`` opens with wagen's ``a``, so wagen keeps a piece and nothing is joined. Both lines have a piece crossing
    the Liefer|wagen boundary. The report counts the joined word and its line; under --strict the build stops naming
    the file, the line and the word, and leaves nothing behind."""
    text, parse = tmp_path / "t.de", tmp_path / "p.de.conllu"
    text.write_text("▁Ein ▁Lieferwagen ▁fährt\n▁Ein ▁Lieferw agen ▁fährt\n", encoding="utf-8")
    parse.write_text(_conllu(lieferwagen(spans=False)) * 2, encoding="utf-8")
    rep = build_side(str(text), str(parse), str(tmp_path / "out"), route=SP)
    assert (rep.joined, rep.joined_lines, rep.merged_sentences, rep.words) == (1, [1], 0, 3 + 4)
    assert (rep.crossing, rep.crossing_lines) == (2, [1, 2])
    assert "words without a piece of their own 1 in 1 lines (lines 1)" in rep.summary()
    word, head = Sidecar(str(tmp_path / "out.word")), Sidecar(str(tmp_path / "out.head"))
    assert word[0].tolist() == [0, 1, 2] and head[0].tolist() == [2, 3, 0]
    assert word[1].tolist() == [0, 1, 2, 3] and head[1].tolist() == [3, 3, 4, 0]  # line 2: wagen has ``agen``
    with pytest.raises(ValueError, match=r"t\.de, line 1: parse word 3 'wagen' has no subword piece of its own .*"
                                         r"begins in word 2 'Liefer'.*--strict refuses"):
        build_side(str(text), str(parse), str(tmp_path / "strict"), route=SP, strict=True)
    assert not list(tmp_path.glob("strict.*"))


@pytest.mark.parametrize("route", [SP, RAW], ids=["tokenized", "raw"])
def test_translation_joins_as_the_sidecar_build_does(tmp_path, route):
    """syntrans-translate's in-memory sidecars of the same line equal what the build wrote, on the tokenized route
    (words found in order) and the raw-text route (words placed by their spans)."""
    sentence = lieferwagen(spans=route.char_spans)
    items = line_arrays(["▁Ein", "▁Lieferwagen", "▁fährt"], [sentence], "input line 1", route=route)
    text, parse = tmp_path / "t.de", tmp_path / "p.de.conllu"
    text.write_text("▁Ein ▁Lieferwagen ▁fährt\n", encoding="utf-8")
    parse.write_text(_conllu(sentence), encoding="utf-8")
    rep = build_side(str(text), str(parse), str(tmp_path / "out"), route=route)
    assert rep.joined == 1 and list(items["head"]) == [2, 3, 0]
    for kind in ("word", "head", "label"):
        assert list(items[kind]) == Sidecar(str(tmp_path / f"out.{kind}"))[0].tolist(), kind
