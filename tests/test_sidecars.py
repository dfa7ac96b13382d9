"""Syntax sidecars end to end: BPE text + parses → syntrans-preprocess → sidecars → task batches.

Every expected value here is worked out by hand in the comments next to it (Hou et al. 2022,
Algorithm 1 for the distances; ``subword_gaps``' convention for the gaps: inside a word 1, between
words distance + 1, between two sentences of a line 999, before EOS 2000).
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from syntrans.cli.preprocess import main as preprocess_main
from syntrans.data import sidecars
from syntrans.data.build_sidecars import SidecarError, build_side
from syntrans.data.features import FeatureNeeds
from syntrans.data.sidecars import Sidecar, sidecar_prefix
from syntrans.data.syntax_dataset import complete_batches
from syntrans.syntax.gaps import EOS_GAP, SENTENCE_BREAK, subword_gaps
from syntrans.syntax.parsed import ParsedSentence, read_parsed, write_conllu
from syntrans.syntax.trees import tree_distances
from syntrans.tasks.syntax_translation import (
    SyntaxTranslationConfig,
    SyntaxTranslationTask,
)

pytestmark = pytest.mark.fast

GUM = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gum"

# --------------------------------------------------------------------------- the hand-made corpus

# line 1: one sentence, two split words ("c@@ at", "m@@ at")
# line 2: two sentences "oh hi ." + "y@@ es it is" (the second has a split word and a root that is not first)
# line 3: empty
# line 4: one word
SRC_LINES = ["the c@@ at sat on the m@@ at .", "oh hi . y@@ es it is", "", "wow"]
SRC_PARSE = [
    ParsedSentence(["the", "cat", "sat", "on", "the", "mat", "."], [2, 3, 0, 6, 6, 3, 3],
                   tree="(ROOT (S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))",
                   line=1),
    ParsedSentence(["oh", "hi", "."], [2, 0, 2], tree="(ROOT (S (INTJ (UH oh) (UH hi)) (. .)))", line=2),
    ParsedSentence(["yes", "it", "is"], [3, 3, 0], tree="(ROOT (S (UH yes) (NP (PRP it)) (VP (VBZ is))))", line=2),
    ParsedSentence(["wow"], [0], tree="(ROOT (INTJ (UH wow)))", line=4),
]
# word map: one entry per BPE piece, the 0-based word of the line it belongs to
SRC_WORD = [[0, 1, 1, 2, 3, 4, 5, 5, 6], [0, 1, 2, 3, 3, 4, 5], [], [0]]
# heads: sentence 2 of line 2 starts at word 4, so 3 → 6, 3 → 6, root stays 0
SRC_HEAD = [[2, 3, 0, 6, 6, 3, 3], [2, 0, 2, 6, 6, 0], [], [0]]
# distances. line 1: NP(the cat) [1]; NP(the mat) [1]; PP(on NP) nd 2 → [2, 1]; VP(sat PP) nd 3 → [3, 2, 1];
#   S(NP VP .) nd = 1 + 3 = 4 → [1, 4, 3, 2, 1, 4].
# line 2: INTJ(oh hi) [1], S(INTJ .) nd 2 → [1, 2]; S(yes NP VP) flat → [1, 1]; joined with the break.
SRC_DIST = [[1, 4, 3, 2, 1, 4], [1, 2, SENTENCE_BREAK, 1, 1], [], []]
# subword gaps (one per piece, the last before EOS):
# line 1: the|2 c|1 at|5 sat|4 on|3 the|2 m|1 at|5 .|2000
# line 2: oh|2 hi|3 .|999 y|1 es|2 it|2 is|2000
SRC_GAPS = [[2, 1, 5, 4, 3, 2, 1, 5, 2000], [2, 3, 999, 1, 2, 2, 2000], [], [2000]]

TGT_LINES = ["le ch@@ at est assis .", "salut .", "rien", "ouah"]
TGT_PTB = ("(ROOT (S (NP (DT le) (NN chat)) (VP (VBZ est) (VP (VBN assis))) (. .)))\n"
           "(ROOT (S (UH salut) (. .)))\n(ROOT (NP (NN rien)))\n(ROOT (INTJ (UH ouah)))\n")
TGT_WORD = [[0, 1, 1, 2, 3, 4], [0, 1], [0], [0]]
# line 1: NP [1]; VP(est VP(assis)) — the inner VP is unary — [1]; S(NP VP .) nd 2 → [1, 2, 1, 2]
TGT_DIST = [[1, 2, 1, 2], [1], [], []]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def write_parse(path: Path, parse) -> Path:
    if isinstance(parse, str):
        path.write_text(parse, encoding="utf-8")
    else:
        write_conllu(str(path), parse)
    return path


def preprocess(root: Path, src_lines=SRC_LINES, src_parse=SRC_PARSE, tgt_lines=TGT_LINES, tgt_parse=TGT_PTB,
               extra=()) -> Path:
    """Write train text and parses under root, run syntrans-preprocess in-process; returns the data dir.

    ``src_parse``/``tgt_parse``: a list of ParsedSentence (→ .conllu) or a PTB string (→ .ptb); the
    valid split is the same corpus.
    """
    write_lines(root / "train.src", src_lines)
    write_lines(root / "train.tgt", tgt_lines)
    for lang, parse in (("src", src_parse), ("tgt", tgt_parse)):
        if parse is not None:
            write_parse(root / f"parse.{lang}.{'ptb' if isinstance(parse, str) else 'conllu'}", parse)
    dest = root / "bin"
    rc = preprocess_main(["-s", "src", "-t", "tgt", "--trainpref", str(root / "train"), "--validpref", str(root / "train"),
                          "--trainparse", str(root / "parse"), "--validparse", str(root / "parse"),
                          "--destdir", str(dest), "--joined-dictionary", "--workers", "1", *extra])
    assert rc == 0
    return dest


def load(dest: Path, requests=("src_gaps",), split="train", left_pad_source=True):
    cfg = SyntaxTranslationConfig(data=str(dest), source_lang="src", target_lang="tgt", train_subset="train",
                                  dataset_impl="mmap", required_seq_len_multiple=1, left_pad_source=left_pad_source)
    task = SyntaxTranslationTask.setup_task(cfg)
    task.syntax_needs = FeatureNeeds(required=set(requests))
    task.load_dataset(split)
    return task, task.dataset(split)


def items(prefix: str) -> list[list[int]]:
    sc = Sidecar(prefix)
    return [sc[i].tolist() for i in range(len(sc))]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return preprocess(tmp_path_factory.mktemp("corpus"))


# --------------------------------------------------------------------------- 1. round trip


def test_hand_values_are_consistent():
    # guards the hand-made constants themselves: the gaps follow from word map + distances
    for word, dist, gaps in zip(SRC_WORD, SRC_DIST, SRC_GAPS):
        pieces = np.bincount(word).tolist() if word else []
        assert subword_gaps(dist, pieces) == gaps


@pytest.mark.parametrize("split", ["train", "valid"])
def test_round_trip_sidecars_equal_hand_values(data, split):
    p = lambda lang, kind: sidecar_prefix(str(data), split, "src", "tgt", lang, kind)
    assert items(p("src", "word")) == SRC_WORD
    assert items(p("src", "head")) == SRC_HEAD
    assert items(p("src", "dist")) == SRC_DIST
    # the PTB-parsed side has word map and distances but no heads
    assert items(p("tgt", "word")) == TGT_WORD
    assert items(p("tgt", "dist")) == TGT_DIST
    assert not sidecars.exists(p("tgt", "head"))
    # one word-map entry per binarized token but EOS (the empty line is EOS only)
    for lang, lines in (("src", SRC_LINES), ("tgt", TGT_LINES)):
        tokens = Sidecar(sidecars.side_prefix(str(data), split, "src", "tgt", lang))  # the token file itself
        assert tokens.sizes.tolist() == [len(x.split()) + 1 for x in lines]
        assert Sidecar(p(lang, "word")).sizes.tolist() == [len(x.split()) for x in lines]


def test_binarize_trees_changes_only_distances(tmp_path):
    dest = preprocess(tmp_path, extra=["--binarize-trees"])
    p = lambda kind: sidecar_prefix(str(dest), "train", "src", "tgt", "src", kind)
    assert items(p("word")) == SRC_WORD and items(p("head")) == SRC_HEAD
    # line 1 right-factored: S(NP, S|<>(VP, .)); S|<> nd 4 → [3, 2, 1, 4]; S(NP [1], [3, 2, 1, 4]) nd 5
    # line 2: S(yes NP VP) → S(yes, S|<>(NP, VP)): [2, 1]
    assert items(p("dist")) == [[1, 5, 3, 2, 1, 4], [1, 2, SENTENCE_BREAK, 2, 1], [], []]


# --------------------------------------------------------------------------- 2. through the task


@pytest.mark.parametrize("left", [True, False], ids=["left-pad", "right-pad"])
def test_src_gaps_in_a_batch(data, left):
    task, ds = load(data, left_pad_source=left)
    pad = task.source_dictionary.pad()
    batch = ds.collater([ds[3], ds[0], ds[2], ds[1]])
    order = batch["id"].tolist()
    assert order == [0, 1, 3, 2]  # sorted by source length (10, 8, 2, 1 tokens), not the order given
    tokens, gaps = batch["net_input"]["src_tokens"], batch["net_input"]["src_gaps"]
    B, T = tokens.shape
    assert (B, T) == (4, 10)
    assert tuple(gaps.shape) == (B, T - 1)
    for row, i in enumerate(order):
        n = len(SRC_LINES[i].split()) + 1  # tokens with EOS
        assert int((tokens[row] != pad).sum()) == n
        start = T - n if left else 0
        assert tokens[row, start:start + n].tolist() == ds.src[i].tolist()
        expect = [EOS_GAP] * (T - 1)  # the pad value
        expect[start:start + n - 1] = SRC_GAPS[i]
        assert gaps[row].tolist() == expect, f"sentence {i}"
        # the gap after real token k sits in token k's column: real tokens on both sides of it
        for c in range(start, start + n - 1):
            assert tokens[row, c] != pad and tokens[row, c + 1] != pad
    # every pad column carries the pad value
    assert (gaps[tokens[:, :-1] == pad] == EOS_GAP).all()


def test_no_feature_without_a_request(data):
    _, ds = load(data, requests=())
    batch = ds.collater([ds[0], ds[1]])
    assert "src_gaps" not in batch["net_input"]
    assert "src_gaps" not in ds[0]


# --------------------------------------------------------------------------- 3. bad inputs


def bad_case(name):
    """(text lines, parse (sentences or PTB string), strict, error type, substrings with {T} and {P} for the paths)."""
    S = ParsedSentence
    ok1 = S(["the", "cat", "sat", "."], [2, 3, 0, 3], tree="(ROOT (S (NP (DT the) (NN cat)) (VBD sat) (. .)))", line=1)
    text1 = "the c@@ at sat ."
    cases = {
        # line 2: 3 pieces but 2 words ("b@@ c" is one); the parse has 3 words
        "word-count": ([text1, "a b@@ c"], [ok1, S(["a", "b", "c"], [0, 1, 1], tree="(ROOT (S (X a) (X b) (X c)))", line=2)],
                       False, SidecarError,
                       ["{T}, line 2", "spells 2 words", "{P} has 3"]),
        # three sentences without '# line': sentence k is line k, one more than the text has
        "more-parses-than-lines": ([text1, "a"], [S(ok1.words, ok1.heads, tree=ok1.tree), S(["a"], [0], tree="(X a)"),
                                                  S(["b"], [0], tree="(X b)")],
                                   False, SidecarError, ["{P}", "line 3", "has 2 lines", "{T}"]),
        "line-beyond-text": ([text1, "a", ""], [ok1, S(["a"], [0], tree="(X a)", line=2), S(["b"], [0], tree="(X b)", line=7)],
                             False, SidecarError, ["{P}", "line 7", "has 3 lines", "{T}"]),
        "mixed-trees": ([text1, "a"], [ok1, S(["a"], [0], line=2)],
                        False, SidecarError, ["{P}", "line 2 has no constituency tree", "(line 1) has", "all or none"]),
        "mixed-heads": ([text1, "a"], [ok1, S(["a"], tree="(X a)", line=2)],
                        False, SidecarError, ["{P}", "line 2 has no dependency heads", "(line 1) has", "all or none"]),
        "marker-at-end": ([text1, "a b@@"], [ok1, S(["a", "b"], [0, 1], tree="(S (X a) (X b))", line=2)],
                          False, SidecarError, ["{T}, line 2", "'b@@'", "continuation marker"]),
        "strict-multi": ([text1, "a b"], [ok1, S(["a"], [0], tree="(X a)", line=2), S(["b"], [0], tree="(X b)", line=2)],
                         True, SidecarError, ["{T}, line 2", "several sentences", "--strict"]),
        "strict-empty": ([text1, "", "a"], [ok1, S(["a"], [0], tree="(X a)", line=3)],
                         True, SidecarError, ["{T}, line 2", "is empty", "--strict"]),
        "strict-failed": ([text1, "a"], [S(ok1.words, ok1.heads, tree=ok1.tree, line=1, failed="stanza crashed"),
                                         S(["a"], [0], tree="(X a)", line=2)],
                          True, SidecarError, ["{T}, line 1", "failed parse", "--strict"]),
        "strict-respelled": ([text1, "colour"], [ok1, S(["color"], [0], tree="(X color)", line=2)],
                             True, SidecarError, ["{T}, line 2", "spells words differently", "--strict"]),
        # the '# constituency' bracket string of sentence 2 is not closed
        "bad-tree": ([text1, "a b"], [ok1, S(["a", "b"], [0, 1], tree="(ROOT (S (X a) (X b))", line=2)],
                     False, ValueError, ["{P}, sentence 2", "bad constituency tree", "unbalanced"]),
        # the constituency tree has 3 leaves for a 2-word sentence
        "tree-leaf-count": ([text1, "a b"], [ok1, S(["a", "b"], [0, 1], tree="(S (X a) (X b) (X c))", line=2)],
                            False, ValueError, ["{P}, sentence 2", "2 words but the constituency tree has 3 leaves"]),
        "bad-ptb": ([text1, "a b"], "(ROOT (S (NP (DT the) (NN cat)) (VBD sat) (. .)))\n(ROOT (S (X a) (X b)\n",
                    False, ValueError, ["{P}, line 2", "cannot read PTB brackets", "not closed"]),
        "line-zero": (["a"], [S(["a"], [0], tree="(X a)", line=0)], False, ValueError, ["{P}, sentence 1"]),
    }
    return cases[name]


BAD = ["word-count", "more-parses-than-lines", "line-beyond-text", "mixed-trees", "mixed-heads", "marker-at-end",
       "strict-multi", "strict-empty", "strict-failed", "strict-respelled", "bad-tree", "tree-leaf-count", "bad-ptb",
       "line-zero"]


def write_bad(tmp_path: Path, name: str):
    lines, parse, strict, err, subs = bad_case(name)
    text = write_lines(tmp_path / "train.src", lines)
    pfile = write_parse(tmp_path / f"parse.src.{'ptb' if isinstance(parse, str) else 'conllu'}", parse)
    subs = [s.format(T=text, P=pfile) for s in subs]
    return text, pfile, strict, err, subs


@pytest.mark.parametrize("name", BAD)
def test_bad_input_raises_named_error(tmp_path, name):
    text, pfile, strict, err, subs = write_bad(tmp_path, name)
    with pytest.raises(err) as e:
        build_side(str(text), str(pfile), str(tmp_path / "out"), strict=strict)
    for s in subs:
        assert s in str(e.value), f"{s!r} not in {str(e.value)!r}"
    assert not list(tmp_path.glob("out.*")), "no sidecar may be written for bad input"
    if strict:  # the same input passes, reported, without --strict
        rep = build_side(str(text), str(pfile), str(tmp_path / "out"))
        assert rep.multi_sentence or rep.empty or rep.failed or rep.respelled


@pytest.mark.parametrize("name", BAD)
def test_bad_input_cli_exit_code_2(tmp_path, capsys, name):
    _, _, strict, _, subs = write_bad(tmp_path, name)
    (tmp_path / "bin").mkdir()
    argv = ["-s", "src", "-t", "tgt", "--trainpref", str(tmp_path / "train"), "--trainparse", str(tmp_path / "parse"),
            "--destdir", str(tmp_path / "bin"), "--sidecars-only"] + (["--strict"] if strict else [])
    assert preprocess_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("syntrans-preprocess: error: ")
    for s in subs:
        assert s in err


def test_malformed_conllu_field_count(tmp_path, capsys):
    text = write_lines(tmp_path / "train.src", ["a b", "c"])
    pfile = tmp_path / "parse.src.conllu"
    write_conllu(str(pfile), [ParsedSentence(["a", "b"], [0, 1], line=1), ParsedSentence(["c"], [0], line=2)])
    rows = pfile.read_text().split("\n")
    k = next(i for i, r in enumerate(rows) if r.startswith("2\tb\t"))
    rows[k] = rows[k].rsplit("\t", 1)[0]  # 9 fields
    pfile.write_text("\n".join(rows))
    with pytest.raises(ValueError) as e:
        build_side(str(text), str(pfile), str(tmp_path / "out"))
    msg = str(e.value)
    assert str(pfile) in msg and "10 tab-separated fields" in msg and "found 9" in msg
    assert f"line {k + 1}" in msg  # the 1-based line of the file
    (tmp_path / "bin").mkdir()
    assert preprocess_main(["-s", "src", "-t", "tgt", "--trainpref", str(tmp_path / "train"), "--trainparse",
                            str(tmp_path / "parse"), "--destdir", str(tmp_path / "bin"), "--sidecars-only"]) == 2
    assert str(pfile) in capsys.readouterr().err


def test_missing_parse_file_cli(tmp_path, capsys):
    write_lines(tmp_path / "train.src", ["a"])
    (tmp_path / "bin").mkdir()
    assert preprocess_main(["-s", "src", "-t", "tgt", "--trainpref", str(tmp_path / "train"), "--trainparse",
                            str(tmp_path / "nope"), "--destdir", str(tmp_path / "bin"), "--sidecars-only"]) == 2
    err = capsys.readouterr().err
    assert "no parsed corpus" in err and str(tmp_path / "nope") in err and "train" in err


def test_parse_shorter_than_text_names_the_line(tmp_path):
    # no '# line' comments and one sentence too few: the last text line gets no sentence
    text = write_lines(tmp_path / "train.src", ["a", "b c"])
    pfile = write_parse(tmp_path / "p.conllu", [ParsedSentence(["a"], [0])])
    with pytest.raises(SidecarError) as e:
        build_side(str(text), str(pfile), str(tmp_path / "out"))
    assert f"{text}, line 2" in str(e.value) and "spells 2 words" in str(e.value) and "has 0" in str(e.value)


# --------------------------------------------------------------------------- 4. load-time validation


@pytest.fixture
def fresh(tmp_path) -> Path:
    return preprocess(tmp_path)


def test_load_rejects_word_sidecar_of_wrong_length(fresh):
    prefix = sidecar_prefix(str(fresh), "train", "src", "tgt", "src", "word")
    sidecars.write(prefix, [SRC_WORD[0], [0, 1, 2], [], [0]])  # sentence 1 has 7 tokens before EOS
    with pytest.raises(ValueError) as e:
        load(fresh)
    msg = str(e.value)
    assert prefix in msg and "sentence 1" in msg and "3 subword entries" in msg and "7 tokens" in msg


def test_load_rejects_sidecar_with_wrong_sentence_count(fresh):
    prefix = sidecar_prefix(str(fresh), "train", "src", "tgt", "tgt", "word")
    sidecars.write(prefix, TGT_WORD[:3])
    with pytest.raises(ValueError) as e:
        load(fresh)
    assert prefix in str(e.value) and "3 sentences" in str(e.value) and "has 4" in str(e.value)


def test_load_rejects_dist_disagreeing_with_head(fresh):
    prefix = sidecar_prefix(str(fresh), "train", "src", "tgt", "src", "dist")
    sidecars.write(prefix, [[1, 2], *SRC_DIST[1:]])
    with pytest.raises(ValueError) as e:
        load(fresh)
    msg = str(e.value)
    assert prefix in msg and "sentence 0" in msg and "2 gaps" in msg and "7 words" in msg
    assert sidecar_prefix(str(fresh), "train", "src", "tgt", "src", "head") in msg


def test_bad_dist_without_heads_fails_when_read(fresh):
    # the tgt side has no heads, so the load-time check cannot compare; reading the item must fail instead
    for kind in ("head",):
        for ext in (".bin", ".idx"):
            os.remove(sidecar_prefix(str(fresh), "train", "src", "tgt", "src", kind) + ext)
    prefix = sidecar_prefix(str(fresh), "train", "src", "tgt", "src", "dist")
    sidecars.write(prefix, [[1, 2], *SRC_DIST[1:]])
    _, ds = load(fresh)
    with pytest.raises(ValueError) as e:
        ds[0]
    msg = str(e.value)
    assert "sentence 0" in msg and "7 words" in msg and "found 2" in msg
    assert sidecar_prefix(str(fresh), "train", "src", "tgt", "src", "dist") in msg  # the gap sidecar is the one that disagrees


def test_missing_dist_for_src_gaps(fresh):
    prefix = sidecar_prefix(str(fresh), "train", "src", "tgt", "src", "dist")
    for ext in (".bin", ".idx"):
        os.remove(prefix + ext)
    with pytest.raises(FileNotFoundError) as e:
        load(fresh)
    msg = str(e.value)
    assert "src_gaps" in msg and "dist" in msg and "source" in msg and "train" in msg and str(fresh) in msg
    # without the request the split loads; asking later fails on the first item read
    task, ds = load(fresh, requests=())
    ds.request(FeatureNeeds(required={"src_gaps"}))
    with pytest.raises(FileNotFoundError) as e:
        ds[0]
    assert "src_gaps" in str(e.value) and "dist" in str(e.value) and "sentence 0" in str(e.value)


# --------------------------------------------------------------------------- 5. complete_batches


def test_complete_batches_unit():
    indices = np.array([4, 2, 0, 1, 3, 5, 6])
    got = complete_batches(indices, [np.array([4, 2]), np.array([0, 1])], max_sentences=2)
    assert [b.tolist() for b in got] == [[4, 2], [0, 1], [3, 5], [6]]  # missing ones in `indices` order
    got = complete_batches(indices, [np.array([0]), np.array([6, 2])], max_sentences=None)
    assert [b.tolist() for b in got] == [[0], [6, 2], [4, 1, 3, 5]]
    got = complete_batches(indices, [], max_sentences=3)
    assert [b.tolist() for b in got] == [[4, 2, 0], [1, 3, 5], [6]]
    full = [np.array([4, 2, 0]), np.array([1, 3, 5, 6])]
    assert complete_batches(indices, full, max_sentences=4) is full


def flat_corpus(n_lines: int):
    """Line k: 1 + k % 5 words w0 … (w1 split as 'w@@ 1'), a flat tree and a head chain."""
    lines, parse = [], []
    for k in range(n_lines):
        words = [f"w{j}" for j in range(1 + k % 5)]
        lines.append(" ".join("w@@ 1" if w == "w1" else w for w in words))
        tree = f"(ROOT (S {' '.join(f'(X {w})' for w in words)}))" if len(words) > 1 else "(ROOT (X w0))"
        parse.append(ParsedSentence(words, list(range(len(words))), tree=tree, line=k + 1))
    return lines, parse


@pytest.fixture(scope="module")
def data13(tmp_path_factory) -> Path:
    lines, parse = flat_corpus(13)
    return preprocess(tmp_path_factory.mktemp("c13"), lines, parse, lines, parse)


@pytest.mark.parametrize("split", ["train", "valid"])
def test_batch_iterator_keeps_every_sentence(data13, split):
    task, ds = load(data13, split=split)
    # the premise: fairseq's own batching drops the remainder here
    inner = ds.dataset.batch_by_size(ds.ordered_indices(), None, 5, 8)
    assert sum(len(b) for b in inner) < 13
    it = task.get_batch_iterator(ds, max_sentences=5, required_batch_size_multiple=8, disable_iterator_cache=True)
    batches = list(it.next_epoch_itr(shuffle=False))
    ids = [i for b in batches for i in b["id"].tolist()]
    assert sorted(ids) == list(range(13))  # each exactly once
    assert all(len(b["id"]) <= 5 for b in batches)
    assert all(b["net_input"]["src_gaps"].shape[1] == b["net_input"]["src_tokens"].shape[1] - 1 for b in batches)


def test_batch_iterator_max_tokens_keeps_every_sentence_within_budget(data13):
    task, ds = load(data13)
    it = task.get_batch_iterator(ds, max_tokens=14, required_batch_size_multiple=8, disable_iterator_cache=True)
    batches = list(it.next_epoch_itr(shuffle=False))
    ids = [i for b in batches for i in b["id"].tolist()]
    assert sorted(ids) == list(range(13))
    for b in batches:
        longest = max(int(ds.num_tokens(i)) for i in b["id"].tolist())
        assert longest * len(b["id"]) <= 14


# --------------------------------------------------------------------------- 6. reports


def test_report_counts_lines(tmp_path, capsys):
    S = ParsedSentence
    lines = ["the c@@ at", "a . b .", "", "x y", "c . d", "colour"]
    parse = [
        S(["the", "cat"], [2, 0], tree="(NP (DT the) (NN cat))", line=1),
        S(["a", "."], [0, 1], tree="(S (X a) (. .))", line=2),
        S(["b", "."], [0, 1], tree="(S (X b) (. .))", line=2),
        S(["x", "y"], [0, 1], tree="(S (X x) (X y))", line=4, failed="timeout"),
        S(["c", "."], [0, 1], tree="(S (X c) (. .))", line=5, failed="oom"),
        S(["d"], [0], tree="(X d)", line=5),
        S(["color"], [0], tree="(X color)", line=6),
    ]
    text = write_lines(tmp_path / "train.src", lines)
    pfile = write_parse(tmp_path / "parse.src.conllu", parse)
    rep = build_side(str(text), str(pfile), str(tmp_path / "out"))
    assert rep.multi_sentence == [2, 5]
    assert rep.empty == [3]
    assert rep.failed == [4, 5]
    assert rep.respelled == [6]
    # the CoNLL-U written by write_conllu has a DEPREL column ("root"/"dep" where the parse gives none): labels too
    assert (rep.lines, rep.words, rep.kinds) == (6, 2 + 4 + 0 + 2 + 3 + 1, ["word", "head", "dist", "label"])
    s = rep.summary()
    assert "multi-sentence lines 2 (lines 2, 5)" in s and "empty lines 1 (lines 3)" in s and "failed parses 2 (lines 4, 5)" in s
    # the CLI prints the same report
    write_lines(tmp_path / "train.tgt", ["x"] * len(lines))  # a target side without parses (no sidecars)
    assert preprocess_main(["-s", "src", "-t", "tgt", "--trainpref", str(tmp_path / "train"), "--trainparse",
                            str(tmp_path / "parse"), "--destdir", str(tmp_path / "bin"), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "[syntrans] train.src:" in out and "empty lines 1 (lines 3)" in out


def test_clean_report_is_empty(tmp_path):
    text = write_lines(tmp_path / "t", SRC_LINES[:1] + SRC_LINES[3:])
    pfile = write_parse(tmp_path / "p.conllu", [SRC_PARSE[0], replace(SRC_PARSE[3], line=2)])
    rep = build_side(str(text), str(pfile), str(tmp_path / "out"), strict=True)
    assert rep.multi_sentence == rep.empty == rep.failed == rep.respelled == []
    assert (rep.lines, rep.words) == (2, 8)


# --------------------------------------------------------------------------- 7. real data (GUM)

GUM_DOCS = ["GUM_news_worship", "GUM_news_stampede"]


def fake_bpe(word: str) -> list[str]:
    return [word[:3] + "@@", word[3:]] if len(word) >= 7 else [word]


@pytest.mark.skipif(not all((GUM / "const" / f"{d}.ptb").exists() and (GUM / "dep" / f"{d}.conllu").exists()
                            for d in GUM_DOCS), reason=f"GUM data not found at {GUM}")
def test_gum_sidecars(tmp_path):
    dep = [s for d in GUM_DOCS for s in read_parsed(str(GUM / "dep" / f"{d}.conllu"))]
    const = [s for d in GUM_DOCS for s in read_parsed(str(GUM / "const" / f"{d}.ptb"))]
    assert len(dep) == len(const) > 10
    lines = [" ".join(p for w in s.words for p in fake_bpe(w)) for s in dep]
    assert any("@@" in x for x in lines)
    # src: the PTB trees (distances); tgt: the raw CoNLL-U files (heads; MWT ranges, empty nodes, GUM comments)
    ptb = "\n".join((GUM / "const" / f"{d}.ptb").read_text(encoding="utf-8").strip() + "\n" for d in GUM_DOCS)
    conllu = "".join((GUM / "dep" / f"{d}.conllu").read_text(encoding="utf-8").rstrip("\n") + "\n\n" for d in GUM_DOCS)
    dest = preprocess(tmp_path, lines, ptb, lines, None)
    write_parse(tmp_path / "parse.tgt.conllu", conllu)
    # second run: now with the tgt parse too (sidecars only)
    assert preprocess_main(["-s", "src", "-t", "tgt", "--trainpref", str(tmp_path / "train"), "--trainparse",
                            str(tmp_path / "parse"), "--destdir", str(dest), "--sidecars-only"]) == 0
    p = lambda lang, kind: sidecar_prefix(str(dest), "train", "src", "tgt", lang, kind)
    words = [[k for k, w in enumerate(s.words) for _ in fake_bpe(w)] for s in dep]
    assert items(p("src", "word")) == words == items(p("tgt", "word"))
    assert items(p("src", "dist")) == [tree_distances(s.tree) for s in const]
    assert not sidecars.exists(p("src", "head"))
    assert items(p("tgt", "head")) == [s.heads for s in dep]
    assert not sidecars.exists(p("tgt", "dist"))  # GUM's CoNLL-U carries no trees
    # the valid split got the src side only (its --validparse has no tgt file at the first run)
    assert sidecars.exists(sidecar_prefix(str(dest), "valid", "src", "tgt", "src", "dist"))
    # and through the task: each sentence's gaps
    _, ds = load(dest)
    for i in (0, len(dep) // 2, len(dep) - 1):
        pieces = [len(fake_bpe(w)) for w in dep[i].words]
        got = ds[i]["src_gaps"].tolist()
        assert got[:-1] == subword_gaps(tree_distances(const[i].tree), pieces) and got[-1] == EOS_GAP


def test_complete_batches_respects_max_tokens():
    sizes = {0: 5, 1: 9, 2: 3, 3: 8, 4: 2}
    got = complete_batches(np.arange(5), [np.array([0])], max_sentences=None, max_tokens=16, num_tokens=sizes.get)
    # missing 1, 2, 3, 4 in order; padded size = longest × count ≤ 16: [1] (9·2 > 16 with 2), [2, 3] (8·2), [4]
    assert [b.tolist() for b in got[1:]] == [[1], [2, 3], [4]]
