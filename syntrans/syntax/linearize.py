"""Parses as token sequences: the parse targets of the +MULTI-TASK baseline (pure, no fairseq).

Bugliarello & Okazaki 2020, App. A (+MULTI-TASK, after Currey & Heafield 2019): "Each source sentence is first
duplicated and associated its linearized parse as target sequence". The paper does not say how a parse is
linearised; the authors' released preparation (github.com/e-bug/pascal, ``scripts/bpe_lin_parses.py``) prints each
Stanford CoreNLP constituency tree and removes every word together with its part-of-speech bracket, so a target is
an *unlexicalized constituency skeleton*: one ``(LABEL`` token per phrase node and a ``)`` token closing it, the
preterminals (POS tag and word) gone. That is :func:`constituency_skeleton`, the default target.

E.g. ``(ROOT (S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .)))`` gives ``(ROOT (S (NP ) (VP ) ) )``: a phrase whose
children are all preterminals becomes ``(NP )``; unary chains and function tags (``NP-SBJ``) stay as the parser wrote
them; a line of several sentences is their skeletons one after the other. The skeleton holds no word, so BPE does
not touch it.

The other target, ours and a labelled option (:func:`linearize_tree`, ``syntrans-prepare --multitask-target
dependency``), is a bracketed head-dependent structure of the dependency parse over the source's own BPE pieces:

* a word's subtree is ``(label``, its left dependents' subtrees, the word's own tokens, its right dependents'
  subtrees, ``)label``, where ``label`` is the word's dependency relation (the root's: ``root``);
* dependents in sentence order, so the words of a projective parse come out in sentence order;
* a line of several sentences (or several roots) is their subtrees one after the other.

E.g. "the cat sat" with heads (2, 3, 0) and labels (det, nsubj, root) gives
``(root (nsubj (det the )det cat )nsubj sat )root``. The words are emitted as given: BPE pieces when the caller
passes each word's pieces (:func:`linearize_line`), so parse targets are segmented exactly like the source.
A labelled closing token (as the ``)S`` of Vinyals et al. 2015's linearised trees) keeps the brackets apart from
a word ``)``: Moses tokenization never yields a token that starts with a bracket and goes on with letters.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from .align import bpe_words, check_line_words
from .parsed import ParsedSentence
from .tree_checks import head_range_fault, line_roots
from .trees import TreeLike, as_tree

OPEN = "("
CLOSE = ")"
#: the +MULTI-TASK targets: the authors' (the default) and ours
TARGETS = ("constituency", "dependency")


def constituency_skeleton(tree: TreeLike, where: str = "sentence") -> List[str]:
    """The unlexicalized skeleton of one constituency tree (module docs): ``(LABEL`` for every node that is neither
    a word nor a preterminal (a node over a single word), in preorder, each closed by ``)``. ValueError naming
    ``where`` for a tree without a phrase node (a bare word or a lone preterminal) or with an unlabelled one."""
    root = as_tree(tree)
    out: List[str] = []

    def is_word(node) -> bool:
        return not node.children

    def is_preterminal(node) -> bool:
        return len(node.children) == 1 and is_word(node.children[0])

    if is_word(root) or is_preterminal(root):
        raise ValueError(f"{where}: the constituency tree {str(root)[:60]!r} has no phrase node; expected a tree "
                         "such as (ROOT (S …))")
    stack: List[object] = [root]  # an explicit stack: a right-branching fallback tree is as deep as its line is long
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
            continue
        if is_word(node) or is_preterminal(node):
            continue
        label = str(node.label or "").strip()
        if not label or any(c.isspace() or c in "()" for c in label):
            raise ValueError(f"{where}: a phrase node labelled {node.label!r}; expected a label without spaces or "
                             "brackets (e.g. ROOT, S, NP)")
        out.append(OPEN + label)
        stack.append(CLOSE)
        stack.extend(reversed(node.children))
    return out


def skeleton_line(sentences: Sequence[ParsedSentence], pieces: Sequence[str], marker: Optional[str] = "@@",
                  where: str = "line") -> List[str]:
    """The constituency skeleton of one corpus line: its ``sentences``' skeletons in order. The line's BPE ``pieces``
    (``marker`` None: words) must spell the parse's words; every sentence needs a constituency tree. ValueError
    naming ``where`` otherwise."""
    words = bpe_words(pieces, marker) if marker is not None else list(pieces)
    check_line_words(words, [w for s in sentences for w in s.words], where)
    out: List[str] = []
    for k, s in enumerate(sentences, 1):
        if s.tree is None:
            raise ValueError(f"{where}: sentence {k} of the line has no constituency tree; the +MULTI-TASK target "
                             "(the authors' constituency skeleton) needs one (CoNLL-U '# constituency' comments or "
                             "PTB brackets), or use the dependency target")
        out += constituency_skeleton(s.tree, f"{where}, sentence {k}")
    return out


def linearize_tree(heads: Sequence[int], labels: Sequence[str], words: Sequence[Sequence[str]],
                   where: str = "sentence") -> List[str]:
    """Bracketed tokens of one dependency tree (module docs); ``heads`` 1-based (0 = root), ``words[i]`` the tokens
    word i is written as (one or more pieces). Raises ValueError naming ``where`` for a head out of range, a cycle
    (a word no root reaches), a label with whitespace, or lengths that differ."""
    n = len(heads)
    if len(labels) != n or len(words) != n:
        raise ValueError(f"{where}: {n} heads, {len(labels)} labels and {len(words)} words; expected equal counts")
    fault = head_range_fault(heads)
    if fault:
        raise ValueError(f"{where}: {fault}")
    try:
        line_roots(heads)  # no word its own head, none in a cycle; a line may hold several roots
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    kids: List[List[int]] = [[] for _ in range(n + 1)]  # kids[0]: the roots; kids[h]: dependents of word h (1-based)
    for i, h in enumerate(heads, 1):
        kids[h].append(i)
    for i, label in enumerate(labels, 1):
        if not label or any(c.isspace() for c in label):
            raise ValueError(f"{where}: word {i} has label {label!r}; expected a non-empty label without whitespace")
    out: List[str] = []
    # an explicit stack, not recursion: a right-branching fallback parse of a long line is a chain n deep
    stack: List[object] = [("node", r) for r in reversed(kids[0])]
    while stack:
        kind, v = stack.pop()
        if kind == "tok":
            out.extend(v)
            continue
        left = [k for k in kids[v] if k < v]
        right = [k for k in kids[v] if k > v]
        label = labels[v - 1]
        out.append(OPEN + label)
        todo = [("node", k) for k in left] + [("tok", list(words[v - 1]))] + [("node", k) for k in right]
        todo.append(("tok", [CLOSE + label]))
        stack.extend(reversed(todo))
    return out


def sentence_labels(sentence: ParsedSentence) -> List[str]:
    """The dependency labels of a parsed sentence; ``root``/``dep`` where the parse gives none (as CoNLL-U is written
    by :func:`~syntrans.syntax.parsed.format_conllu`)."""
    if sentence.deprels is not None:
        return [r if r not in ("", "_") else ("root" if h == 0 else "dep") for r, h in zip(sentence.deprels, sentence.heads)]
    return ["root" if h == 0 else "dep" for h in sentence.heads]


def linearize_line(sentences: Sequence[ParsedSentence], pieces: Sequence[str], marker: Optional[str] = "@@",
                   where: str = "line") -> List[str]:
    """The linearised parse of one corpus line: its ``sentences`` (in order) over the line's BPE ``pieces`` (each word
    written as its pieces; ``marker`` None: the pieces are words). The words the pieces spell must be as many as the
    parse's; every sentence needs dependency heads. ValueError naming ``where`` otherwise."""
    groups: List[List[str]] = []  # the pieces of each word
    cur: List[str] = []
    for p in pieces:
        cur.append(p)
        if marker is None or not p.endswith(marker):
            groups.append(cur)
            cur = []
    if cur:
        raise ValueError(f"{where}: the last piece {cur[-1]!r} ends in the continuation marker {marker!r}: "
                         f"the word never ends")
    words = bpe_words(pieces, marker) if marker is not None else list(pieces)
    check_line_words(words, [w for s in sentences for w in s.words], where)
    out: List[str] = []
    start = 0
    for k, s in enumerate(sentences, 1):
        if s.heads is None:
            raise ValueError(f"{where}: sentence {k} of the line has no dependency heads; a parse target needs a "
                             f"dependency parse (CoNLL-U with heads)")
        n = len(s.words)
        out += linearize_tree(s.heads, sentence_labels(s), groups[start:start + n], f"{where}, sentence {k}")
        start += n
    return out
