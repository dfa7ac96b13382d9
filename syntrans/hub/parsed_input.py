"""The input of :meth:`syntrans.hub.Translator.translate_parsed` checked before anything is translated: token lists
that are lists (a ``str`` would be read character by character), one parse per line, and each parse the parse of its
line, matched by its words (:mod:`syntrans.syntax.parse_match`) with dependency heads that form a tree."""
from __future__ import annotations

from typing import Optional, Sequence

from ..parsing.imported import same_token
from ..syntax.parse_match import line_parse_fault
from .source_syntax import LineParse, as_sentences


def _same(lowercase: bool):
    """A parse word spells a token: as a parser respells it (:func:`same_token`), case aside when the model's input
    is lowercased."""
    if not lowercase:
        return same_token
    return lambda word, token: same_token(word, token) or same_token(word.lower(), token.lower())


def parse_fault(tokens: Sequence[str], parse: LineParse, char_spans: bool = False, lowercase: bool = False
                ) -> Optional[str]:
    """What keeps ``parse`` from being the parse of the line ``tokens`` (:func:`line_parse_fault`), or None; a line
    without a parse has none. On the raw-text route (``char_spans``) the parse's words are stanza's own tokens, placed
    by their character spans, which the sidecar builder checks: only the sentences themselves are checked here."""
    sentences = as_sentences(parse)
    if not sentences:
        return None
    if char_spans:
        return line_parse_fault([w for s in sentences for w in s.words], sentences)
    return line_parse_fault(tokens, sentences, _same(lowercase))


def check_parsed_input(token_lists, parsed_sentences, first_line: int = 1, name: str = "input",
                       char_spans: bool = False, lowercase: bool = False) -> None:
    """ValueError naming ``name`` and the line (numbered from ``first_line``) for the first line that is not a list of
    tokens, or whose parse is not its own (:func:`parse_fault`); and when there are not as many parses as lines."""
    for what, value in (("token_lists", token_lists), ("parsed_sentences", parsed_sentences)):
        if isinstance(value, (str, bytes)):
            raise ValueError(f"{name}: {what} must be a list with one entry per line, found a {type(value).__name__} "
                             f"({value[:40]!r})")
    if len(parsed_sentences) != len(token_lists):
        raise ValueError(f"{name}: {len(token_lists)} token lists but {len(parsed_sentences)} parses: expected one "
                         "parse (or None) per line")
    for k, (tokens, parse) in enumerate(zip(token_lists, parsed_sentences)):
        where = f"{name}, line {first_line + k}"
        if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
            found = f"a {type(tokens).__name__} ({str(tokens)[:40]!r})"
            raise ValueError(f"{where}: expected a list of tokens (str), found {found}; split a tokenized line into "
                             "its tokens first (line.split())")
        fault = parse_fault(tokens, parse, char_spans, lowercase)
        if fault:
            raise ValueError(f"{where}: {fault}")


__all__ = ["check_parsed_input", "parse_fault"]
