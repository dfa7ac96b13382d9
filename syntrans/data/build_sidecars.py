"""Build the word-level syntax sidecars of one split and side from BPE text and a parsed corpus."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import List

from ..syntax.align import bpe_word_index, bpe_words, check_line_words, line_facts
from ..syntax.deprels import OTHER_LABEL, line_labels
from ..syntax.gc_pause import gc_paused
from ..syntax.parsed import group_by_line, read_parsed
from ..syntax.text_files import read_utf8
from ..syntax.tree_checks import chain_heads, dependency_fault
from . import sidecars

logger = logging.getLogger("syntrans.preprocess")


class SidecarError(ValueError):
    """Bad preprocessing input; the message names the file, the line, what was expected and found."""


@dataclass
class SidecarReport:
    """What one (split, side) build met; line numbers are 1-based lines of the text file."""

    text_file: str
    parse_file: str
    lines: int = 0
    words: int = 0
    kinds: List[str] = field(default_factory=list)
    multi_sentence: List[int] = field(default_factory=list)
    empty: List[int] = field(default_factory=list)
    failed: List[int] = field(default_factory=list)
    respelled: List[int] = field(default_factory=list)
    not_trees: List[int] = field(default_factory=list)  # lines with dependency heads that are no tree (chain fallback)
    first_not_tree: str = ""  # what the first of them is
    other_labels: List[int] = field(default_factory=list)  # lines with a relation outside UD v2 (label "other")
    seconds: float = 0.0

    def summary(self) -> str:
        def some(xs):
            return f"{len(xs)}" + (f" (lines {', '.join(map(str, xs[:5]))}{', …' if len(xs) > 5 else ''})" if xs else "")
        labels = (f"lines with a dependency relation outside UD v2 {some(self.other_labels)} (label 'other'); "
                  if "label" in self.kinds else "")
        fallback = (f" (the chain fallback is used: each word headed by the next; first: {self.first_not_tree})"
                    if self.not_trees else "")
        return (f"{self.text_file}: {self.lines} lines, {self.words} words → sidecars {'/'.join(self.kinds)}; "
                f"multi-sentence lines {some(self.multi_sentence)} (gap 999 between sentences); "
                f"empty lines {some(self.empty)} (empty sidecars); failed parses {some(self.failed)} "
                f"(the parser's fallback tree is used); words spelled differently in the parse {some(self.respelled)}; "
                f"dependency heads that are no tree {some(self.not_trees)}{fallback}; "
                f"{labels}{self.seconds:.2f}s")


def build_side(text_file: str, parse_file: str, out_prefix: str, marker: str = "@@", binarize: bool = False,
               strict: bool = False) -> SidecarReport:
    """Write ``{out_prefix}.{word,head,dist,label}`` for a BPE text file and its parsed corpus (``head`` and ``label``
    where the parses have dependencies, ``dist`` where they have constituency trees).

    Every line's word count (BPE pieces joined at ``marker``) must equal its parse's; multi-sentence
    lines, empty lines, failed parses, respelled words and dependency heads that are no tree (several roots or none, a
    word its own head, a cycle: :func:`~syntrans.syntax.tree_checks.dependency_fault`) are counted and reported (errors
    under ``strict``); such heads are replaced by :func:`~syntrans.syntax.tree_checks.chain_heads` (relations ``root`` and
    ``dep``, as the parser's fallback has them).
    """
    with gc_paused():
        return _build_side(text_file, parse_file, out_prefix, marker, binarize, strict)


def _build_side(text_file, parse_file, out_prefix, marker, binarize, strict) -> SidecarReport:
    t0 = time.perf_counter()
    rep = SidecarReport(text_file, parse_file)
    lines = read_utf8(text_file, "BPE text").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rep.lines = len(lines)
    try:
        sentences = read_parsed(parse_file)
    except (ValueError, FileNotFoundError) as e:
        raise SidecarError(str(e)) from None
    try:
        groups = group_by_line(sentences, len(lines), parse_file)
    except ValueError as e:
        raise SidecarError(f"{e} ({text_file})") from None
    for attr, what in (("tree", "a constituency tree"), ("heads", "dependency heads")):
        lacking = [s for s in sentences if getattr(s, attr) is None]
        if 0 < len(lacking) < len(sentences):
            raise SidecarError(f"{parse_file}: {len(sentences) - len(lacking)} of {len(sentences)} sentences have {what}; "
                               f"the sentence for line {lacking[0].line} has none (all or none must)")
    for k, s in enumerate(sentences):
        fault = None if s.heads is None else dependency_fault(s.heads, s.words)
        if fault is None:
            continue
        where = f"{parse_file}, sentence {k + 1} (line {s.line} of {text_file})"
        if strict:
            raise SidecarError(f"{where}: the dependency heads are no tree: {fault}; --strict refuses it")
        if not rep.not_trees or rep.not_trees[-1] != s.line:
            rep.not_trees.append(s.line)
        rep.first_not_tree = rep.first_not_tree or f"{where}: {fault}"
        s.heads, s.deprels = chain_heads(len(s.words)), None
    need_tree = any(s.tree is not None for s in sentences)
    need_heads = any(s.heads is not None for s in sentences)
    word_items, head_items, dist_items, label_items = [], [], [], []
    for ln, (text, sents) in enumerate(zip(lines, groups), 1):
        pieces = text.split()
        try:
            widx = bpe_word_index(pieces, marker)
        except ValueError as e:
            raise SidecarError(f"{text_file}, line {ln}: {e}") from None
        words = bpe_words(pieces, marker)
        parse_words = [w for s in sents for w in s.words]
        try:
            check_line_words(words, parse_words, f"{text_file}, line {ln}", parse_file)
        except ValueError as e:
            raise SidecarError(str(e)) from None
        if words != parse_words:
            rep.respelled.append(ln)
        if not pieces:
            rep.empty.append(ln)
        if len(sents) > 1:
            rep.multi_sentence.append(ln)
        if any(s.failed for s in sents):
            rep.failed.append(ln)
        heads, dists = line_facts(sents, binarize=binarize, need_tree=need_tree, need_heads=need_heads)
        word_items.append(widx)
        if need_tree:
            dist_items.append(dists)
        if need_heads:
            head_items.append(heads)
            labels = line_labels(sents)
            label_items.append(labels)
            if OTHER_LABEL in labels:
                rep.other_labels.append(ln)
        rep.words += len(words)
    if strict:
        for xs, what in ((rep.multi_sentence, "holds several sentences"), (rep.empty, "is empty"),
                         (rep.failed, "has a failed parse"), (rep.respelled, "spells words differently from its parse")):
            if xs:
                raise SidecarError(f"{text_file}, line {xs[0]} {what} ({len(xs)} line{'s' if len(xs) > 1 else ''} in all); "
                                  "--strict refuses it")
    sidecars.write(f"{out_prefix}.word", word_items)
    rep.kinds.append("word")
    if need_heads:
        sidecars.write(f"{out_prefix}.head", head_items)
        rep.kinds.append("head")
    if need_tree:
        sidecars.write(f"{out_prefix}.dist", dist_items)
        rep.kinds.append("dist")
    if need_heads:
        sidecars.write(f"{out_prefix}.label", label_items)
        rep.kinds.append("label")
    rep.seconds = time.perf_counter() - t0
    return rep
