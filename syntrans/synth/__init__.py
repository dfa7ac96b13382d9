"""A deterministic synthetic parallel corpus where syntax matters (``syntrans-synth``).

Source sentences come from a small recursive English-like grammar (:mod:`.grammar`), with gold
constituency trees and dependency heads; the target is a head-final, word-for-word transduction
of the source tree (:mod:`.transduce`) with its own gold tree and heads. Everything is drawn from
a ``random.Random`` seeded by the caller, so a seed fixes the corpus byte for byte.
"""
from __future__ import annotations

import hashlib
import os
import random
import time

from ..syntax.gc_pause import gc_paused
from ..syntax.parsed import ParsedSentence, write_conllu
from ..syntax.trees import as_tree
from .grammar import Grammar, Node, dependencies, to_ptb, words_of
from .lexicon import LEXICON
from .transduce import transduce_sentence, transduce_tree

__all__ = [
    "LEXICON", "Grammar", "Node", "generate_corpus", "parsed_source", "split_seed", "transduce_sentence",
    "transduce_tree", "write_corpus",
]


def parsed_source(root: Node) -> ParsedSentence:
    """The ``ParsedSentence`` (words, heads, deprels, stanza tree) of a grammar tree."""
    heads, rels = dependencies(root)
    return ParsedSentence(words=words_of(root), heads=heads, deprels=rels, tree=as_tree(to_ptb(root)))


def generate_corpus(n: int, seed: int, min_len: int = 3, max_len: int = 40) -> list[tuple[ParsedSentence, ParsedSentence]]:
    """``n`` (source, target) pairs drawn with ``random.Random(seed)``; ``line`` is left None."""
    grammar = Grammar(random.Random(seed))
    pairs = []
    with gc_paused():
        for _ in range(n):
            src = parsed_source(grammar.sentence(min_len, max_len))
            pairs.append((src, transduce_sentence(src)))
    return pairs


def split_seed(seed: int, split: str) -> int:
    """A sub-seed for one split, so that splits differ while staying fixed by ``seed``."""
    digest = hashlib.sha256(f"syntrans-synth:{seed}:{split}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _write_text(path: str, sentences: list[ParsedSentence]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(" ".join(s.words) + "\n" for s in sentences)


def write_corpus(out_dir: str, sizes: dict[str, int], seed: int, src: str = "src", tgt: str = "tgt",
                 min_len: int = 3, max_len: int = 40) -> list[dict]:
    """Write ``{split}.{lang}`` and ``{split}.{lang}.conllu`` for each split in ``sizes``.

    Each split uses its own sub-seed (:func:`split_seed`). Returns one summary per split: ``split``,
    ``sentences``, ``mean_len`` (source words), ``overlap`` (source sentences of this split that
    also occur in another split) and ``seconds`` (generation and writing).
    """
    if src == tgt:
        raise ValueError(f"source and target language names must differ, both are {src!r}")
    os.makedirs(out_dir, exist_ok=True)
    summaries, texts = [], {}
    for split, n in sizes.items():
        start = time.perf_counter()
        pairs = generate_corpus(n, split_seed(seed, split), min_len, max_len)
        for k, (s, t) in enumerate(pairs, 1):
            s.line = t.line = k
        for lang, side in ((src, 0), (tgt, 1)):
            sentences = [p[side] for p in pairs]
            base = os.path.join(out_dir, f"{split}.{lang}")
            _write_text(base, sentences)
            write_conllu(base + ".conllu", sentences)
        texts[split] = [" ".join(s.words) for s, _ in pairs]
        mean = sum(len(s.words) for s, _ in pairs) / max(1, n)
        summaries.append({"split": split, "sentences": n, "mean_len": mean, "seconds": time.perf_counter() - start})
    for summary in summaries:
        others = {t for split, lines in texts.items() if split != summary["split"] for t in lines}
        summary["overlap"] = sum(t in others for t in texts[summary["split"]])
    return summaries
