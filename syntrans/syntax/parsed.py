"""Parsed corpora: one ``ParsedSentence`` per sentence, read with stanza's own readers.

Formats read by :func:`read_parsed`:

* CoNLL-U, optionally with a ``# constituency = (ROOT …)`` comment per sentence (what stanza and
  ``syntrans-parse`` write). A ``# line = N`` comment (1-based) ties a sentence to line N of the text
  corpus; several sentences may share a line, and a line with no sentence is an empty line. Without
  any ``# line`` comment, sentence k belongs to line k. A ``# parse_failed = REASON`` comment marks a
  sentence whose parse is a fallback. Words are CoNLL-U syntactic words (multi-word-token ranges are
  read past; ``syntrans-parse`` never writes them), their IDs 1, 2, … in order. A word's MISC
  ``start_char=S|end_char=E`` is its character span in the line (the raw-text route,
  :mod:`.word_spans`): every word of a sentence has one or none does; a word inside a multi-word token
  without one of its own takes the range line's.
* PTB brackets, one tree per line or blank-line separated (no dependencies); tree k is line k.

Errors name the file and the line (a byte that is not UTF-8, a bad word ID, a bracket that does not close); whether
dependency heads form a tree is the reader's to check (:mod:`.tree_checks`).
"""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ..atomic_write import write_text
from .gc_pause import gc_paused
from .text_files import check_utf8
from .tree_checks import BracketError, head_range_fault, id_fault, is_word_id, tree_lines
from .trees import count_leaves, scan_brackets, stanza_tree_classes, tree_distances
from .word_spans import misc_span, span_misc

if TYPE_CHECKING:
    from stanza.models.constituency.parse_tree import Tree


@dataclass
class ParsedSentence:
    """One parsed sentence; ``heads`` are 1-based within the sentence (0 = root)."""

    words: List[str]
    heads: Optional[List[int]] = None
    deprels: Optional[List[str]] = None
    tree: Optional[Union["Tree", str]] = None  # stanza Tree or PTB bracket string
    line: Optional[int] = None  # 1-based line of the text corpus
    failed: Optional[str] = None  # why the parser failed, when this is a fallback parse
    #: each word's character span in its text line (the raw-text route: :mod:`.word_spans`), or None
    spans: Optional[List[Tuple[int, int]]] = None
    _dists: Optional[List[int]] = field(default=None, repr=False, compare=False)  # cached by validate()

    def distances(self, binarize: bool = False) -> List[int]:
        """:func:`~syntrans.syntax.trees.tree_distances` of this sentence's tree (cached for bracket strings)."""
        if self.tree is None:
            raise ValueError("this sentence has no constituency tree")
        if binarize or not isinstance(self.tree, str):
            return tree_distances(self.tree, binarize=binarize)
        if self._dists is None:
            self._dists = scan_brackets(self.tree)[1]
        return self._dists

    def validate(self, where: str = "") -> None:
        """Raise ValueError naming ``where`` when the parts of this sentence disagree."""
        n = len(self.words)
        if n == 0:
            raise ValueError(f"{where}: a sentence must have at least one word")
        if self.heads is not None:
            if len(self.heads) != n:
                raise ValueError(f"{where}: {n} words but {len(self.heads)} heads")
            fault = head_range_fault(self.heads, self.words)
            if fault:
                raise ValueError(f"{where}: {fault}")
        if self.deprels is not None and len(self.deprels) != n:
            raise ValueError(f"{where}: {n} words but {len(self.deprels)} dependency relations")
        if self.spans is not None and len(self.spans) != n:
            raise ValueError(f"{where}: {n} words but {len(self.spans)} character spans")
        if self.tree is not None:
            try:
                if isinstance(self.tree, str):  # one scan gives the leaf count and the distances
                    m, self._dists = scan_brackets(self.tree)
                else:
                    m = count_leaves(self.tree)
            except ValueError as e:
                raise ValueError(f"{where}: bad constituency tree: {e}") from None
            if m != n:
                raise ValueError(f"{where}: {n} words but the constituency tree has {m} leaves")


def _sniff_ptb(path: str) -> bool:
    try:
        with open(path, encoding="utf-8-sig") as f:
            for raw in f:
                s = raw.strip()
                if s:
                    return s.startswith("(")
    except UnicodeDecodeError:
        check_utf8(path, "a parsed corpus")  # raises, naming the line and the byte
        raise
    return False


def read_parsed(path: str) -> List[ParsedSentence]:
    """Read a parsed corpus (CoNLL-U with or without trees, or PTB brackets); see the module doc."""
    with gc_paused():
        try:
            return _read_parsed(path)
        except UnicodeDecodeError:
            check_utf8(path, "a parsed corpus")  # raises, naming the line and the byte
            raise


def read_bracket_file(path: str, one_per_line: bool = True) -> Tuple[List[int], list]:
    """(the line each tree starts on, stanza's trees) of a PTB bracket file; ValueError naming the file, and the line
    of unbalanced brackets (stanza names only the tree's first), or what stanza cannot read. ``one_per_line``: see
    :func:`~syntrans.syntax.tree_checks.tree_lines`."""
    with open(path, encoding="utf-8-sig") as f:
        text = f.read()
    try:
        starts = tree_lines(text, one_per_line)
    except BracketError as e:
        raise ValueError(f"{path}, line {e.line}: cannot read PTB brackets: {e.what}") from None
    try:
        trees = stanza_tree_classes()[1](text)
    except Exception as e:  # stanza raises ValueError subclasses with the position
        raise ValueError(f"{path}: cannot read PTB brackets: {e}") from e
    return starts, trees


def _read_parsed(path: str) -> List[ParsedSentence]:
    if not os.path.exists(path):
        raise FileNotFoundError(f"parsed corpus {path} does not exist")
    if _sniff_ptb(path):
        starts, trees = read_bracket_file(path)
        if len(trees) != len(starts):
            raise ValueError(f"{path}: cannot read PTB brackets: stanza reads {len(trees)} trees where the brackets "
                             f"hold {len(starts)}")
        out = [ParsedSentence(words=list(t.leaf_labels()), tree=t, line=k + 1) for k, t in enumerate(trees)]
        for k, s in enumerate(out):
            s.validate(f"{path}, tree {k + 1} (line {starts[k]})")
        return out
    return read_conllu(path)


_BLANK_LINES = re.compile(r"\n\s*\n")
#: characters read at a time by the streaming readers: memory stays flat whatever the corpus size
CHUNK_CHARS = 1 << 22


def _sentence_chunks(path: str, chunk_chars: int = CHUNK_CHARS) -> Iterator[Tuple[str, int]]:
    """(text, 1-based file line of its first line) pieces of a CoNLL-U file, each ending at a blank line (or the end
    of the file), about ``chunk_chars`` characters each, so that no sentence is cut."""
    line = 1
    buf = ""
    with open(path, encoding="utf-8-sig") as f:
        while True:
            more = f.read(chunk_chars)
            buf += more
            if not more:
                if buf:
                    yield buf, line
                return
            cut = buf.rfind("\n\n")
            if cut < 0:
                continue  # one sentence longer than a chunk: read on
            piece, buf = buf[:cut + 2], buf[cut + 2:]
            yield piece, line
            line += piece.count("\n")


def iter_conllu_blocks(path: str, chunk_chars: int = CHUNK_CHARS) -> Iterator[Tuple[List[List[str]], List[str]]]:
    """(word rows, comment lines) of each sentence of a CoNLL-U file, streamed (memory: one chunk of the file).

    Our own reader, working on large pieces of the file at once: stanza's line-by-line reader alone took
    longer than fairseq's whole binarization of the same corpus. A word line must have 10
    tab-separated fields; errors name the 1-based line of the file.
    """
    try:
        for text, first_line in _sentence_chunks(path, chunk_chars):
            def line_of(piece: str) -> int:
                return first_line + text.count("\n", 0, max(text.find(piece), 0))

            for chunk in _BLANK_LINES.split(text):
                lines = [x for x in chunk.split("\n") if x and not x.isspace()]
                notes = [x for x in lines if x[0] == "#"]
                rows = [x.split("\t") for x in lines if x[0] != "#"]
                for fields in rows:
                    if len(fields) != 10:
                        line = "\t".join(fields)
                        raise ValueError(f"{path}, line {line_of(line)}: a CoNLL-U word line needs 10 tab-separated "
                                         f"fields, found {len(fields)}: {line[:80]!r}")
                if rows:
                    yield rows, notes
                elif notes:
                    raise ValueError(f"{path}, line {line_of(notes[0])}: a sentence with comments but no word lines")
    except UnicodeDecodeError:
        check_utf8(path, "a parsed corpus")  # raises, naming the line and the byte
        raise


def conllu_blocks(path: str) -> Tuple[List[List[List[str]]], List[List[str]]]:
    """(word rows, comment lines) per sentence of a CoNLL-U file, like stanza's ``CoNLL.load_conll``
    (:func:`iter_conllu_blocks`, collected)."""
    blocks: List[List[List[str]]] = []
    comments: List[List[str]] = []
    for rows, notes in iter_conllu_blocks(path):
        blocks.append(rows)
        comments.append(notes)
    return blocks, comments


def _sentence(rows: List[List[str]], notes: List[str], where: str) -> ParsedSentence:
    line = failed = tree = None
    for c in notes:
        key, _, val = c.lstrip("#").partition("=")
        key = key.strip()
        if key == "line":
            try:
                line = int(val)
            except ValueError:
                raise ValueError(f"{where}: '# line =' must hold an integer, found {val.strip()!r}") from None
        elif key == "parse_failed":
            failed = val.strip() or "unknown"
        elif key == "constituency":
            tree = val.strip()
    spans = _row_spans(rows, where) if any(r[9] != "_" for r in rows) else None
    rows = [r for r in rows if is_word_id(r[0])]
    words = [r[1] for r in rows]
    heads = deprels = None
    if rows and all(r[6] != "_" for r in rows):
        try:
            heads = [int(r[6]) for r in rows]
        except ValueError:
            raise ValueError(f"{where}: heads must be integers, found {[r[6] for r in rows][:10]}") from None
        deprels = [r[7] for r in rows]
    s = ParsedSentence(words, heads, deprels, tree, line, failed, spans)
    s.validate(where)
    return s


def _row_spans(rows: List[List[str]], where: str) -> Optional[List[Tuple[int, int]]]:
    """The character spans of a sentence's words from their MISC (a word inside a multi-word token without its own:
    the range line's), or None when no row has one; a ValueError naming ``where`` when some words have none."""
    ranges = {}  # first word ID of a multi-word token → (last word ID, its span)
    spans: List[Optional[Tuple[int, int]]] = []
    ids: List[str] = []
    for r in rows:
        span = misc_span(r[9], f"{where}, word {r[0]}")
        if "-" in r[0] and r[0].replace("-", "").isdigit():
            a, b = r[0].split("-")
            ranges[int(a)] = (int(b), span)
        elif is_word_id(r[0]):
            spans.append(span)
            ids.append(r[0])
    if not any(x is not None for x in spans) and not any(v[1] is not None for v in ranges.values()):
        return None
    inside: dict = {}
    for a, (b, span) in ranges.items():
        for i in range(a, b + 1):
            inside[i] = span
    out = []
    for i, (word_id, span) in enumerate(zip(ids, spans)):
        span = span if span is not None else inside.get(int(word_id))
        if span is None:
            raise ValueError(f"{where}: word {word_id} has no character span (start_char/end_char in MISC, or its "
                             "multi-word token's) but other words of the sentence have: all or none must")
        out.append(span)
    return out


def head_fault(rows: List[List[str]]) -> Optional[Tuple[int, str]]:
    """(index in ``rows``, what is wrong) of the first word row whose integer HEAD lies outside 0..n (n: the
    sentence's words), or None."""
    words = [i for i, r in enumerate(rows) if is_word_id(r[0])]
    for i in words:
        head = rows[i][6] if len(rows[i]) > 6 else "_"
        if head.lstrip("-").isdigit() and not 0 <= int(head) <= len(words):
            return i, (f"the head {head} of word {rows[i][0]} ({rows[i][1]!r}) lies outside 0..{len(words)} (the "
                       f"sentence has {len(words)} words)")
    return None


def iter_conllu(path: str, chunk_chars: int = CHUNK_CHARS) -> Iterator[ParsedSentence]:
    """The sentences of a CoNLL-U file one by one, as :func:`read_conllu` reads them, in memory that does not grow
    with the file. Either every sentence carries ``# line =`` or none does (then sentence k is line k): the first
    sentence decides, a later one that differs is an error; line numbers start at 1 and never decrease."""
    with_line = None
    prev = 0
    for k, (rows, notes) in enumerate(iter_conllu_blocks(path, chunk_chars), 1):
        bad_id = id_fault([r[0] for r in rows])
        if bad_id is not None:
            raise ValueError(f"{path}, sentence {k}, line {_row_line(path, k - 1, bad_id[0])}: {bad_id[1]}")
        bad_head = head_fault(rows)
        if bad_head is not None:
            raise ValueError(f"{path}, sentence {k}, line {_row_line(path, k - 1, bad_head[0])}: {bad_head[1]}")
        s = _sentence(rows, notes, f"{path}, sentence {k}")
        if with_line is None:
            with_line = s.line is not None
        elif with_line != (s.line is not None):
            raise ValueError(f"{path}, sentence {k}: {'has no' if with_line else 'carries a'} '# line =' comment but "
                             f"sentence 1 {'does' if with_line else 'does not'}: all or none must")
        if not with_line:
            s.line = k
        if s.line < 1:
            raise ValueError(f"{path}, sentence {k}: '# line =' counts text lines from 1, found {s.line}")
        if s.line < prev:
            raise ValueError(f"{path}, sentence {k}: line numbers must not decrease, found {s.line} after {prev}")
        prev = s.line
        yield s


def read_conllu(path: str) -> List[ParsedSentence]:
    """Read CoNLL-U, keeping ``# line``, ``# parse_failed`` and ``# constituency`` trees (:func:`iter_conllu`).

    Trees stay bracket strings (``tree_distances`` scans them directly; ``as_tree`` parses one).
    Multi-word-token ranges (``7-8``) and empty nodes (``8.1``) are skipped; a head ``_`` means the
    sentence has no dependencies.
    """
    return list(iter_conllu(path))


def iter_parsed(path: str) -> Iterator[ParsedSentence]:
    """The sentences of a parsed corpus one by one: CoNLL-U streamed (:func:`iter_conllu`), PTB brackets read whole
    (:func:`read_parsed`)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"parsed corpus {path} does not exist")
    if _sniff_ptb(path):
        yield from read_parsed(path)
        return
    yield from iter_conllu(path)


def iter_by_line(sentences: Iterable[ParsedSentence], n_lines: int,
                 path: str = "parsed corpus") -> Iterator[List[ParsedSentence]]:
    """The sentences of each text line 1..n_lines in turn (a line with none: an empty list), from sentences in line
    order (:func:`group_by_line`, streamed); a ValueError for a sentence tied to a line past ``n_lines``."""
    it = iter(sentences)
    pending = next(it, None)
    for ln in range(1, n_lines + 1):
        group = []
        while pending is not None and pending.line == ln:
            group.append(pending)
            pending = next(it, None)
        yield group
    if pending is not None:
        raise ValueError(f"{path}: a sentence is tied to line {pending.line} but the text has {n_lines} lines"
                         " (without '# line' comments, sentence k belongs to line k)")


def _row_line(path: str, block: int, row: int) -> int:
    """The 1-based line of the file holding word row ``row`` of sentence ``block`` (both 0-based, as
    :func:`conllu_blocks` counts them: blank-line separated chunks with word rows; comments are no rows)."""
    with open(path, encoding="utf-8-sig") as f:
        lines = f.read().split("\n")
    k, r, in_chunk, has_rows = -1, 0, False, False
    for n, line in enumerate(lines, 1):
        if not line.strip():
            in_chunk = False
            continue
        if not in_chunk:
            in_chunk, has_rows, r = True, False, 0
        if line[0] == "#":
            continue
        if not has_rows:
            has_rows = True
            k += 1
        if k == block and r == row:
            return n
        r += 1
    return 0


def group_by_line(sentences: Sequence[ParsedSentence], n_lines: int, path: str = "parsed corpus") -> List[List[ParsedSentence]]:
    """Sentences of each text line (1..n_lines); a line with none is an empty line."""
    groups: List[List[ParsedSentence]] = [[] for _ in range(n_lines)]
    for s in sentences:
        if not 1 <= s.line <= n_lines:
            raise ValueError(f"{path}: a sentence is tied to line {s.line} but the text has {n_lines} lines"
                             " (without '# line' comments, sentence k belongs to line k)")
        groups[s.line - 1].append(s)
    return groups


def combine_views(have: ParsedSentence, new: ParsedSentence, where: str = "") -> ParsedSentence:
    """One sentence holding the views of two parses of it: the dependencies (heads, relations) of whichever has them
    (``have`` first), the tree of whichever has one (``have`` first). Both must be of the same words and line (a
    ValueError naming ``where`` otherwise); the result is marked failed when either was (reasons joined by ``; ``)."""
    if have.words != new.words or have.line != new.line:
        raise ValueError(f"{where}: the parses to combine differ: line {have.line} words {have.words[:8]} and line "
                         f"{new.line} words {new.words[:8]}")
    if have.spans is not None and new.spans is not None and have.spans != new.spans:
        raise ValueError(f"{where}: the parses to combine differ: line {have.line} character spans {have.spans[:8]} "
                         f"and {new.spans[:8]}")
    deps = have if have.heads is not None else new
    tree = have.tree if have.tree is not None else new.tree
    failed = "; ".join(r for r in (have.failed, new.failed) if r) or None
    out = ParsedSentence(list(have.words), deps.heads, deps.deprels, tree, have.line, failed, have.spans or new.spans)
    out.validate(where)
    return out


def only_views(s: ParsedSentence, deps: bool, trees: bool) -> ParsedSentence:
    """``s`` without the views not asked for (in place): no heads and relations unless ``deps``, no tree unless
    ``trees``; returns ``s``."""
    if not deps:
        s.heads = s.deprels = None
    if not trees:
        s.tree = None
        s._dists = None
    return s


def format_conllu(sentences: Iterable[ParsedSentence]) -> str:
    """CoNLL-U text with ``# line``, ``# parse_failed`` and ``# constituency`` comments (heads '_' if unknown), each
    word's character span in MISC where the sentence has spans."""
    buf = io.StringIO()
    for s in sentences:
        if s.line is not None:
            buf.write(f"# line = {s.line}\n")
        if s.failed:
            buf.write(f"# parse_failed = {s.failed}\n")
        if s.tree is not None:
            buf.write(f"# constituency = {' '.join(str(s.tree).split())}\n")
        buf.write(f"# text = {' '.join(s.words)}\n")
        for i, w in enumerate(s.words):
            head = "_" if s.heads is None else str(s.heads[i])
            rel = "_" if s.heads is None else ((s.deprels[i] if s.deprels else None) or ("root" if s.heads[i] == 0 else "dep"))
            misc = "_" if s.spans is None else span_misc(s.spans[i])
            buf.write(f"{i + 1}\t{w}\t_\t_\t_\t_\t{head}\t{rel}\t_\t{misc}\n")
        buf.write("\n")
    return buf.getvalue()


def write_conllu(path: str, sentences: Iterable[ParsedSentence]) -> None:
    """Write sentences as CoNLL-U (see :func:`format_conllu`), atomically via a temporary file."""
    write_text(path, format_conllu(sentences))
