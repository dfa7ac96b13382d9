"""Tests of the synthetic corpus: grammar, gold parses, transduction, files and the CLI."""
import os
from collections import Counter

import pytest

from syntrans.cli.synth import main
from syntrans.syntax.parsed import ParsedSentence, read_parsed
from syntrans.syntax.trees import as_tree
from syntrans.synth import (
    LEXICON,
    generate_corpus,
    split_seed,
    transduce_sentence,
    transduce_tree,
    write_corpus,
)
from syntrans.synth.lexicon import SOURCE_VOCAB, build_lexicon

pytestmark = pytest.mark.fast

SPLITS = ("train", "valid", "test")


# --------------------------------------------------------------------------- helpers

def constituents(tree):
    """(label, start, end, tags) of every phrase (not preterminals or words); ``tags`` of all words."""
    out, tags = [], []

    def walk(node):
        if node.is_preterminal():
            tags.append(node.label)
            return 1
        start = len(tags)
        for c in node.children:
            walk(c)
        out.append((node.label, start, len(tags)))
        return len(tags) - start

    walk(tree)
    return out, tags


def assert_valid_heads(heads):
    n = len(heads)
    assert all(0 <= h <= n for h in heads)
    assert heads.count(0) == 1, f"expected one root, heads={heads}"
    for i in range(n):  # every word reaches the root in at most n steps (so no cycles)
        node, steps = i + 1, 0
        while node != 0:
            node = heads[node - 1]
            steps += 1
            assert steps <= n, f"cycle through word {i + 1} in heads={heads}"


def lexical_head(heads, start, end):
    """The one word of [start, end) whose head lies outside it (asserts there is exactly one)."""
    outside = [i for i in range(start, end) if not start < heads[i] <= end]
    assert len(outside) == 1, f"span {start}..{end} has external heads at {outside}, heads={heads}"
    return outside[0]


HEAD_TAG = {"NP": "NN", "PP": "NN", "VP": "VB", "S": "VB", "SBAR": "VB", "ROOT": "VB", "WHNP": "WDT"}


def check_sentence(s: ParsedSentence, min_len=3, max_len=40):
    assert min_len <= len(s.words) <= max_len
    assert list(s.tree.leaf_labels()) == s.words
    assert len(s.heads) == len(s.deprels) == len(s.words)
    assert_valid_heads(s.heads)
    assert s.deprels[s.heads.index(0)] == "root"
    spans, tags = constituents(s.tree)
    assert s.words[-1] == "." and tags[-1] == "."
    for label, start, end in spans:  # each constituent is a subtree headed by the convention's head
        head = lexical_head(s.heads, start, end)
        assert tags[head] == HEAD_TAG[label], (label, s.words[start:end], s.words[head])


# --------------------------------------------------------------------------- determinism

def read_all(d):
    return {name: open(os.path.join(d, name), "rb").read() for name in sorted(os.listdir(d))}


def test_same_seed_gives_identical_files_and_other_seed_differs(tmp_path):
    sizes = {"train": 40, "valid": 10, "test": 10}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        write_corpus(str(tmp_path / name), sizes, seed)
    a, b, c = (read_all(tmp_path / n) for n in "abc")
    assert len(a) == 12 and a == b
    assert all(a[k] != c[k] for k in a)


def test_lexicon_is_fixed_one_to_one_and_seed_free():
    assert LEXICON == build_lexicon()
    assert set(LEXICON) == set(SOURCE_VOCAB)
    assert len(set(LEXICON.values())) == len(LEXICON)  # injective
    assert not (set(LEXICON.values()) - {"."}) & set(SOURCE_VOCAB)
    assert LEXICON["."] == "."
    # pinned: derived from SHA-256, so independent of PYTHONHASHSEED, the seed and the process
    assert (LEXICON["dog"], LEXICON["sees"], LEXICON["representative"]) == ("la", "di", "fisizozekin")
    assert max(len(w) for w in LEXICON.values()) >= 8  # some long words for BPE to split


def test_splits_differ_and_rarely_overlap(tmp_path):
    summaries = write_corpus(str(tmp_path), {"train": 300, "valid": 100, "test": 100}, 1)
    texts = {s: (tmp_path / f"{s}.src").read_text().splitlines() for s in SPLITS}
    assert texts["valid"] != texts["test"] and texts["valid"] != texts["train"][:100]
    train = set(texts["train"])
    shared = sum(t in train for t in texts["valid"])
    assert shared <= 5
    by_split = {s["split"]: s for s in summaries}
    assert by_split["valid"]["overlap"] >= shared
    assert [s["sentences"] for s in summaries] == [300, 100, 100]
    assert len({split_seed(1, s) for s in SPLITS}) == 3


# --------------------------------------------------------------------------- gold parses

@pytest.fixture(scope="module")
def sample():
    return generate_corpus(500, 11)


def test_every_sentence_is_well_formed_on_both_sides(sample):
    for src, tgt in sample:
        check_sentence(src)
        check_sentence(tgt)
        assert src.line is None


def test_length_bounds_are_enforced():
    pairs = generate_corpus(60, 3, min_len=12, max_len=14)
    assert all(12 <= len(s.words) <= 14 for s, _ in pairs)
    with pytest.raises(ValueError):
        generate_corpus(1, 3, min_len=10, max_len=5)


def test_grammar_produces_relative_clauses_pps_and_coordination(sample):
    counts = Counter()
    for src, _ in sample:
        spans, tags = constituents(src.tree)
        labels = {label for label, _, _ in spans}
        counts.update(labels)
        counts["adjective"] += "JJ" in tags
        counts["determiner"] += "DT" in tags
        counts["np_coord"] += any(lab == "NP" and "CC" in [c.label for c in n.children] for lab, n in _nodes(src.tree))
        counts["clause_coord"] += "CC" in [c.label for c in src.tree.children[0].children]
        counts["intransitive"] += any(lab == "VP" and len(n.children) == 1 for lab, n in _nodes(src.tree))
        counts["transitive"] += any(lab == "VP" and n.children[1].label == "NP" for lab, n in _nodes(src.tree)
                                    if len(n.children) > 1)
    for key in ("SBAR", "PP", "adjective", "determiner", "np_coord", "clause_coord", "intransitive", "transitive"):
        assert counts[key] > 0, (key, counts)
    assert 5 <= sum(len(s.words) for s, _ in sample) / len(sample) <= 20


def _nodes(tree):
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.children and not node.is_preterminal():
            yield node.label, node
            stack.extend(node.children)


def test_written_conllu_reads_back_identically(tmp_path):
    sizes = {"train": 30, "valid": 8, "test": 5}
    write_corpus(str(tmp_path), sizes, 5, src="en", tgt="xx")
    for split, n in sizes.items():
        pairs = generate_corpus(n, split_seed(5, split))
        for lang, side in (("en", 0), ("xx", 1)):
            lines = (tmp_path / f"{split}.{lang}").read_text(encoding="utf-8").split("\n")
            assert lines[-1] == "" and len(lines) == n + 1
            back = read_parsed(str(tmp_path / f"{split}.{lang}.conllu"))
            assert [s.line for s in back] == list(range(1, n + 1))
            for k, (s, pair) in enumerate(zip(back, pairs)):
                want = pair[side]
                assert s.words == want.words == lines[k].split(" ")
                assert s.heads == want.heads and s.deprels == want.deprels
                assert str(s.tree) == str(want.tree)


# --------------------------------------------------------------------------- transduction

def test_target_is_lexicon_image_of_a_permutation(sample):
    for src, tgt in sample:
        assert len(tgt.words) == len(src.words)
        assert Counter(tgt.words) == Counter(LEXICON[w] for w in src.words)
        _, order = transduce_tree(src.tree)
        assert sorted(order) == list(range(len(src.words)))
        assert tgt.words == [LEXICON[src.words[i]] for i in order]
    moved = sum(t.words != [LEXICON[w] for w in s.words] for s, t in sample)
    assert moved > len(sample) // 2  # most sentences really are reordered


def translated(words):
    return [LEXICON[w] for w in words.split()]


def test_svo_with_pp_becomes_sov_with_postposition():
    src_tree = ("(ROOT (S (NP (DT the) (NN cat)) (VP (VB sees) (NP (DT the) (NN dog))"
                " (PP (IN in) (NP (DT the) (NN garden)))) (. .)))")
    src = ParsedSentence(words=["the", "cat", "sees", "the", "dog", "in", "the", "garden", "."],
                         heads=[2, 3, 0, 5, 3, 8, 8, 3, 3],
                         deprels=["det", "nsubj", "root", "det", "obj", "case", "det", "obl", "punct"],
                         tree=as_tree(src_tree), line=4)
    tgt = transduce_sentence(src)
    # by hand: VB NP PP -> PP NP VB, IN NP -> NP IN
    assert tgt.words == translated("the cat the garden in the dog sees .")
    assert tgt.heads == [2, 8, 4, 8, 4, 7, 8, 0, 8]
    assert tgt.deprels == ["det", "nsubj", "det", "obl", "case", "det", "obj", "root", "punct"]
    assert tgt.line == 4
    assert str(tgt.tree) == ("(ROOT (S (NP (DT {0}) (NN {1})) (VP (PP (NP (DT {0}) (NN {2})) (IN {3}))"
                             " (NP (DT {0}) (NN {4})) (VB {5})) (. .)))").format(
        *translated("the cat garden in dog sees"))


def test_noun_modifiers_move_before_the_noun_and_coordination_keeps_order():
    tree = ("(ROOT (S (NP (DT the) (JJ old) (NN king) (PP (IN with) (NP (NN umbrella)))"
            " (SBAR (WHNP (WDT that)) (S (VP (VB sleeps))))) (VP (VB sees)"
            " (NP (NP (NN dog)) (CC and) (NP (DT some) (NN cat)))) (. .)))")
    out, order = transduce_tree(tree)
    assert list(out.leaf_labels()) == translated("sleeps that umbrella with the old king dog and some cat sees .")
    assert order == [6, 5, 4, 3, 0, 1, 2, 8, 9, 10, 11, 7, 12]


# --------------------------------------------------------------------------- CLI

def test_cli_writes_all_files(tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["--out-dir", str(out), "--train", "6", "--valid", "3", "--test", "2", "--seed", "4"]) == 0
    expected = {f"{s}.{lang}{ext}" for s in SPLITS for lang in ("src", "tgt") for ext in ("", ".conllu")}
    assert set(os.listdir(out)) == expected
    for split, n in (("train", 6), ("valid", 3), ("test", 2)):
        for lang in ("src", "tgt"):
            assert len((out / f"{split}.{lang}").read_text().splitlines()) == n
            assert len(read_parsed(str(out / f"{split}.{lang}.conllu"))) == n
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 3 and printed[0].startswith("train: 6 sentences")
    with pytest.raises(SystemExit):
        main(["--out-dir", str(out), "--min-len", "9", "--max-len", "5"])
