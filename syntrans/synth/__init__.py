"""A deterministic synthetic parallel corpus where syntax matters (``syntrans-synth``).

Source sentences come from a small recursive English-like grammar (:mod:`.grammar`), with gold
constituency trees and dependency heads; the target is a head-final, word-for-word transduction
of the source tree (:mod:`.transduce`) with its own gold tree and heads. Everything is drawn from
a ``random.Random`` seeded by the caller, so a seed fixes the corpus byte for byte.
"""
from __future__ import annotations

import gc
import hashlib
import os
import random
import time

from ..syntax.gc_pause import gc_paused
from ..syntax.parsed import ParsedSentence, format_conllu
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


def _draw(grammar: Grammar, n: int, min_len: int, max_len: int) -> list[tuple[ParsedSentence, ParsedSentence]]:
    pairs = []
    for _ in range(n):
        src = parsed_source(grammar.sentence(min_len, max_len))
        pairs.append((src, transduce_sentence(src)))
    return pairs


def generate_corpus(n: int, seed: int, min_len: int = 3, max_len: int = 40) -> list[tuple[ParsedSentence, ParsedSentence]]:
    """``n`` (source, target) pairs drawn with ``random.Random(seed)``; ``line`` is left None."""
    grammar = Grammar(random.Random(seed))
    with gc_paused():
        return _draw(grammar, n, min_len, max_len)


#: pairs generated and written at a time by :func:`write_corpus` (its memory does not grow with the corpus)
CHUNK_PAIRS = 20000


def split_seed(seed: int, split: str) -> int:
    """A sub-seed for one split, so that splits differ while staying fixed by ``seed``."""
    digest = hashlib.sha256(f"syntrans-synth:{seed}:{split}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def write_corpus(out_dir: str, sizes: dict[str, int], seed: int, src: str = "src", tgt: str = "tgt",
                 min_len: int = 3, max_len: int = 40) -> list[dict]:
    """Write ``{split}.{lang}`` and ``{split}.{lang}.conllu`` for each split in ``sizes``.

    Each split uses its own sub-seed (:func:`split_seed`); its pairs are those of :func:`generate_corpus`, drawn and
    written :data:`CHUNK_PAIRS` at a time, so that any size fits in memory. Returns one summary per split:
    ``split``, ``sentences``, ``mean_len`` (source words), ``overlap`` (source sentences of this split that also
    occur in another split) and ``seconds`` (generation and writing).
    """
    if src == tgt:
        raise ValueError(f"source and target language names must differ, both are {src!r}")
    os.makedirs(out_dir, exist_ok=True)
    summaries = []
    for split, n in sizes.items():
        start = time.perf_counter()
        grammar = Grammar(random.Random(split_seed(seed, split)))
        paths = {lang: os.path.join(out_dir, f"{split}.{lang}") for lang in (src, tgt)}
        words = done = 0
        with open(paths[src], "w", encoding="utf-8", newline="\n") as src_text, \
                open(paths[tgt], "w", encoding="utf-8", newline="\n") as tgt_text, \
                open(paths[src] + ".conllu", "w", encoding="utf-8", newline="\n") as src_parse, \
                open(paths[tgt] + ".conllu", "w", encoding="utf-8", newline="\n") as tgt_parse:
            while done < n:
                with gc_paused():  # per chunk: the trees' reference cycles are collected between chunks
                    pairs = _draw(grammar, min(CHUNK_PAIRS, n - done), min_len, max_len)
                for k, (s, t) in enumerate(pairs, done + 1):
                    s.line = t.line = k
                for side, text, parse in ((0, src_text, src_parse), (1, tgt_text, tgt_parse)):
                    sentences = [p[side] for p in pairs]
                    text.writelines(" ".join(x.words) + "\n" for x in sentences)
                    parse.write(format_conllu(sentences))
                words += sum(len(s.words) for s, _ in pairs)
                done += len(pairs)
                del pairs
                gc.collect()
        summaries.append({"split": split, "sentences": n, "mean_len": words / max(1, n),
                          "seconds": time.perf_counter() - start})
    overlaps = _overlaps({split: os.path.join(out_dir, f"{split}.{src}") for split in sizes}, sizes)
    for summary in summaries:
        summary["overlap"] = overlaps[summary["split"]]
    return summaries


def _overlaps(files: dict[str, str], sizes: dict[str, int]) -> dict[str, int]:
    """Per split, how many of its lines occur in another split's file. The largest split is streamed, the others held
    (valid and test: small)."""
    def lines(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield line.rstrip("\n")

    largest = max(sizes, key=lambda s: sizes[s])
    small = {s: list(lines(p)) for s, p in files.items() if s != largest}
    sets = {s: set(x) for s, x in small.items()}
    union = set().union(*sets.values())
    out, in_largest = {largest: 0}, set()
    for line in lines(files[largest]):
        if line in union:
            out[largest] += 1
            in_largest.add(line)
    for s, xs in small.items():
        others = in_largest.union(*(sets[o] for o in sets if o != s))
        out[s] = sum(x in others for x in xs)
    return out
