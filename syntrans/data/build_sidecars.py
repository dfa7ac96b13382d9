"""Build the word-level syntax sidecars of one split and side from BPE text and a parsed corpus."""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import List

from ..syntax.deprels import OTHER_LABEL
from ..syntax.gc_pause import gc_paused
from ..syntax.parsed import iter_parsed
from ..syntax.text_files import check_utf8
from ..syntax.tree_checks import NotATree, gate_heads
from ..syntax.word_spans import line_spans
from .piece_routes import PieceRoute
from .sidecar_format import KIND_DTYPES, KINDS, kinds_of_views, line_items
from .sidecars import SidecarWriter

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
    by_chars: bool = False  # pieces aligned to words by characters (--bpe sentencepiece or gpt2)
    crossing: int = 0  # pieces holding characters of two or more words (aligned by characters)
    crossing_lines: List[int] = field(default_factory=list)  # the lines holding them
    joined: int = 0  # words without a piece of their own, joined to the word whose piece holds them
    joined_lines: List[int] = field(default_factory=list)  # the lines holding them
    merged_sentences: int = 0  # sentences merged into the one before by such a join
    merged_lines: List[int] = field(default_factory=list)  # the lines holding them

    def fallbacks(self) -> dict:
        """Each per-line fault this build counted and worked around instead of stopping (``--strict`` stops at it):
        ``{name: {"count": n, "lines": [...]}}`` (lines 1-based; ``count`` words or pieces where it says so)."""
        out = {
            "multi_sentence": (len(self.multi_sentence), self.multi_sentence),  # lines: gap 999 between sentences
            "empty": (len(self.empty), self.empty),  # lines: empty sidecars
            "failed_parse": (len(self.failed), self.failed),  # lines: the parser's fallback parse
            "respelled": (len(self.respelled), self.respelled),  # lines whose words the parse spells otherwise
            "not_a_tree": (len(self.not_trees), self.not_trees),  # lines: the chain fallback
            "other_label": (len(self.other_labels), self.other_labels),  # lines: a relation outside UD v2
        }
        if self.by_chars:
            out["crossing_pieces"] = (self.crossing, self.crossing_lines)  # pieces, in these lines
            out["joined_words"] = (self.joined, self.joined_lines)  # words, in these lines
            out["merged_sentences"] = (self.merged_sentences, self.merged_lines)
        return {k: {"count": n, "lines": list(lines)} for k, (n, lines) in out.items()}

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
                f"{labels}{self.crossing_summary()}{self.seconds:.2f}s")

    def crossing_summary(self) -> str:
        """The crossing pieces, said when pieces are aligned by characters (the ``@@`` route has none)."""
        if not self.by_chars:
            return ""
        lines = self.crossing_lines
        shown = f" (lines {', '.join(map(str, lines[:5]))}{', …' if len(lines) > 5 else ''})" if lines else ""
        joined = self.joined_lines
        merged = f", {self.merged_sentences} sentences merged into the one before" if self.merged_sentences else ""
        shown_joined = (f" (lines {', '.join(map(str, joined[:5]))}{', …' if len(joined) > 5 else ''})"
                        if joined else "")
        return (f"pieces crossing a word boundary {self.crossing} in {len(lines)} lines{shown} (each belongs to the "
                f"word of its first character); words without a piece of their own {self.joined} in {len(joined)} "
                f"lines{shown_joined} (each joined to the word whose piece holds it{merged}); ")


def build_side(text_file: str, parse_file: str, out_prefix: str, marker: str = "@@", binarize: bool = False,
               strict: bool = False, route: PieceRoute | None = None) -> SidecarReport:
    """Write ``{out_prefix}.{word,head,dist,label}`` for a BPE text file and its parsed corpus (``head`` and ``label``
    where the parses have dependencies, ``dist`` where they have constituency trees).

    Every line's word count (BPE pieces joined at ``marker``) must equal its parse's; multi-sentence
    lines, empty lines, failed parses, respelled words and dependency heads that are no tree (several roots or none, a
    word its own head, a cycle: :func:`~syntrans.syntax.tree_checks.dependency_fault`) are counted and reported (errors
    under ``strict``); such heads are replaced by :func:`~syntrans.syntax.tree_checks.chain_heads` (relations ``root`` and
    ``dep``, as the parser's fallback has them). Pieces aligned by characters: a word without a piece of its own is
    joined to the word whose piece holds it and counted (:meth:`~.piece_routes.PieceRoute.line_words`; an error under
    ``strict``). The text and the parses are read line by line and sentence by
    sentence (CoNLL-U; PTB brackets are read whole), and the sidecars written as they grow: memory does not grow with
    the corpus (the line numbers of the lines reported aside).
    """
    with gc_paused():
        try:
            return _build_side(text_file, parse_file, out_prefix, route or PieceRoute(marker=marker), binarize, strict)
        except BaseException:
            for kind in KINDS:  # no half-written sidecar is left behind
                for ext in (".bin", ".idx"):
                    if os.path.exists(f"{out_prefix}.{kind}{ext}"):
                        os.remove(f"{out_prefix}.{kind}{ext}")
            raise


def _text_lines(path: str) -> Iterator[str]:
    """The lines of a text file without their line break, as ``read().split("\\n")`` gives them (a final empty piece
    dropped)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield line[:-1] if line.endswith("\n") else line


def _build_side(text_file, parse_file, out_prefix, route, binarize, strict) -> SidecarReport:
    t0 = time.perf_counter()
    rep = SidecarReport(text_file, parse_file, by_chars=route.by_chars)
    try:
        sentences = iter_parsed(parse_file)
        first = next(sentences, None)
    except (ValueError, FileNotFoundError) as e:
        raise SidecarError(str(e)) from None
    need_tree = first is not None and first.tree is not None
    need_heads = first is not None and first.heads is not None
    pending = first
    views = ("deps",) * need_heads + ("trees",) * need_tree
    writers = {kind: SidecarWriter(f"{out_prefix}.{kind}", dtype=KIND_DTYPES[kind]) for kind in kinds_of_views(views)}
    ln = sentence_no = 0
    try:
        for ln, text in enumerate(_text_lines(text_file), 1):
            sents = []
            try:
                while pending is not None and pending.line == ln:
                    sents.append(pending)
                    pending = next(sentences, None)
            except ValueError as e:
                raise SidecarError(str(e)) from None
            if pending is not None and pending.line < ln:  # cannot happen: the reader checks the order
                raise SidecarError(f"{parse_file}: sentences out of line order at line {pending.line}")
            for s in sents:
                for attr, has, what in (("tree", need_tree, "constituency tree"),
                                        ("heads", need_heads, "dependency heads")):
                    if (getattr(s, attr) is not None) != has:
                        said = (f"has no {what} but the first sentence (line {first.line}) has" if has else
                                f"has {what} but the first sentence (line {first.line}) has none")
                        raise SidecarError(f"{parse_file}: the sentence for line {s.line} {said} (all or none must)")
                sentence_no += 1
                where = f"{parse_file}, sentence {sentence_no} (line {s.line} of {text_file})"
                try:
                    fault = gate_heads(s, where, strict)  # the chain fallback, counted, or refused under --strict
                except NotATree as e:
                    raise SidecarError(f"{e}; --strict refuses it") from None
                if fault is not None:
                    if not rep.not_trees or rep.not_trees[-1] != s.line:
                        rep.not_trees.append(s.line)
                    rep.first_not_tree = rep.first_not_tree or f"{where}: {fault}"
            pieces = text.split()
            try:
                where = f"{text_file}, line {ln}"
                subwords, sents, alignment, joins = route.line_words(
                    pieces, sents, where, line_spans(sents, f"{parse_file}, line {ln}"), strict)
                items = line_items(subwords, sents, f"{text_file}, line {ln}", parse_file, binarize, need_heads,
                                   need_tree)
            except ValueError as e:
                raise SidecarError(str(e)) from None
            if subwords.words != [w for s in sents for w in s.words]:
                rep.respelled.append(ln)
            if alignment is not None and alignment.crossing:
                rep.crossing += alignment.crossing
                rep.crossing_lines.append(ln)
            if joins is not None:
                rep.joined += joins.words
                rep.joined_lines.append(ln)
                rep.merged_sentences += joins.merged_sentences
                if joins.merged_sentences:
                    rep.merged_lines.append(ln)
            if not pieces:
                rep.empty.append(ln)
            if len(sents) > 1:
                rep.multi_sentence.append(ln)
            if any(s.failed for s in sents):
                rep.failed.append(ln)
            for kind, w in writers.items():
                w.add(items[kind])
            if OTHER_LABEL in items.get("label", ()):
                rep.other_labels.append(ln)
            rep.words += len(subwords.words)
        if pending is not None:  # (a value too large for its sidecar's type raises from the writer, naming the line)
            raise SidecarError(f"{parse_file}: a sentence is tied to line {pending.line} but the text has {ln} lines"
                               f" (without '# line' comments, sentence k belongs to line k) ({text_file})")
        rep.lines = ln
        if strict:
            for xs, what in ((rep.multi_sentence, "holds several sentences"), (rep.empty, "is empty"),
                             (rep.failed, "has a failed parse"),
                             (rep.respelled, "spells words differently from its parse")):
                if xs:
                    raise SidecarError(f"{text_file}, line {xs[0]} {what} ({len(xs)} line{'s' if len(xs) > 1 else ''} "
                                       "in all); --strict refuses it")
        for kind, w in writers.items():
            w.close()
            rep.kinds.append(kind)
    except BaseException as e:
        for w in writers.values():
            w.discard()
        if isinstance(e, UnicodeDecodeError):
            check_utf8(text_file, "BPE text")  # raises, naming the line and the byte
        if isinstance(e, ValueError) and not isinstance(e, SidecarError):  # a value its sidecar's type cannot hold
            raise SidecarError(f"{e} ({text_file}, {parse_file})") from None
        raise
    rep.seconds = time.perf_counter() - t0
    return rep
