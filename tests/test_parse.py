"""syntrans-parse: trivial parsers, alignment of stanza output to input tokens, missing models,
the failure fallback, and sharding. No stanza model is needed (the pipeline is faked)."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stanza.models.constituency.parse_tree import Tree

from syntrans.cli import parse as cli
from syntrans.parsing import driver, stanza_parser
from syntrans.parsing.stanza_parser import (
    StanzaLikeSentence,
    SyntacticWord,
    align_to_tokens,
    from_stanza,
)
from syntrans.parsing.trivial import split_sentences, trivial_parse
from syntrans.syntax import leaves, read_parsed, tree_distances

pytestmark = pytest.mark.fast


def leaf(word, tag):
    return Tree(tag, [Tree(word)])


# ------------------------------------------------------------------ trivial parsers


def test_trivial_parsers_exact_on_three_words():
    r = trivial_parse(["a", "b", "c"], "right-branching")
    assert str(r.tree) == "(ROOT (X (W a) (X (W b) (W c))))"
    assert r.heads == [2, 3, 0]
    left = trivial_parse(["a", "b", "c"], "left-branching")
    assert str(left.tree) == "(ROOT (X (X (W a) (W b)) (W c)))"
    assert left.heads == [0, 1, 2]
    flat = trivial_parse(["a", "b", "c"], "flat")
    assert str(flat.tree) == "(ROOT (X (W a) (W b) (W c)))"
    assert flat.heads == [3, 3, 0]
    one = trivial_parse(["a"], "right-branching")
    assert str(one.tree) == "(ROOT (X (W a)))" and one.heads == [0]
    with pytest.raises(ValueError, match="unknown trivial parser"):
        trivial_parse(["a"], "diagonal")


def test_trivial_distances_by_hand():
    words = ["w1", "w2", "w3", "w4", "w5"]
    # right-branching: the gap after w1 is spanned by the root X over 4 nested branching nodes, ...
    assert tree_distances(trivial_parse(words, "right-branching").tree) == [4, 3, 2, 1]
    assert tree_distances(trivial_parse(words, "left-branching").tree) == [1, 2, 3, 4]
    assert tree_distances(trivial_parse(words, "flat").tree) == [1, 1, 1, 1]


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=60))
def test_right_branching_distances_strictly_decrease(n):
    words = [f"w{i}" for i in range(n)]
    p = trivial_parse(words, "right-branching")
    assert tree_distances(p.tree) == list(range(n - 1, 0, -1))
    assert p.tree.leaf_labels() == words
    assert p.heads == list(range(2, n + 1)) + [0]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", ".", "!", "?", "&quot;", ")", "'"]), max_size=20))
def test_split_sentences_keeps_tokens(tokens):
    parts = split_sentences(tokens)
    assert [t for p in parts for t in p] == tokens
    assert all(parts)
    for p in parts[:-1]:  # every sentence but the last ends after a terminator (and its closers)
        core = [t for t in p if t not in {"&quot;", ")", "'"}]
        assert core and core[-1] in {".", "!", "?"}


def test_split_sentences_example():
    toks = ["Hi", "!", "Who", "?", "!", "&quot;", "x", ".", "y"]
    assert split_sentences(toks) == [["Hi", "!"], ["Who", "?", "!", "&quot;"], ["x", "."], ["y"]]


# ------------------------------------------------------------------ alignment


def dont_sentence():
    """Input ( I don't know ): stanza words -LRB- I do n't know -RRB- ("don't" is one MWT)."""
    tokens = ["(", "I", "don't", "know", ")"]
    words = [
        [SyntacticWord("-LRB-", 5, "punct")],
        [SyntacticWord("I", 5, "nsubj")],
        [SyntacticWord("do", 5, "aux"), SyntacticWord("n't", 3, "advmod")],  # n't's head is inside the token
        [SyntacticWord("know", 0, "root")],
        [SyntacticWord("-RRB-", 5, "punct")],
    ]
    tree = Tree("ROOT", [Tree("S", [
        leaf("-LRB-", "-LRB-"), Tree("NP", [leaf("I", "PRP")]),
        Tree("VP", [leaf("do", "VBP"), Tree("ADVP", [leaf("n't", "RB")]), Tree("VP", [leaf("know", "VB")])]),
        leaf("-RRB-", "-RRB-")])])
    return tokens, StanzaLikeSentence(words, tree)


def test_align_multiword_and_respelled_tokens():
    tokens, sent = dont_sentence()
    p = align_to_tokens(tokens, sent, line=7)
    assert p.words == tokens and p.line == 7
    assert p.heads == [4, 4, 4, 0, 4]
    assert p.deprels == ["punct", "nsubj", "aux", "root", "punct"]
    assert p.tree.leaf_labels() == tokens
    # n't's leaf and its then-empty preterminal and ADVP are gone; don't sits under do's preterminal
    assert str(p.tree) == "(ROOT (S (-LRB- -LRB-) (NP (PRP I)) (VP (VBP don't) (VP (VB know))) (-RRB- -RRB-)))"


def test_align_takes_the_external_word_closest_to_the_root():
    # token "xy" = words x (head z, outside) and y (the root); token "z" = word z (head y).
    # Taking x (the first external word) would make xy -> z -> xy a cycle; y is closer to the root.
    sent = StanzaLikeSentence([[SyntacticWord("x", 3), SyntacticWord("y", 0)], [SyntacticWord("z", 2)]])
    p = align_to_tokens(["xy", "z"], sent)
    assert p.heads == [0, 1]
    assert p.deprels is None and p.tree is None


def test_align_first_word_internal_second_external():
    # "gonna" = gon (head na, inside) + na (head go): the token's head comes from na
    sent = StanzaLikeSentence([[SyntacticWord("I", 4)], [SyntacticWord("gon", 3), SyntacticWord("na", 4)],
                               [SyntacticWord("go", 0)]])
    assert align_to_tokens(["I", "gonna", "go"], sent).heads == [3, 3, 0]


def test_align_rejects_mismatches():
    tokens, sent = dont_sentence()
    with pytest.raises(ValueError, match="5 tokens"):
        align_to_tokens(tokens + ["x"], sent)
    bad = StanzaLikeSentence(sent.tokens, Tree("ROOT", [leaf("a", "X")]))
    with pytest.raises(ValueError, match="1 leaves but the parser returned 6 words"):
        align_to_tokens(tokens, bad)
    cyc = StanzaLikeSentence([[SyntacticWord("a", 2)], [SyntacticWord("b", 1)]])
    with pytest.raises(ValueError, match="cycle"):
        align_to_tokens(["a", "b"], cyc)


def test_from_stanza_reads_a_real_stanza_document_with_a_multiword_token():
    from stanza.utils.conll import CoNLL

    conllu = ("# text = I don't know\n"
              "1\tI\t_\tPRON\tPRP\t_\t4\tnsubj\t_\t_\n"
              "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
              "2\tdo\t_\tAUX\tVBP\t_\t4\taux\t_\t_\n"
              "3\tn't\t_\tPART\tRB\t_\t4\tadvmod\t_\t_\n"
              "4\tknow\t_\tVERB\tVB\t_\t0\troot\t_\t_\n\n")
    doc = CoNLL.conll2doc(input_str=conllu)
    s = doc.sentences[0]
    s.constituency = Tree("ROOT", [Tree("S", [Tree("NP", [leaf("I", "PRP")]),
                                              Tree("VP", [leaf("do", "VBP"), leaf("n't", "RB"),
                                                          Tree("VP", [leaf("know", "VB")])])])])
    p = align_to_tokens(["I", "don't", "know"], from_stanza(s))
    assert p.heads == [3, 3, 0]
    assert p.tree.leaf_labels() == ["I", "don't", "know"]
    assert str(p.tree) == "(ROOT (S (NP (PRP I)) (VP (VBP don't) (VP (VB know)))))"


# ------------------------------------------------------------------ the stanza CLI with missing models


def test_missing_models_stop_at_once_with_exit_2(tmp_path, monkeypatch, capsys):
    res = tmp_path / "stanza_resources"
    res.mkdir()
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(res))
    src = tmp_path / "in.txt"
    src.write_text("a b c .\n", encoding="utf-8")
    out = tmp_path / "out.conllu"

    def no_reading(*a, **k):
        raise AssertionError("the input was read before the models were loaded")

    monkeypatch.setattr(driver, "scan_input", no_reading)
    monkeypatch.setattr(driver, "iter_lines", no_reading)
    assert cli.main([str(src), "-o", str(out), "--lang", "en"]) == 2
    err = capsys.readouterr().err
    assert "stanza.download(" in err and str(res) in err
    assert "--parser right-branching" in err
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "stanza_resources"]  # no output, no temporary file


# ------------------------------------------------------------------ a fake stanza pipeline: failures


class FakePipeline:
    """Stands in for stanza.Pipeline: a chain parse per sentence; raises when a sentence holds BOOM."""

    def __init__(self):
        self.calls = []

    def __call__(self, sentences):
        self.calls.append([list(s) for s in sentences])
        if any("BOOM" in s for s in sentences):
            raise RuntimeError("CUDA out of memory (fake)")
        out = []
        for s in sentences:
            n = len(s)
            tokens = [SimpleNamespace(words=[SimpleNamespace(text=w, head=(i + 2 if i + 1 < n else 0), deprel="dep")])
                      for i, w in enumerate(s)]
            tree = Tree("ROOT", [Tree("S", [leaf(w, "NN") for w in s])])
            out.append(SimpleNamespace(tokens=tokens, constituency=tree))
        return SimpleNamespace(sentences=out)


@pytest.fixture
def fake_stanza(monkeypatch):
    pipe = FakePipeline()
    monkeypatch.setattr(stanza_parser, "make_pipeline", lambda lang, views=None, device=None, batch_sizes=None: pipe)
    return pipe


def test_failure_fallback_and_strict(tmp_path, fake_stanza, capsys):
    src = tmp_path / "in.txt"
    src.write_text("I don&apos;t know .\nthis BOOM fails\n\nlast line here\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert cli.main([str(src), "-o", str(out), "--batch-size", "8"]) == 0
    err = capsys.readouterr().err
    assert "failures=1" in err and "line 2" in err
    # the batch failed, then its lines were retried one by one; the parser saw unescaped spellings
    assert fake_stanza.calls[0][0] == ["I", "don't", "know", "."]
    assert len(fake_stanza.calls) == 1 + 3
    sents = read_parsed(str(out))
    assert [s.line for s in sents] == [1, 2, 4]
    assert [s.words for s in sents] == [["I", "don&apos;t", "know", "."], ["this", "BOOM", "fails"],
                                        ["last", "line", "here"]]
    assert [s.failed is not None for s in sents] == [False, True, False]
    assert "RuntimeError" in sents[1].failed
    assert sents[1].heads == [2, 3, 0] and str(sents[1].tree) == "(ROOT (X (W this) (X (W BOOM) (W fails))))"
    assert str(sents[0].tree) == "(ROOT (S (NN I) (NN don&apos;t) (NN know) (NN .)))"

    out2 = tmp_path / "strict.conllu"
    assert cli.main([str(src), "-o", str(out2), "--strict"]) == 1
    err = capsys.readouterr().err
    assert f"{src}, line 2" in err and "RuntimeError" in err
    assert not out2.exists()


def test_split_sentences_map_back_to_one_line(tmp_path, fake_stanza):
    src = tmp_path / "in.txt"
    src.write_text("Hi . How are you ?\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert cli.main([str(src), "-o", str(out), "--split-sentences"]) == 0
    assert fake_stanza.calls == [[["Hi", "."], ["How", "are", "you", "?"]]]
    sents = read_parsed(str(out))
    assert [s.line for s in sents] == [1, 1]
    assert [w for s in sents for w in s.words] == ["Hi", ".", "How", "are", "you", "?"]


def test_raw_mode_words_are_moses_tokens(tmp_path):
    from sacremoses import MosesTokenizer

    line = 'He said "don\'t (stop)" & left.'
    src = tmp_path / "raw.txt"
    src.write_text(line + "\n", encoding="utf-8")
    out = tmp_path / "raw.conllu"
    assert cli.main([str(src), "-o", str(out), "--raw", "--parser", "flat"]) == 0
    (s,) = read_parsed(str(out))
    assert s.words == MosesTokenizer("en").tokenize(line, escape=False)
    assert leaves(s.tree) == s.words


# ------------------------------------------------------------------ sharding


LINES = ["The cat sat .", "A dog ( big ) barked !", "", "one", "x y z w", "Don&apos;t go .",
         "a b", "c d e", "f", "g h i j k"]


def test_shards_merge_equals_single_run_and_resume(tmp_path, monkeypatch, capsys):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    single = tmp_path / "single.conllu"
    assert cli.main([str(src), "-o", str(single), "--parser", "right-branching"]) == 0
    out = tmp_path / "sharded.conllu"
    base = [str(src), "-o", str(out), "--parser", "right-branching", "--num-shards", "3"]
    for k in (2, 0, 1):  # any order; the last one to finish merges
        assert cli.main(base + ["--shard-id", str(k)]) == 0
    capsys.readouterr()
    assert out.read_bytes() == single.read_bytes()
    sents = read_parsed(str(out))
    assert [s.line for s in sents] == [1, 2, 4, 5, 6, 7, 8, 9, 10]  # full-input numbers; line 3 is empty
    shard1 = tmp_path / "sharded.conllu.shard1of3"
    assert [s.line for s in read_parsed(str(shard1))] == [4, 5, 6]  # lines 4..6 (blocks 3, 3, 4)

    os.remove(out)
    assert cli.main(base + ["--merge"]) == 0
    assert out.read_bytes() == single.read_bytes()

    # a finished shard is skipped: the parser is never built and the file is not rewritten
    def no_parser(*a, **k):
        raise AssertionError("a finished shard was parsed again")

    monkeypatch.setattr(driver, "make_parser", no_parser)
    before = os.stat(shard1).st_mtime_ns
    capsys.readouterr()
    assert cli.main(base + ["--shard-id", "1"]) == 0
    assert "skipped shard 1 of 3" in capsys.readouterr().err
    assert os.stat(shard1).st_mtime_ns == before
    with pytest.raises(AssertionError, match="parsed again"):
        cli.main(base + ["--shard-id", "1", "--force"])


def test_merge_names_unfinished_shards(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "o.conllu"
    base = [str(src), "-o", str(out), "--parser", "flat", "--num-shards", "3"]
    assert cli.main(base + ["--shard-id", "0"]) == 0
    assert not out.exists()
    assert cli.main(base + ["--merge"]) == 1
    err = capsys.readouterr().err
    assert "o.conllu.shard1of3" in err and "o.conllu.shard2of3" in err and "shard0of3," not in err
    assert not out.exists()


def test_usage_errors_name_the_problem(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope.txt"), "-o", str(tmp_path / "o")]) == 2
    assert "nope.txt: expected an existing text file" in capsys.readouterr().err
    src = tmp_path / "bad.txt"
    src.write_bytes(b"ok line\nbad \xff byte\n")
    assert cli.main([str(src), "-o", str(tmp_path / "o"), "--parser", "flat"]) == 2
    err = capsys.readouterr().err
    assert "bad.txt, line 2: expected UTF-8" in err and "0xff" in err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit):
        cli.main([str(src), "-o", str(tmp_path / "o"), "--num-shards", "2", "--shard-id", "2"])


def test_make_pipeline_arguments(tmp_path, monkeypatch):
    import json

    import stanza

    res = tmp_path / "res"
    res.mkdir()
    (res / "resources.json").write_text(json.dumps({"en": {"mwt": {"ewt": {}}, "tokenize": {"ewt": {}}},
                                                   "xx": {"tokenize": {"t": {}}}, "yy": {"alias": "en"}}))
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(res))
    seen = {}

    def fake_pipeline(lang, **kw):
        seen[lang] = kw
        return "pipeline"

    monkeypatch.setattr(stanza, "Pipeline", fake_pipeline)
    assert stanza_parser.make_pipeline("en", device="cpu", batch_sizes={"constituency": 32}) == "pipeline"
    stanza_parser.make_pipeline("xx", device="cpu")
    stanza_parser.make_pipeline("yy", device="cpu")
    kw = seen["en"]
    assert kw["processors"] == "tokenize,mwt,pos,lemma,depparse,constituency"
    assert kw["tokenize_pretokenized"] is True and kw["download_method"] is None and kw["use_gpu"] is False
    assert kw["dir"] == str(res) and kw["constituency_batch_size"] == 32
    assert kw["pos_batch_size"] == stanza_parser.DEFAULT_BATCH_SIZES["cpu"]["pos"]  # the device's default
    assert seen["xx"]["processors"] == "tokenize,pos,lemma,depparse,constituency"  # no mwt model listed
    assert "mwt" in seen["yy"]["processors"]  # an alias of a language with mwt

    def missing(lang, **kw):
        raise FileNotFoundError("no model file")

    monkeypatch.setattr(stanza, "Pipeline", missing)
    with pytest.raises(stanza_parser.MissingModelsError, match=r"stanza\.download\('en'"):
        stanza_parser.make_pipeline("en", device="cpu")


# ------------------------------------------------------------------ views, content hashes, resumption


class RecordingPipeline:
    """Stands in for ``stanza.Pipeline`` itself: records the processors each pipeline is built with and the
    sentences each call gets; a sentence's words get heads only when depparse runs (each word's head the next word)
    and a tree only when constituency runs (flat, tags from the processors that ran). ``die_at``: the call (1-based,
    over all pipelines) that raises KeyboardInterrupt, as a killed job would stop."""

    built: list = []
    calls: list = []
    die_at: int | None = None

    def __init__(self, lang, **kw):
        self.processors_asked = kw["processors"].split(",")
        RecordingPipeline.built.append(self.processors_asked)

    def __call__(self, sentences):
        RecordingPipeline.calls.append([list(s) for s in sentences])
        if RecordingPipeline.die_at is not None and len(RecordingPipeline.calls) >= RecordingPipeline.die_at:
            raise KeyboardInterrupt("the job was killed (stand-in)")
        deps, trees = "depparse" in self.processors_asked, "constituency" in self.processors_asked
        out = []
        for s in sentences:
            n = len(s)
            tokens = [SimpleNamespace(words=[SimpleNamespace(text=w, head=(i + 2 if i + 1 < n else 0) if deps else None,
                                                             deprel="dep" if deps else None)]) for i, w in enumerate(s)]
            tree = Tree("ROOT", [Tree("S", [leaf(w, "NN") for w in s])]) if trees else None
            out.append(SimpleNamespace(tokens=tokens, constituency=tree))
        return SimpleNamespace(sentences=out)


@pytest.fixture
def recording_stanza(tmp_path, monkeypatch):
    import stanza

    res = tmp_path / "res"
    res.mkdir()
    (res / "resources.json").write_text('{"en": {"tokenize": {"t": {}}, "mwt": {"t": {}}}}')
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(res))
    monkeypatch.setattr(stanza, "Pipeline", RecordingPipeline)
    monkeypatch.setattr(RecordingPipeline, "built", [])
    monkeypatch.setattr(RecordingPipeline, "calls", [])
    monkeypatch.setattr(RecordingPipeline, "die_at", None)
    return RecordingPipeline


VIEW_PROCESSORS = {"deps": ["tokenize", "mwt", "pos", "lemma", "depparse"],
                   "trees": ["tokenize", "mwt", "pos", "constituency"],
                   "deps,trees": ["tokenize", "mwt", "pos", "lemma", "depparse", "constituency"]}


@pytest.mark.parametrize("views", list(VIEW_PROCESSORS))
def test_the_processors_of_each_view_set_run_and_the_output_holds_those_views(tmp_path, recording_stanza, views):
    src = tmp_path / "in.txt"
    src.write_text("a b c .\n\nd e\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert cli.main([str(src), "-o", str(out), "--views", views, "--device", "cpu"]) == 0
    assert recording_stanza.built == [VIEW_PROCESSORS[views]]
    sents = read_parsed(str(out))
    assert [s.heads is not None for s in sents] == [("deps" in views)] * 2
    assert [s.tree is not None for s in sents] == [("trees" in views)] * 2
    marker = json.loads((tmp_path / "out.conllu.done").read_text())
    assert marker["views"] == views.split(",") and marker["device"] == "cpu"


def test_a_missing_view_is_parsed_alone_and_merged_into_the_corpus(tmp_path, recording_stanza, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a b c .\n\nd e\nf\n", encoding="utf-8")
    both = tmp_path / "both.conllu"
    assert cli.main([str(src), "-o", str(both), "--device", "cpu"]) == 0
    out = tmp_path / "out.conllu"
    assert cli.main([str(src), "-o", str(out), "--views", "deps", "--device", "cpu"]) == 0
    recording_stanza.built.clear()
    recording_stanza.calls.clear()
    capsys.readouterr()
    assert cli.main([str(src), "-o", str(out), "--views", "deps,trees", "--device", "cpu"]) == 0
    assert recording_stanza.built == [VIEW_PROCESSORS["trees"]]  # the trees alone: no lemma, no depparse
    assert "holds deps: parsing only trees and merging it in" in capsys.readouterr().err
    assert out.read_bytes() == both.read_bytes()
    assert json.loads((tmp_path / "out.conllu.done").read_text())["views"] == ["deps", "trees"]
    # asked again for either view, or both: nothing is parsed
    recording_stanza.built.clear()
    for views in ("deps", "trees", "deps,trees"):
        assert cli.main([str(src), "-o", str(out), "--views", views, "--device", "cpu"]) == 0
    assert recording_stanza.built == [] and "already finished with views deps,trees" in capsys.readouterr().err


def test_a_same_size_edit_of_the_input_is_parsed_again(tmp_path, capsys):
    """Issue 36's probe: an edit that keeps the byte size (and a newer mtime) re-parses; an unchanged input is
    skipped."""
    src = tmp_path / "in.txt"
    src.write_text("the woodex table .\nx y\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert cli.main([str(src), "-o", str(out), "--parser", "flat"]) == 0
    size = src.stat().st_size
    src.write_text(src.read_text(encoding="utf-8").replace("woodex", "woodey"), encoding="utf-8")
    os.utime(src, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns + 5 * 10**9))
    assert src.stat().st_size == size
    capsys.readouterr()
    assert cli.main([str(src), "-o", str(out), "--parser", "flat"]) == 0
    err = capsys.readouterr().err
    assert "the input's content changed since it was parsed" in err and "skipped" not in err
    assert [s.words for s in read_parsed(str(out))][0] == ["the", "woodey", "table", "."]
    assert cli.main([str(src), "-o", str(out), "--parser", "flat"]) == 0
    assert "skipped shard 0 of 1" in capsys.readouterr().err


def test_settings_that_change_the_parse_are_a_reason_to_parse_again(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a b . c d .\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert cli.main([str(src), "-o", str(out), "--parser", "flat"]) == 0
    capsys.readouterr()
    assert cli.main([str(src), "-o", str(out), "--parser", "flat", "--split-sentences"]) == 0
    assert "split_sentences was False, now True" in capsys.readouterr().err
    assert len(read_parsed(str(out))) == 2


def test_a_shard_that_dies_midway_resumes_where_it_stopped(tmp_path, recording_stanza, capsys):
    lines = [f"w{k} x{k} ." for k in range(1, 11)]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = tmp_path / "whole.conllu"
    assert cli.main([str(src), "-o", str(whole), "--device", "cpu", "--num-shards", "2", "--shard-id", "1",
                     "--batch-size", "2"]) == 0
    job = driver.ParseJob(input=str(src), output=str(tmp_path / "out.conllu"), num_shards=2, shard_id=1, batch_size=2,
                          device="cpu", checkpoint_s=0.0)
    shard = tmp_path / "out.conllu.shard1of2"
    recording_stanza.calls.clear()
    recording_stanza.die_at = 3  # lines 6-7 and 8-9 are parsed and checkpointed, then the job is killed
    with pytest.raises(KeyboardInterrupt):
        driver.parse_job(job)
    assert not shard.exists() and not (tmp_path / "out.conllu.shard1of2.done").exists()
    assert [s.line for s in read_parsed(str(shard) + ".partial")] == [6, 7, 8, 9]
    recording_stanza.calls.clear()
    recording_stanza.die_at = None
    logs = []
    driver.parse_job(job, log=logs.append)
    assert recording_stanza.calls == [[["w10", "x10", "."]]]  # one call: only the line after the checkpoint
    assert any("resuming" in m and "at line 10" in m for m in logs), logs
    assert shard.read_bytes() == (tmp_path / "whole.conllu.shard1of2").read_bytes()
    assert not os.path.exists(str(shard) + ".partial") and not os.path.exists(str(shard) + ".partial.json")


def test_a_damaged_checkpoint_is_not_trusted(tmp_path, recording_stanza):
    src = tmp_path / "in.txt"
    src.write_text("".join(f"w{k} .\n" for k in range(6)), encoding="utf-8")
    job = driver.ParseJob(input=str(src), output=str(tmp_path / "out.conllu"), batch_size=2, device="cpu",
                          checkpoint_s=0.0)
    recording_stanza.die_at = 2
    with pytest.raises(KeyboardInterrupt):
        driver.parse_job(job)
    partial = tmp_path / "out.conllu.partial"
    partial.write_bytes(partial.read_bytes()[:10])  # shorter than its progress file says
    recording_stanza.die_at = None
    recording_stanza.calls.clear()
    driver.parse_job(job)
    assert len(recording_stanza.calls) == 3  # parsed from the start
    assert [s.line for s in read_parsed(str(tmp_path / "out.conllu"))] == [1, 2, 3, 4, 5, 6]


def test_shards_of_other_views_are_not_merged(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "o.conllu"
    base = [str(src), "-o", str(out), "--parser", "flat", "--num-shards", "2"]
    assert cli.main(base + ["--shard-id", "0", "--views", "deps"]) == 0
    assert cli.main(base + ["--shard-id", "1"]) == 0
    assert not out.exists()
    assert "1 of 2 shards finished with the same input and views" in capsys.readouterr().err
    assert cli.main(base + ["--merge"]) == 1
    err = capsys.readouterr().err
    assert "views = ['deps', 'trees']" in err and "has ['deps']" in err and not out.exists()


def test_bad_view_and_device_options_are_refused(tmp_path, capsys, monkeypatch):
    import torch

    src = tmp_path / "in.txt"
    src.write_text("a b\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        cli.main([str(src), "-o", str(tmp_path / "o"), "--views", "deps,tress"])
    assert "expected views from deps, trees" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main([str(src), "-o", str(tmp_path / "o"), "--device", "cuda"]) == 2
    assert "--device cuda: torch sees no CUDA device" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main([str(src), "-o", str(tmp_path / "o"), "--launcher", "submitit-local"])  # no --num-shards N
    assert "--launcher submitit-local runs the shards of --num-shards N" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_adding_a_view_to_a_parse_of_other_words_is_refused_naming_the_line(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a b c\nd e\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert cli.main([str(src), "-o", str(out), "--parser", "flat", "--views", "deps"]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("\td\t", "\tX\t"), encoding="utf-8")  # edited by hand
    before = out.read_bytes()
    capsys.readouterr()
    assert cli.main([str(src), "-o", str(out), "--parser", "flat", "--views", "deps,trees"]) == 2
    err = capsys.readouterr().err
    assert f"{out}, line 2: the parses to combine differ" in err and "--force" in err
    assert out.read_bytes() == before  # nothing written over it
