"""The pure checks of parsed input (syntrans.syntax.tree_checks, syntrans.syntax.text_files): dependency trees, CoNLL-U
word IDs, where the trees of a PTB file start, and UTF-8 errors that name the line and the byte."""
import re

import pytest

from syntrans.syntax import text_files
from syntrans.syntax.text_files import NotUtf8Error, check_utf8, read_utf8
from syntrans.syntax.tree_checks import BracketError, chain_heads, dependency_fault, id_fault, tree_lines

pytestmark = pytest.mark.fast


@pytest.mark.parametrize("heads, fault", [
    ([2, 0, 2], None),  # 1 ← 2 → 3
    ([0], None),
    ([2, 3, 0, 3], None),
    ([2, 2, 0], "word 2 ('b') is its own head"),
    ([0, 1, 0], "2 words have head 0 (words 1, 3): a tree has exactly one root"),
    ([2, 3, 1], "no word has head 0: the sentence has no root (expected exactly one among its 3 words)"),
    # word 1 is the root; 2 → 3 → 4 → 2 never reaches it
    ([0, 3, 4, 2], "the heads run into a cycle: word 2 ('b') → word 3 ('c') → word 4 ('d') → word 2 ('b')"),
])
def test_dependency_fault_names_the_first_fault(heads, fault):
    assert dependency_fault(heads, "abcd"[:len(heads)]) == fault


def test_a_cycle_below_a_word_that_reaches_it_is_found():
    # 1 → 2 → 3 → 2: word 1 reaches the cycle, not the root (word 4)
    assert dependency_fault([2, 3, 2, 0]) == "the heads run into a cycle: word 2 → word 3 → word 2"


def test_chain_heads_are_a_tree():
    assert chain_heads(1) == [0] and chain_heads(4) == [2, 3, 4, 0]
    assert all(dependency_fault(chain_heads(n)) is None for n in range(1, 30))


@pytest.mark.parametrize("ids, fault", [
    (["1", "2", "3"], None),
    (["1", "2-3", "2", "3", "3.1", "4"], None),  # a multi-word token's range and an empty node are no words
    (["1", "x", "3"], (1, "word ID 'x' is not a positive integer (nor a range like 7-8 or an empty node like 8.1)")),
    (["1", "2", "2"], (2, "word ID 2 appears twice (rows 2 and 3 of the sentence)")),
    (["1", "3", "2"], (1, "word IDs must run 1, 2, … in order: expected 2, found 3")),
    (["0", "1"], (0, "word IDs must run 1, 2, … in order: expected 1, found 0")),
    (["1", "-2"], (1, "word ID '-2' is not a positive integer (nor a range like 7-8 or an empty node like 8.1)")),
])
def test_id_fault(ids, fault):
    assert id_fault(ids) == fault


def test_tree_lines_one_per_line_or_blank_line_separated():
    assert tree_lines("(A (B x))\n(A (B y))\n") == [1, 2]
    assert tree_lines("(A\n  (B x)\n  (C y))\n\n(A (B z))\n") == [1, 5]
    assert tree_lines("") == [] and tree_lines("\n\n") == []


@pytest.mark.parametrize("text, line, what", [
    # line 4 lacks a ')': the tree that starts there swallows line 5 and is open at the end of the file
    ("(A (B a))\n(A (B b))\n(A (B c))\n(A (B d) (B e)\n(A (B f))\n", 4, "not closed: 1 ')' missing"),
    # an extra ')' on line 5 (stanza's reader says the tree started on line 4)
    ("(A (B a))\n(A (B b))\n(A (B c))\n(A (B d))\n(A (B f)))\n", 5, "a ')' that closes no bracket"),
    # two trees on line 2: tree 3 would be read as line 3's
    ("(A (B a))\n(A (B b)) (A (B c))\n(A (B d))\n", 2, "tree 3 starts on the line where tree 2 ends"),
    ("(A (B a))\nstray words\n(A (B d))\n", 2, "text outside brackets: 'stray words"),
])
def test_tree_lines_name_the_line_of_the_fault(text, line, what):
    with pytest.raises(BracketError) as e:
        tree_lines(text)
    assert e.value.line == line and what in e.value.what
    assert str(e.value).startswith(f"line {line}: ")


def test_check_utf8_names_line_and_byte_across_chunks(tmp_path, monkeypatch):
    good = "ein schönes Haus\n" * 3  # ö is two bytes
    path = tmp_path / "t.txt"
    path.write_bytes(good.encode() + b"caf\xe9 au lait\n")
    offset = len(good.encode()) + 3
    for chunk in (1, 2, 5, 1 << 20):  # chunks that split ö's two bytes, and one chunk
        monkeypatch.setattr(text_files, "CHUNK", chunk)
        with pytest.raises(NotUtf8Error) as e:
            check_utf8(str(path), "BPE text")
        assert str(e.value).startswith(f"{path} (BPE text), line 4: not UTF-8 text (byte 0xe9 at byte offset {offset}:")
        path.write_bytes(good.encode())
        check_utf8(str(path))  # clean
        path.write_bytes(good.encode() + b"caf\xe9 au lait\n")
    path.write_bytes(good.encode() + b"\xc3")  # cut inside a character at the end of the file
    with pytest.raises(NotUtf8Error, match=r", line 4: not UTF-8 text \(byte 0xc3 at byte offset"):
        check_utf8(str(path))
    with pytest.raises(NotUtf8Error, match=r", line 4: "):
        read_utf8(str(path))
    path.write_bytes(b"a\r\nb\n")
    assert read_utf8(str(path)) == "a\nb\n"  # universal newlines, as open() reads text


def test_the_gate_passes_a_tree_and_a_sentence_without_heads_untouched():
    from syntrans.syntax.parsed import ParsedSentence
    from syntrans.syntax.tree_checks import gate_heads

    tree = ParsedSentence(["a", "b", "c"], heads=[2, 0, 2], deprels=["det", "root", "obj"])
    assert gate_heads(tree, "f, line 1", strict=False) is None and tree.heads == [2, 0, 2]
    assert tree.deprels == ["det", "root", "obj"]
    bare = ParsedSentence(["a"])
    assert gate_heads(bare, "f, line 2", strict=True) is None and bare.heads is None


@pytest.mark.parametrize("heads, fault", [([0, 3, 2], "cycle: word 2 ('b') → word 3 ('c') → word 2 ('b')"),
                                          ([0, 0, 2], "2 words have head 0"),
                                          ([2, 3, 1], "no word has head 0"),
                                          ([0, 7, 2], "word 2 ('b') has head 7, outside 0..3")])
def test_the_gate_falls_back_to_the_chain_counted_or_refuses_under_strict(heads, fault):
    from syntrans.syntax.parsed import ParsedSentence
    from syntrans.syntax.tree_checks import NotATree, gate_heads

    s = ParsedSentence(["a", "b", "c"], heads=list(heads), deprels=["x", "y", "z"])
    with pytest.raises(NotATree, match=r"^f, sentence 4: the dependency heads are no tree: .*" + re.escape(fault)):
        gate_heads(s, "f, sentence 4", strict=True)
    assert s.heads == list(heads)  # refused: left as it was
    assert fault in gate_heads(s, "f, sentence 4", strict=False)
    assert s.heads == [2, 3, 0] and s.deprels is None  # each word headed by the next, the last the root


def test_every_route_passes_parses_through_the_one_gate():
    """The tree check and its fallback are called in syntax/tree_checks.py only (gate_heads); the routes (the
    sidecar build, syntrans-translate --parse, Translator.translate_parsed through parse_match) call the gate."""
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "syntrans"
    private = [f"{p.relative_to(package)}" for p in package.rglob("*.py") if p.name != "tree_checks.py"
               and any(f"{name}(" in p.read_text(encoding="utf-8") for name in ("dependency_fault", "chain_heads"))]
    assert private == []
    for route in ("data/build_sidecars.py", "cli/translate.py", "syntax/parse_match.py"):
        assert "gate_heads(" in (package / route).read_text(encoding="utf-8"), route
