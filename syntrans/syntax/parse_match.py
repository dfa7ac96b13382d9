"""Whether a parse is the parse of a line: its words compared with the line's tokens by content, not by count.

A parse of another sentence with as many words gives sidecars of the right lengths that describe another sentence's
syntax, and nothing downstream can see it: the words are what tie a parse to its line. A parser may respell a token
(``-LRB-`` for ``(``, a Moses escape undone): the caller passes the comparison that allows for it (``same``; e.g.
:func:`syntrans.parsing.imported.same_token`). No fairseq, no torch.
"""
from __future__ import annotations

import operator
from typing import Callable, Optional, Sequence

from .parsed import ParsedSentence
from .tree_checks import NotATree, gate_heads

Same = Callable[[str, str], bool]


def word_mismatch(tokens: Sequence[str], words: Sequence[str], same: Same = operator.eq) -> Optional[str]:
    """What differs between a line's ``tokens`` and its parse's ``words`` (all sentences' words in order), or None.
    ``same(word, token)`` says whether a parse word spells a token."""
    for k, (token, word) in enumerate(zip(tokens, words), 1):
        if not same(word, token):
            return (f"word {k} of the parse is {word!r} but token {k} of the line is {token!r}: expected the parse of "
                    "this line (its words are the line's tokens)")
    if len(tokens) != len(words):
        return (f"the parse has {len(words)} words but the line has {len(tokens)} tokens: expected the parse of this "
                "line (its words are the line's tokens)")
    return None


def line_parse_fault(tokens: Sequence[str], sentences: Sequence[ParsedSentence], same: Same = operator.eq
                     ) -> Optional[str]:
    """What keeps ``sentences`` from being a usable parse of the line ``tokens``, or None: a sentence whose parts
    disagree (:meth:`ParsedSentence.validate`), dependency heads that are no tree (a cycle, no root or several: the
    one gate, :func:`~syntrans.syntax.tree_checks.gate_heads`, here strict), words that are not the tokens
    (:func:`word_mismatch`)."""
    for k, s in enumerate(sentences, 1):
        if not isinstance(s, ParsedSentence):
            return f"sentence {k}: expected a ParsedSentence, found {type(s).__name__} {s!r:.60}"
        name = f"sentence {k} of the parse"
        try:
            s.validate(name)
        except ValueError as e:
            return str(e)
        try:
            gate_heads(s, name, strict=True)
        except NotATree as e:
            return str(e)
    return word_mismatch(tokens, [w for s in sentences for w in s.words], same)


__all__ = ["line_parse_fault", "word_mismatch"]
