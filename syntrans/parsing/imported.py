"""Parses made by another parser (the papers' own: Stanford CoreNLP, …) read into syntrans' parsed corpus.

The papers parse with other parsers than stanza (``syntrans.reproduce.published_data`` records each one's). Whoever
has the paper's parser runs it on syntrans' tokenized text (``OUT/tok/{split}.{lang}``, one segment per line) and
hands its output over; :func:`import_parses` reads it into the :class:`~syntrans.syntax.parsed.ParsedSentence` of
each line, which :func:`import_file` writes as syntrans' CoNLL-U (``# line``, ``# constituency``; the format of
:func:`~syntrans.syntax.parsed.format_conllu`), the file every later step reads. ``syntrans-prepare --parser
imported`` does it for every split and side (:func:`import_split`).

What is read:

* constituency: PTB brackets (:func:`read_ptb`), e.g. CoreNLP's ``-outputFormat penn``: one tree per line or
  pretty-printed over several lines, with or without blank lines between trees. A root without a label
  (``( (S …) )``, the Penn Treebank's) is labelled ``ROOT``, as CoreNLP labels it; empty elements (``-NONE-``
  preterminals, the treebank's traces) are removed with the phrases left empty by it; function tags (``NP-SBJ``)
  are kept as written. Leaves escaped as the treebank escapes them (``-LRB-`` … ``-RCB-``) are read as the
  brackets they stand for (stanza's tree reader).
* dependencies (:func:`read_dependencies`): CoNLL-U or CoNLL-X (10 columns, HEAD in column 7, DEPREL in 8; CoNLL-U
  multi-word-token ranges and empty nodes are skipped, their syntactic words kept) or CoreNLP's ``-outputFormat
  conll`` (7 columns: ID, FORM, LEMMA, POS, NER, HEAD, DEPREL). The labels are kept as written, Stanford
  Dependencies or UD: the heads are what the attention mechanisms read; +S&H's fixed label inventory reads UD v1
  and v2 names (:mod:`syntrans.syntax.deprels`), and a Stanford Dependencies label that UD lacks (``prep``,
  ``pobj``, ``nn``, …) becomes its ``other`` id.

How sentences meet lines: a parser may split a line into several sentences (CoreNLP without
``-ssplit.eolonly``); the sentences are assigned to the lines in order, each line taking sentences until their
words are as many as its tokens (an empty line takes none). A sentence that would straddle two lines, or words left
over at either end, is an error naming the file, the sentence and the line. With both a tree file and a dependency
file, sentence k of one must have the words of sentence k of the other.

Spelling: a parser respells some tokens (``(`` as ``-LRB-``, ``"`` as `````` or ``''``, ``/`` as ``\\/``, and the
Moses escapes of syntrans' tokenized text, ``&apos;``, ``&quot;``, ``&amp;`` …, as the characters). A word and its
token must be the same after undoing these (:func:`same_token`); the parse then takes the token's spelling, so the
words of a line are exactly its tokens, as everywhere in syntrans. Any other difference is an error naming the
file, sentence, word and both spellings.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from ..syntax.parsed import ParsedSentence, read_bracket_file, write_conllu

#: the parser name of ``syntrans-prepare --parser imported`` and the folder (under the prepared corpus) it reads
IMPORTED = "imported"
IMPORT_DIR = "parse-import"
#: the file names looked for, per split and language: trees, then dependencies (the first that exists)
TREE_SUFFIXES = (".ptb", ".penn", ".tree")
DEP_SUFFIXES = (".conllu", ".conllx", ".conll")

_PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "``": '"',
                "''": '"', "`": "'"}
_MOSES_ESCAPES = {"&amp;": "&", "&#124;": "|", "&lt;": "<", "&gt;": ">", "&apos;": "'", "&quot;": '"', "&#91;": "[",
                  "&#93;": "]"}
_MOSES_RE = re.compile("|".join(map(re.escape, _MOSES_ESCAPES)))


def _plain(word: str) -> str:
    """A word or token with the parsers' and Moses' escapes undone (module docs, Spelling)."""
    word = _MOSES_RE.sub(lambda m: _MOSES_ESCAPES[m.group(0)], word)
    word = _PTB_ESCAPES.get(word, word)
    for escaped, plain in _PTB_ESCAPES.items():
        if escaped.startswith("-"):
            word = word.replace(escaped, plain)  # inside a word too (GUM: Spouse-LRB-s-RRB-)
    return word.replace("\\/", "/").replace("\\*", "*").replace("“", '"').replace("”", '"')


def same_token(word: str, token: str) -> bool:
    """Whether a parser's ``word`` spells the text's ``token`` (module docs, Spelling)."""
    return word == token or _plain(word) == _plain(token)


# ------------------------------------------------------------------------------------------------ the readers

def read_ptb(path: str) -> List[ParsedSentence]:
    """The trees of a PTB bracket file (module docs), one ParsedSentence each (words and tree; no heads)."""
    from stanza.models.constituency.parse_tree import Tree

    _, trees = read_bracket_file(path, one_per_line=False)
    out = []
    for k, tree in enumerate(trees, 1):
        tree = _prune_empty(tree, Tree)
        if tree is None:
            raise ValueError(f"{path}, tree {k}: only empty elements (-NONE-); expected a tree with words")
        if not tree.label:
            tree = Tree(label="ROOT", children=tree.children)
        words = list(tree.leaf_labels())
        if len(tree.children) == 0 or not words:
            raise ValueError(f"{path}, tree {k}: a tree without words")
        out.append(ParsedSentence(words=words, tree=tree))
    return out


def _prune_empty(node, Tree):
    """The tree without ``-NONE-`` preterminals and the phrases they leave empty (None if nothing is left)."""
    if not node.children:
        return node
    if node.label == "-NONE-":
        return None
    kids = [k for k in (_prune_empty(c, Tree) for c in node.children) if k is not None]
    if not kids:
        return None
    return Tree(label=node.label, children=kids)


def read_dependencies(path: str) -> List[ParsedSentence]:
    """The sentences of a CoNLL-U, CoNLL-X or CoreNLP conll file (module docs): words, heads and labels."""
    lines = Path(path).read_text(encoding="utf-8-sig").split("\n")
    out: List[ParsedSentence] = []
    rows: List[Tuple[int, List[str]]] = []

    def close():
        if not rows:
            return
        where = f"{path}, sentence {len(out) + 1} (line {rows[0][0]})"
        words, heads, labels = [], [], []
        for n, cols in rows:
            ident = cols[0]
            if "-" in ident or "." in ident:  # a multi-word token's range, an empty node: not a syntactic word
                continue
            if not ident.isdigit() or int(ident) != len(words) + 1:
                raise ValueError(f"{path}, line {n}: expected word number {len(words) + 1}, found {ident!r}")
            head_col, rel_col = (6, 7) if len(cols) == 10 else (5, 6)
            if not cols[head_col].isdigit():
                raise ValueError(f"{path}, line {n}: the HEAD column holds {cols[head_col]!r}; expected the number of "
                                 "the head word (0 for the root): a dependency parse")
            words.append(cols[1])
            heads.append(int(cols[head_col]))
            labels.append(cols[rel_col])
        sentence = ParsedSentence(words=words, heads=heads, deprels=labels)
        sentence.validate(where)
        out.append(sentence)
        rows.clear()

    for n, line in enumerate(lines, 1):
        if not line.strip():
            close()
            continue
        if line.startswith("#"):
            continue
        cols = line.rstrip("\r").split("\t")
        if len(cols) not in (10, 7):
            raise ValueError(f"{path}, line {n}: a word line has {len(cols)} tab-separated columns; expected 10 "
                             "(CoNLL-U, CoNLL-X) or 7 (CoreNLP's -outputFormat conll)")
        rows.append((n, cols))
    close()
    return out


# ------------------------------------------------------------------------------------------------ the lines

def _check_words(words: Sequence[str], tokens: Sequence[str], where: str) -> None:
    for i, (w, t) in enumerate(zip(words, tokens), 1):
        if not same_token(w, t):
            raise ValueError(f"{where}: word {i} is {w!r} but the text's token is {t!r}; expected the parse of the "
                             "tokenized text, one word per token (the parser's escapes -LRB-, ``, \\/ and the Moses "
                             "escapes &apos; … are accepted)")


def _pair(trees: Optional[List[ParsedSentence]], deps: Optional[List[ParsedSentence]], tree_file, dep_file):
    """One ParsedSentence per sentence from the tree and dependency readings (either may be None)."""
    if trees is None:
        return deps
    if deps is None:
        return trees
    if len(trees) != len(deps):
        raise ValueError(f"{tree_file} has {len(trees)} trees but {dep_file} has {len(deps)} sentences; expected the "
                         "two parses of the same sentences")
    out = []
    for k, (t, d) in enumerate(zip(trees, deps), 1):
        if len(t.words) != len(d.words):
            raise ValueError(f"{tree_file}, tree {k} has {len(t.words)} words but {dep_file}, sentence {k} has "
                             f"{len(d.words)}; expected the same sentence")
        _check_words(t.words, d.words, f"{tree_file}, tree {k} against {dep_file}, sentence {k}")
        out.append(ParsedSentence(words=d.words, heads=d.heads, deprels=d.deprels, tree=t.tree))
    return out


def _retokenized(sentence: ParsedSentence, tokens: List[str], line: int) -> ParsedSentence:
    """The sentence spelled with the text's tokens (its tree's leaves too), tied to ``line``."""
    tree = sentence.tree
    if tree is not None:
        leaves = iter(tokens)
        stack = [tree]
        while stack:  # the leaves in order, relabelled (a preorder with reversed children visits them left to right)
            node = stack.pop()
            if not node.children:
                node.label = next(leaves)
            else:
                stack.extend(reversed(node.children))
    return ParsedSentence(words=list(tokens), heads=sentence.heads, deprels=sentence.deprels, tree=tree, line=line)


def import_parses(text_file: str, tree_file: Optional[str] = None, dep_file: Optional[str] = None
                  ) -> List[ParsedSentence]:
    """The parsed corpus of the tokenized ``text_file`` from another parser's output (module docs): a PTB tree file,
    a dependency file, or both. ValueError naming the file, sentence and line where they do not fit the text."""
    if tree_file is None and dep_file is None:
        raise ValueError(f"{text_file}: no parse to import; expected a PTB tree file, a dependency file or both")
    trees = read_ptb(tree_file) if tree_file else None
    deps = read_dependencies(dep_file) if dep_file else None
    sentences = _pair(trees, deps, tree_file, dep_file)
    source = " and ".join(str(f) for f in (tree_file, dep_file) if f)
    lines = Path(text_file).read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: List[ParsedSentence] = []
    k = 0
    for n, line in enumerate(lines, 1):
        tokens = line.split()
        at = 0
        while at < len(tokens):
            if k >= len(sentences):
                raise ValueError(f"{source}: the parses end at line {n} of {text_file} (its tokens {at + 1}… have no "
                                 f"parse); expected parses of every line")
            s = sentences[k]
            if at + len(s.words) > len(tokens):
                raise ValueError(f"{source}, sentence {k + 1}: its {len(s.words)} words run past the end of line {n} of "
                                 f"{text_file} ({len(tokens) - at} tokens left on the line); expected each sentence "
                                 "within one line (parse with one sentence per line, e.g. CoreNLP -ssplit.eolonly)")
            piece = tokens[at:at + len(s.words)]
            _check_words(s.words, piece, f"{source}, sentence {k + 1} (line {n} of {text_file})")
            out.append(_retokenized(s, piece, n))
            at += len(s.words)
            k += 1
    if k < len(sentences):
        raise ValueError(f"{source}: {len(sentences) - k} sentences left after the {len(lines)} lines of {text_file}; "
                         "expected the parses of exactly that text")
    return out


def import_file(text_file: str, out_file: str, tree_file: Optional[str] = None,
                dep_file: Optional[str] = None) -> Tuple[int, int]:
    """Write the parsed corpus of :func:`import_parses` as syntrans' CoNLL-U; (lines, sentences)."""
    sentences = import_parses(text_file, tree_file, dep_file)
    write_conllu(str(out_file), sentences)
    lines = sum(1 for _ in open(text_file, encoding="utf-8"))
    return lines, len(sentences)


def import_files(folder: Path, split: str, lang: str) -> Tuple[Optional[Path], Optional[Path]]:
    """The tree and dependency files of one split and language in ``folder`` (the first suffix that exists)."""
    def first(suffixes):
        return next((folder / f"{split}.{lang}{s}" for s in suffixes if (folder / f"{split}.{lang}{s}").is_file()), None)

    return first(TREE_SUFFIXES), first(DEP_SUFFIXES)


def missing_message(folder: Path, tok_dir: Path, wanted: Sequence[Tuple[str, str]]) -> str:
    """What ``--parser imported`` found missing, and how to make it (CoreNLP's command)."""
    names = "\n".join(f"  {folder}/{split}.{lang}.ptb and/or {folder}/{split}.{lang}.conllu   (parses of "
                      f"{tok_dir}/{split}.{lang})" for split, lang in wanted)
    return (f"--parser {IMPORTED}: no parse to import for\n{names}\n"
            f"Parse each tokenized file with your parser, one sentence per line, and put its output there: PTB trees "
            f"({', '.join(TREE_SUFFIXES)}) and/or dependencies ({', '.join(DEP_SUFFIXES)}: CoNLL-U, CoNLL-X or "
            "CoreNLP's conll). With Stanford CoreNLP, e.g.:\n"
            "  java edu.stanford.nlp.pipeline.StanfordCoreNLP -annotators tokenize,ssplit,pos,lemma,parse "
            "-tokenize.whitespace true -ssplit.eolonly true -outputFormat penn -file TOK -outputDirectory DIR\n"
            "  (then -annotators tokenize,ssplit,pos,lemma,depparse -outputFormat conllu for the dependencies; "
            "-tokenize.language de and a German model for German)\n"
            "and rename DIR/TOK.penn, DIR/TOK.conllu to the names above. Then run the same command again: the "
            "steps before the parse are skipped.")
