"""How well a parser did against gold annotation, in plain Python (no torch, no stanza import).

* :func:`attachment_scores`: unlabelled and labelled attachment scores (UAS, LAS: the share of words whose head, and
  head and relation, are the gold ones; Buchholz and Marsi 2006, as scored in the CoNLL 2018 shared task: relations
  compared by their universal part, ``acl:relcl`` = ``acl``) and UPOS accuracy, over syntactic words, punctuation
  counted (``punct=False`` leaves out the words whose gold UPOS is PUNCT).
* :func:`brackets`, :func:`bracket_scores`: labelled bracket precision, recall and F1 of constituency trees
  (PARSEVAL, Black et al. 1991): a bracket is (label, first leaf, end leaf); preterminals are not counted, matching
  brackets are counted with their multiplicity; the root node may be left out (it always matches).
* :func:`span_f1`, :func:`token_spans`, :func:`text_spans`: the F1 of tokens (or sentences) as spans of the text's
  non-whitespace characters, as the CoNLL 2018 shared task aligns a system's tokenization with the gold one.

Sentences of CoNLL-U are read by :func:`read_conllu` (syntactic words) and :func:`read_conllu_tokens` (the surface
tokens and the ``# text`` of each sentence).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple


class Word(NamedTuple):
    """A syntactic word of a parse: its form, UPOS, head (1-based, 0 = root) and relation."""

    form: str
    upos: str
    head: int
    deprel: str


def read_conllu(text: str) -> list[list[Word]]:
    """The syntactic words of each sentence of a CoNLL-U text (multi-word token ranges and empty nodes skipped)."""
    sents, cur = [], []
    for line in text.splitlines():
        if not line.strip():
            if cur:
                sents.append(cur)
            cur = []
        elif not line.startswith("#"):
            cols = line.split("\t")
            if cols[0].isdigit():
                cur.append(Word(cols[1], cols[3], int(cols[6]), cols[7]))
    if cur:
        sents.append(cur)
    return sents


def read_conllu_tokens(text: str) -> list[tuple[str, list[str]]]:
    """(``# text``, surface tokens) of each sentence of a CoNLL-U text: a multi-word token is one token (its range
    line), its words are skipped; empty nodes are skipped."""
    out, sent_text, tokens, covered = [], "", [], 0
    for line in text.splitlines():
        if not line.strip():
            if tokens:
                out.append((sent_text, tokens))
            sent_text, tokens, covered = "", [], 0
        elif line.startswith("# text ="):
            sent_text = line.split("=", 1)[1].strip()
        elif not line.startswith("#"):
            cols = line.split("\t")
            if "-" in cols[0]:
                tokens.append(cols[1])
                covered = int(cols[0].split("-")[1])
            elif cols[0].isdigit() and int(cols[0]) > covered:
                tokens.append(cols[1])
    if tokens:
        out.append((sent_text, tokens))
    return out


def attachment_scores(gold: Sequence[Sequence[Word]], pred: Sequence[Sequence[Word]], punct: bool = True) -> dict:
    """UAS, LAS and UPOS accuracy in percent (module docstring) of ``pred`` against ``gold``, sentence by sentence and
    word by word (a ValueError when the sentences or their words do not pair up), and the number of words scored."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} parsed ones")
    words = uas = las = upos = 0
    for k, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {k + 1}: {len(g)} gold words but {len(p)} parsed ones")
        for gw, pw in zip(g, p):
            if not punct and gw.upos == "PUNCT":
                continue
            words += 1
            upos += gw.upos == pw.upos
            if gw.head == pw.head:
                uas += 1
                las += gw.deprel.split(":")[0] == pw.deprel.split(":")[0]
    pct = (lambda n: round(100.0 * n / words, 2)) if words else (lambda n: 0.0)
    return {"words": words, "uas": pct(uas), "las": pct(las), "upos": pct(upos)}


def brackets(tree: Any, root: bool = True) -> list[tuple[str, int, int]]:
    """The labelled brackets (label, start, end) of a tree (nodes with ``.label`` and ``.children``, a leaf has no
    children; leaves numbered from 0, end exclusive), preterminals (one child, a leaf) not counted; ``root`` False
    leaves out the tree's own node. Post-order."""
    out, pos = [], [0]

    def walk(node) -> None:
        if not node.children:
            pos[0] += 1
            return
        start = pos[0]
        for c in node.children:
            walk(c)
        preterminal = len(node.children) == 1 and not node.children[0].children
        if not preterminal and (root or node is not tree):
            out.append((node.label, start, pos[0]))

    walk(tree)
    return out


def bracket_counts(gold: Iterable[tuple], pred: Iterable[tuple]) -> tuple[int, int, int]:
    """(matched, gold, predicted) brackets of one tree pair; a bracket matches as often as it occurs in both."""
    g, p = Counter(gold), Counter(pred)
    return sum((g & p).values()), sum(g.values()), sum(p.values())


def bracket_scores(pairs: Iterable[tuple[Any, Any]], root: bool = True) -> dict:
    """Labelled bracket precision, recall and F1 in percent over (gold tree, predicted tree) pairs (module docstring),
    summed over the corpus, and the number of trees."""
    hit = gold = pred = trees = 0
    for g, p in pairs:
        h, n_g, n_p = bracket_counts(brackets(g, root), brackets(p, root))
        hit, gold, pred, trees = hit + h, gold + n_g, pred + n_p, trees + 1
    return {"trees": trees, "precision": round(100.0 * hit / pred, 2) if pred else 0.0,
            "recall": round(100.0 * hit / gold, 2) if gold else 0.0,
            "f1": round(200.0 * hit / (gold + pred), 2) if gold + pred else 0.0}


def token_spans(pieces: Iterable[str]) -> list[tuple[int, int]]:
    """(start, end) of each piece of text over the non-whitespace characters of their concatenation (the gold side:
    tokens whose concatenation is the text, less its whitespace)."""
    out, pos = [], 0
    for piece in pieces:
        n = len("".join(piece.split()))
        out.append((pos, pos + n))
        pos += n
    return out


def text_spans(text: str, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Character spans of ``text`` (start, end: offsets into it, as a tokenizer reports them) as spans over its
    non-whitespace characters (the predicted side: independent of how the tokenizer spells a token)."""
    before = [0]  # before[i]: non-whitespace characters in text[:i]
    for ch in text:
        before.append(before[-1] + (not ch.isspace()))
    return [(before[a], before[b]) for a, b in spans]


def span_f1(gold: Iterable[tuple[int, int]], pred: Iterable[tuple[int, int]]) -> float:
    """F1 in percent of predicted spans (tokens, sentences over the text's non-whitespace characters) against the gold
    ones: a span counts when both its ends are right."""
    g, p = set(gold), set(pred)
    return round(200.0 * len(g & p) / (len(g) + len(p)), 2) if g or p else 0.0
