"""Another parser's output read into syntrans' parsed corpus (syntrans.parsing.imported; syntrans-prepare --parser
imported): PTB trees and CoNLL-U / CoNLL-X / CoreNLP conll dependencies of GUM, imported against GUM's own tokens,
give back GUM's trees and heads exactly; respellings are accepted, anything else is an error naming the place; the
prepare route stops naming what it lacks, then prepares from the imported files."""
from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SHARED_DATA

from syntrans.parsing.imported import import_file, import_parses, read_dependencies, read_ptb, same_token
from syntrans.syntax.parsed import read_parsed

GUM = SHARED_DATA / "gum"
DOCS = sorted(p.stem for p in (GUM / "const").glob("*.ptb")) if (GUM / "const").is_dir() else []
needs_gum = pytest.mark.skipif(not DOCS, reason=f"GUM not found at {GUM}")


def _conllu_rows(path: Path):
    """The raw CoNLL-U word lines of each sentence (MWT ranges and empty nodes included), from the file itself."""
    sents, rows = [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip():
            if rows:
                sents.append(rows)
            rows = []
        elif not line.startswith("#"):
            rows.append(line.split("\t"))
    return sents


def _gold(doc: str):
    """(words, heads, labels) per sentence of GUM's CoNLL-U, read from the columns (syntactic words only)."""
    out = []
    for rows in _conllu_rows(GUM / "dep" / f"{doc}.conllu"):
        words = [r for r in rows if r[0].isdigit()]
        out.append(([r[1] for r in words], [int(r[6]) for r in words], [r[7] for r in words]))
    return out


@needs_gum
@pytest.mark.parametrize("doc", DOCS)
def test_gum_trees_and_heads_come_back_exactly(doc, tmp_path):
    """One GUM document: its PTB file and its CoNLL-U, imported against its tokens (one sentence per line, except two
    pairs of sentences sharing a line), written as syntrans' CoNLL-U and read back: every head and label is GUM's,
    every tree is GUM's tree (the same brackets and labels; distances equal), every word the text's token."""
    gold = _gold(doc)
    trees = read_parsed(str(GUM / "const" / f"{doc}.ptb"))
    lines = [" ".join(w) for w, _, _ in gold]
    if len(lines) > 4:  # two lines holding two sentences each: the import assigns sentences to lines by their words
        lines = [lines[0] + " " + lines[1]] + lines[2:-2] + [lines[-2] + " " + lines[-1]]
    text = tmp_path / "text.en"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "parsed.conllu"
    n_lines, n_sents = import_file(str(text), str(out), str(GUM / "const" / f"{doc}.ptb"),
                                   str(GUM / "dep" / f"{doc}.conllu"))
    assert (n_lines, n_sents) == (len(lines), len(gold))
    back = read_parsed(str(out))
    assert len(back) == len(gold) == len(trees)
    line_of = [1, 1] + [k + 2 for k in range(len(gold) - 4)] + [len(lines)] * 2 if len(gold) > 4 else \
        list(range(1, len(gold) + 1))
    for k, (s, (words, heads, labels), t) in enumerate(zip(back, gold, trees)):
        assert s.words == words and s.heads == heads and s.deprels == labels, k
        assert s.line == line_of[k]
        assert " ".join(str(s.tree).split()) == " ".join(str(t.tree).split()), k  # GUM's own tree
        assert s.distances() == t.distances(), k


@needs_gum
def test_conllx_and_corenlp_conll_give_the_same_heads(tmp_path):
    """The same GUM parse written as CoNLL-X (10 columns, no multi-word-token lines) and as CoreNLP's conll output (7
    columns: ID FORM LEMMA POS NER HEAD DEPREL) reads as the CoNLL-U does."""
    doc = DOCS[0]
    sents = _conllu_rows(GUM / "dep" / f"{doc}.conllu")
    conllx = "\n\n".join("\n".join("\t".join(r) for r in rows if r[0].isdigit()) for rows in sents) + "\n"
    corenlp = "\n\n".join("\n".join("\t".join([r[0], r[1], r[2], r[4], "O", r[6], r[7]]) for r in rows if r[0].isdigit())
                          for rows in sents) + "\n"
    (tmp_path / "a.conllx").write_text(conllx, encoding="utf-8")
    (tmp_path / "a.conll").write_text(corenlp, encoding="utf-8")
    want = [(w, h, lab) for w, h, lab in _gold(doc)]
    for name in ("a.conllx", "a.conll"):
        got = [(s.words, s.heads, s.deprels) for s in read_dependencies(str(tmp_path / name))]
        assert got == want, name
    assert [(s.words, s.heads) for s in read_dependencies(str(GUM / "dep" / f"{doc}.conllu"))] == \
        [(w, h) for w, h, _ in want]


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_respellings_are_accepted_and_the_tokens_kept(tmp_path):
    """CoreNLP writes ( as -LRB-, " as `` or '', / as \\/; syntrans' tokens are Moses-escaped (&apos;, &quot;): the
    parse takes the text's spelling, its tree too (a bracket leaf written back escaped, read back as the token)."""
    text = _write(tmp_path / "t.en", "He said &quot; no &quot; ( a / b ) .\n\nit &apos;s\n")
    trees = _write(tmp_path / "t.ptb",
                   "(ROOT (S (NP (PRP He)) (VP (VBD said) (`` ``) (NP (DT no)) ('' '') (PRN (-LRB- -LRB-) (NP (NN a) "
                   "(CC \\/) (NN b)) (-RRB- -RRB-))) (. .)))\n( (S (NP (PRP it)) (VP (VBZ 's))))\n")
    got = import_parses(text, trees)
    assert [s.words for s in got] == ["He said &quot; no &quot; ( a / b ) .".split(), ["it", "&apos;s"]]
    assert [s.line for s in got] == [1, 3]  # line 2 is empty: no sentence
    assert list(read_ptb(trees)[1].tree.leaf_labels()) == ["it", "'s"] and got[1].tree.label == "ROOT"
    assert str(got[0].tree).count("-LRB-") == 2  # the ( token and its tag, as PTB writes them
    assert same_token("-LRB-", "(") and same_token("``", "&quot;") and same_token("\\/", "/")
    assert not same_token("dog", "cat")


def test_empty_elements_are_removed_with_the_phrases_they_empty(tmp_path):
    trees = _write(tmp_path / "t.ptb", "(ROOT (S (NP-SBJ (-NONE- *)) (VP (VB go) (NP (-NONE- *T*))) (. .)))\n")
    (s,) = read_ptb(trees)
    assert s.words == ["go", "."] and " ".join(str(s.tree).split()) == "(ROOT (S (VP (VB go)) (. .)))"


@pytest.mark.parametrize("text,trees,deps,message", [
    ("a b\n", "(ROOT (S (X a) (X c)))\n", None, r"t\.ptb, sentence 1 \(line 1 of .*t\.txt\): word 2 is 'c' but the "
                                                r"text's token is 'b'"),
    ("a b\nc\n", "(ROOT (S (X a)))\n(ROOT (S (X b) (X c)))\n", None, r"sentence 2: its 2 words run past the end of "
                                                                      r"line 1 .*one sentence per line"),
    ("a b\nc\n", "(ROOT (S (X a) (X b)))\n", None, r"the parses end at line 2 of .*t\.txt"),
    ("a\n", "(ROOT (S (X a)))\n(ROOT (S (X b)))\n", None, r"1 sentences left after the 1 lines"),
    ("a b\n", "(ROOT (S (X a) (X b)))\n", "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n",
     r"t\.ptb, tree 1 has 2 words but .*t\.conllu, sentence 1 has 1"),
    ("a b\n", None, "1\ta\t_\t_\t_\t_\t2\tx\n", r"t\.conllu, line 1: a word line has 8 tab-separated columns; expected "
                                               r"10 \(CoNLL-U, CoNLL-X\) or 7"),
    ("a b\n", None, "1\ta\t_\t_\t_\t_\t_\tx\t_\t_\n2\tb\t_\t_\t_\t_\t0\troot\t_\t_\n",
     r"t\.conllu, line 1: the HEAD column holds '_'"),
])
def test_what_does_not_fit_is_an_error_naming_the_place(tmp_path, text, trees, deps, message):
    t = _write(tmp_path / "t.txt", text)
    with pytest.raises(ValueError, match=message):
        import_parses(t, _write(tmp_path / "t.ptb", trees) if trees else None,
                      _write(tmp_path / "t.conllu", deps) if deps else None)


MULTI30K = SHARED_DATA / "multi30k"


@pytest.mark.skipif(not (MULTI30K / "train.de").is_file(), reason=f"Multi30k not found at {MULTI30K}")
def test_prepare_with_imported_parses(tmp_path):
    """syntrans-prepare --parser imported: first it stops naming every file it lacks (and the CoreNLP command), then,
    with another parser's output put there (here: the right-branching parser's trees as PTB and heads as CoNLL-X, a
    stand-in for CoreNLP), it imports them; the prepared parses are exactly those, and later steps read them."""
    from syntrans.parsing.trivial import trivial_parse
    from syntrans.prep import PrepError, prepare_corpus

    out = tmp_path / "m30k"
    kw = dict(corpus="multi30k", src="de", tgt="en", out_dir=out, raw_dir=MULTI30K, smoke=True, parser="imported",
              smoke_sizes={"train": 60, "valid": 10, "test": 10}, log=lambda m: None)
    with pytest.raises(PrepError) as err:
        prepare_corpus(**kw)
    message = str(err.value)
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            assert f"{out / 'parse-import'}/{split}.{lang}.ptb and/or" in message
    assert "-ssplit.eolonly true" in message and "StanfordCoreNLP" in message
    expected = {}
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            lines = (out / "tok" / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
            parses = [trivial_parse(line.split(), "right-branching") for line in lines]
            expected[split, lang] = parses
            ptb = "".join(" ".join(str(p.tree).split()) + "\n" for p in parses)
            conllx = "\n".join("".join(f"{i}\t{w}\t_\tX\tX\t_\t{h}\tdep\t_\t_\n" for i, (w, h) in
                                       enumerate(zip(p.words, p.heads), 1)) for p in parses) + "\n"
            (out / "parse-import").mkdir(exist_ok=True)
            (out / "parse-import" / f"{split}.{lang}.ptb").write_text(ptb, encoding="utf-8")
            (out / "parse-import" / f"{split}.{lang}.conllx").write_text(conllx, encoding="utf-8")
    logs = []
    prepared = prepare_corpus(**{**kw, "log": logs.append})
    assert prepared.parsers == {"de": "imported", "en": "imported"}
    n = len(expected["train", "de"])  # the training pairs the filters kept
    assert 50 <= n <= 60 and any(f"train.de imported from train.de.ptb and train.de.conllx: {n} lines, {n} sentences"
                                 in m for m in logs)
    for (split, lang), parses in expected.items():
        got = read_parsed(str(out / "parse" / f"{split}.{lang}.conllu"))
        assert [s.heads for s in got] == [p.heads for p in parses]
        assert [s.distances() for s in got] == [p.distances() for p in parses]
    assert list(prepared.data_bin.glob("train.*head*"))  # the sidecars were written from them
    # a changed file to import redoes the parse step (and the binarize step after it)
    (out / "parse-import" / "valid.de.conllx").write_text(
        (out / "parse-import" / "valid.de.conllx").read_text(encoding="utf-8").replace("\tdep\t", "\tnmod\t"),
        encoding="utf-8")
    logs = []
    prepare_corpus(**{**kw, "log": logs.append})
    assert any(m.startswith("step parse: running") for m in logs) and any(m.startswith("step binarize: running")
                                                                         for m in logs)
