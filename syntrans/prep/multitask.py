"""The +MULTI-TASK baseline's data: translation pairs and source-parse pairs, told apart by a task tag.

Bugliarello & Okazaki 2020, App. A (+MULTI-TASK, their implementation of Currey & Heafield 2019): "Each source
sentence is first duplicated and associated its linearized parse as target sequence. To distinguish between the
two tasks, a special tag indicating the desired task is prepended and appended to each source sentence. Finally,
parsing and translation training data is shuffled together." The model is a standard Transformer (§3.1).

So every training line gives two pairs, ``T src T → tgt`` and ``P src P → linearised parse of src`` (T, P: the
tags :data:`TRANSLATE_TAG` and :data:`PARSE_TAG`), and the 2N pairs are shuffled with a fixed seed
(:data:`MULTITASK_SEED`); validation and test lines get the translation tag only, in their order (the test
reference stays line-aligned).

The parse target (:mod:`syntrans.syntax.linearize`; the recipe's ``multitask_target``):

* ``constituency`` (the default): the authors' own, from their released preparation
  (github.com/e-bug/pascal, ``scripts/bpe_lin_parses.py``): the CoreNLP constituency tree with its words and
  part-of-speech brackets removed, an unlexicalized skeleton such as ``(ROOT (S (NP ) (VP ) ) )``;
* ``dependency`` (ours, a labelled option): bracketed heads with labels over the source's own BPE pieces, so a
  parse target's words are segmented exactly like the source they copy; with separate BPE the target dictionary
  thus also holds the source's pieces, as the decoder must write them.

In both, brackets and labels are whole tokens. Ours, where the paper is silent:

* the tags are added after BPE, so BPE never splits them, and are written like XML tags, which Moses-tokenized
  (escaped) text never holds; a tag found in the corpus is an error;
* the seed (1), and the order of the pairs before shuffling (line by line, translation pair first).

:func:`multitask_lines` is the pure part; :func:`write_multitask` reads ``bpe/`` and ``parse/`` and writes
``multitask/{split}.{lang}``, which the binarize step hands to fairseq without sidecars (a plain Transformer needs
none, and the tags would offset them).
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

from ..atomic_write import write_text
from .corpora import SPLITS
from .errors import PrepError

TRANSLATE_TAG = "<translate>"
PARSE_TAG = "<parse>"
TAGS = (TRANSLATE_TAG, PARSE_TAG)
#: the shuffle's seed (ours: the paper gives none)
MULTITASK_SEED = 1
#: the view of the source parse (:mod:`syntrans.data.parse_views`) each parse target is written from: the skeleton from the
#: constituency tree, the bracketing from the dependency heads and labels
TARGET_VIEW = {"constituency": "trees", "dependency": "deps"}


def tagged(tag: str, line: str) -> str:
    """``line`` with ``tag`` prepended and appended (App. A)."""
    return f"{tag} {line} {tag}" if line.strip() else f"{tag} {tag}"


def check_no_tags(lines: Sequence[str], where: str) -> None:
    """PrepError naming the line when a token of ``lines`` is a task tag (the tags must mean only the task)."""
    for n, line in enumerate(lines, 1):
        for tok in line.split():
            if tok in TAGS:
                raise PrepError(f"{where}, line {n}: holds the token {tok!r}, which the multi-task data uses as its "
                                f"task tag; expected text without {' or '.join(TAGS)}")


def multitask_lines(src: Sequence[str], tgt: Sequence[str], parses: Sequence[Sequence[str]] | None,
                    seed: int = MULTITASK_SEED) -> tuple[list[str], list[str]]:
    """(source lines, target lines) of the multi-task data of one split (module docs).

    ``src``/``tgt``: the split's BPE'd lines; ``parses``: the linearised parse (tokens) of each source line for the
    training split, None for validation and test (translation pairs only, order kept). Training: 2N pairs, the
    translation and parse pair of each line, shuffled with ``random.Random(seed)``."""
    if len(src) != len(tgt):
        raise PrepError(f"multi-task data: {len(src)} source lines but {len(tgt)} target lines; expected equal counts")
    pairs = [(tagged(TRANSLATE_TAG, s), t) for s, t in zip(src, tgt)]
    if parses is None:
        return [p[0] for p in pairs], [p[1] for p in pairs]
    if len(parses) != len(src):
        raise PrepError(f"multi-task data: {len(src)} source lines but {len(parses)} parses; expected one per line")
    both = []
    for (s, t), line, parse in zip(pairs, src, parses):
        both += [(s, t), (tagged(PARSE_TAG, line), " ".join(parse))]
    order = list(range(len(both)))
    random.Random(seed).shuffle(order)
    return [both[k][0] for k in order], [both[k][1] for k in order]


def _read(path: Path) -> list[str]:
    if not path.is_file():
        raise PrepError(f"multi-task data: expected {path}, found nothing; run again with --force")
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _write(path: Path, lines: list[str]) -> None:
    write_text(path, "".join(line + "\n" for line in lines))


def linearized_parses(src_lines: Sequence[str], parse_file: Path, marker: str | None,
                      target: str = "constituency") -> list[list[str]]:
    """The parse target of every line of ``src_lines`` (BPE'd; ``marker`` None: words) from ``parse_file`` (CoNLL-U
    of the tokenized lines): the constituency skeleton (``target`` "constituency") or the dependency bracketing
    ("dependency"); PrepError naming the file and line for a parse that does not fit."""
    from ..syntax.linearize import TARGETS, linearize_line, skeleton_line  # lazy: syntrans.syntax.parsed imports stanza
    from ..syntax.parsed import group_by_line, read_parsed

    if target not in TARGETS:
        raise PrepError(f"multi-task data: the parse target is one of {', '.join(TARGETS)}, found {target!r}")
    line_target = skeleton_line if target == "constituency" else linearize_line
    try:
        groups = group_by_line(read_parsed(str(parse_file)), len(src_lines), str(parse_file))
        return [line_target(sents, line.split(), marker, f"{parse_file} for line {n}")
                for n, (line, sents) in enumerate(zip(src_lines, groups), 1)]
    except (ValueError, FileNotFoundError) as e:
        raise PrepError(f"multi-task data: {e}") from None


def write_multitask(bpe_dir: Path, parse_dir: Path, out_dir: Path, src: str, tgt: str, words: bool = False,
                    seed: int = MULTITASK_SEED, log: Callable[[str], None] = print,
                    target: str = "constituency") -> dict:
    """Write ``out_dir/{split}.{src,tgt}`` from ``bpe_dir/{split}.{lang}`` and ``parse_dir/train.{src}.conllu``
    (``words``: the text has no BPE; ``target``: the parse target, :func:`linearized_parses`); returns {split:
    pairs written}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for split in SPLITS:
        s_lines, t_lines = _read(bpe_dir / f"{split}.{src}"), _read(bpe_dir / f"{split}.{tgt}")
        check_no_tags(s_lines, str(bpe_dir / f"{split}.{src}"))
        check_no_tags(t_lines, str(bpe_dir / f"{split}.{tgt}"))
        parses = None
        if split == "train":
            parses = linearized_parses(s_lines, parse_dir / f"train.{src}.conllu", None if words else "@@", target)
        s_out, t_out = multitask_lines(s_lines, t_lines, parses, seed)
        _write(out_dir / f"{split}.{src}", s_out)
        _write(out_dir / f"{split}.{tgt}", t_out)
        sizes[split] = len(s_out)
    log(f"multitask: {out_dir}/{{split}}.{{{src},{tgt}}}: train {sizes['train']} pairs (translation and {target} "
        f"parse, "
        f"shuffled, seed {seed}), valid {sizes['valid']}, test {sizes['test']} (tag {TRANSLATE_TAG})")
    return sizes
