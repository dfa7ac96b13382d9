"""GUM (shared/data/gum): constituency (const/X.ptb) and dependency (dep/X.conllu) files agree.

Findings on the stored GUM copy (44 documents, 1536 sentences, 35376 syntactic words):

* Raw PTB leaves escape round brackets as ``-LRB-`` / ``-RRB-``, also inside words
  (``Spouse-LRB-s-RRB-`` vs CoNLL-U ``Spouse(s)``, ``a-RRB-`` vs ``a)``); square brackets are written
  as ``[`` / ``]`` in both files. stanza's tree reader (used by ``read_parsed``) replaces ``-LRB-`` by
  ``(`` and ``-RRB-`` by ``)`` inside every leaf, so after ``read_parsed`` the words agree exactly.
* CoNLL-U has multi-word-token range lines (``1-2 don't``; 331 of them) and enhanced-graph empty
  nodes (``8.1``; 23). The PTB leaves are the syntactic words (``do`` ``n't``), and ``read_parsed``
  returns syntactic words without empty nodes, so these agree too.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from syntrans.syntax import read_parsed, tree_distances

GUM = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gum"

if not (GUM / "const").is_dir() or not (GUM / "dep").is_dir():
    pytest.skip(f"GUM data not found at {GUM}", allow_module_level=True)


def stems(sub: str, ext: str):
    return sorted(p.name[: -len(ext)] for p in (GUM / sub).glob("*" + ext))


DOCS = stems("const", ".ptb")


@pytest.fixture(scope="module")
def corpus():
    """{doc: (constituency sentences, dependency sentences)} read with read_parsed."""
    return {d: (read_parsed(str(GUM / "const" / f"{d}.ptb")), read_parsed(str(GUM / "dep" / f"{d}.conllu")))
            for d in DOCS}


# --------------------------------------------------------------------------- raw readers (independent)

def raw_ptb_leaves(path: Path):
    """Leaves of each tree, straight from the brackets (no unescaping): a token right after '(' is a label."""
    trees, words, depth, prev = [], [], 0, None
    for tok in re.findall(r"\(|\)|[^\s()]+", path.read_text(encoding="utf-8")):
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
            assert depth >= 0, f"{path.name}: extra close bracket"
            if depth == 0:
                trees.append(words)
                words = []
        elif prev != "(":
            words.append(tok)
        prev = tok
    assert depth == 0, f"{path.name}: unclosed bracket"
    return trees


def raw_conllu(path: Path):
    """(syntactic word forms, MWT range count, empty node count) per sentence, straight from the columns."""
    sents, forms, mwt, empty = [], [], 0, 0
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip():
            if forms:
                sents.append((forms, mwt, empty))
            forms, mwt, empty = [], 0, 0
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        assert len(cols) == 10, f"{path.name}: malformed line {line!r}"
        if "-" in cols[0]:
            mwt += 1
        elif "." in cols[0]:
            empty += 1
        else:
            forms.append(cols[1])
    return sents


def unescape_ptb(word: str) -> str:
    """The documented normalisation: PTB round-bracket escapes, anywhere in a token."""
    return word.replace("-LRB-", "(").replace("-RRB-", ")")


# --------------------------------------------------------------------------- tests


def test_same_documents():
    assert DOCS, "no .ptb files"
    assert DOCS == stems("dep", ".conllu")


def test_same_number_of_sentences(corpus):
    bad = {d: (len(c), len(u)) for d, (c, u) in corpus.items() if len(c) != len(u)}
    assert not bad, f"sentence counts differ (const, dep): {bad}"


def test_words_agree_after_read_parsed(corpus):
    bad = []
    for d, (c, u) in corpus.items():
        for k, (a, b) in enumerate(zip(c, u)):
            if a.words != b.words:
                diff = [(x, y) for x, y in zip(a.words, b.words) if x != y][:3]
                bad.append(f"{d} sentence {k + 1}: {len(a.words)} vs {len(b.words)} words, e.g. {diff}")
    assert not bad, "\n".join(bad[:20])


def test_raw_files_agree_after_bracket_unescaping():
    """Independent of stanza: same word counts raw, equal words after unescaping -LRB-/-RRB-."""
    bad = []
    escapes = 0
    for d in DOCS:
        trees = raw_ptb_leaves(GUM / "const" / f"{d}.ptb")
        sents = raw_conllu(GUM / "dep" / f"{d}.conllu")
        if len(trees) != len(sents):
            bad.append(f"{d}: {len(trees)} trees vs {len(sents)} sentences")
            continue
        for k, (leaves, (forms, _, _)) in enumerate(zip(trees, sents)):
            if len(leaves) != len(forms):
                bad.append(f"{d} sentence {k + 1}: {len(leaves)} leaves vs {len(forms)} syntactic words")
                continue
            for x, y in zip(leaves, forms):
                if x != y:
                    escapes += 1
                    if unescape_ptb(x) != y:
                        bad.append(f"{d} sentence {k + 1}: leaf {x!r} vs form {y!r}")
    assert not bad, "\n".join(bad[:20])
    assert escapes > 0  # the escapes do occur in this corpus: the normalisation is needed


def test_read_parsed_keeps_syntactic_words_only(corpus):
    """MWT ranges and empty nodes occur, and read_parsed drops them (words = raw syntactic forms)."""
    n_mwt = n_empty = 0
    for d, (_, u) in corpus.items():
        sents = raw_conllu(GUM / "dep" / f"{d}.conllu")
        assert len(sents) == len(u)
        for (forms, mwt, empty), s in zip(sents, u):
            n_mwt += mwt
            n_empty += empty
            assert s.words == forms
    assert n_mwt > 0 and n_empty > 0


def test_distances_have_length_n_minus_1(corpus):
    for d, (c, _) in corpus.items():
        for k, s in enumerate(c):
            n = len(s.words)
            assert len(tree_distances(s.tree)) == n - 1, f"{d} sentence {k + 1}"
            b = tree_distances(s.tree, binarize=True)
            assert len(b) == n - 1, f"{d} sentence {k + 1} (binarized)"
            assert all(x >= 1 for x in b)


def test_string_and_tree_paths_agree(corpus):
    """tree_distances on the bracket string (scanned) equals the one on the stanza Tree, for every tree."""
    for d, (c, _) in corpus.items():
        for k, s in enumerate(c):
            text = str(s.tree)  # stanza writes leaves back with -LRB-/-RRB- escapes
            assert tree_distances(text) == tree_distances(s.tree), f"{d} sentence {k + 1}"
            assert tree_distances(text, binarize=True) == tree_distances(s.tree, binarize=True), f"{d} sentence {k + 1}"


def test_conllu_heads_form_trees(corpus):
    for d, (_, u) in corpus.items():
        for k, s in enumerate(u):
            where = f"{d} sentence {k + 1}"
            n = len(s.words)
            assert s.heads is not None and len(s.heads) == n, where
            assert all(0 <= h <= n for h in s.heads), where
            assert all(h != i + 1 for i, h in enumerate(s.heads)), f"{where}: self loop"
            assert s.heads.count(0) == 1, f"{where}: {s.heads.count(0)} roots"
            for i in range(1, n + 1):  # every word reaches the root without a cycle
                seen, cur = set(), i
                while cur != 0:
                    assert cur not in seen, f"{where}: cycle through word {cur}"
                    seen.add(cur)
                    cur = s.heads[cur - 1]
