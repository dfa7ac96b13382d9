"""fairseq-generate's syntax lines (``--print-syntax``): the parse every DBSA/LISA layer predicted, per sentence,
and the word-level UAS of those parses against the split's gold parses, after the last batch.

Lines (tab-separated, in lines of their own, so that fairseq's S-/T-/H-/D-/P- lines and ``--remove-bpe`` are left
alone)::

    SH-<id>\t<kind>@<layer>\t<h_0 … h_{n-1}>   the source: per subword (EOS excluded) its predicted parent,
                                               a 0-based subword position, −1 = EOS
    TH-<id>\t<kind>@<layer>\t<h_0 … h_{m-1}>   each hypothesis (nbest order, like H-): per subword (EOS excluded)
                                               its predicted parent from the decoder's DBSA heads, −1 = BOS

Like fairseq's own A- lines they give subword positions, also under ``--remove-bpe``. A batch's lines come
before that batch's S- lines; read them by id. The summary (one line per parse)::

    Syntax test: source dbsa@0 word UAS = 91.23 (1234/1353 words)
    Syntax test: target dbsa@0 word UAS = 40.12 (…), on leftward arcs and roots = 80.20 (…)

The words' heads are read from the subword parents with the convention the heads were trained on (chain for DBSA,
first for LISA: :func:`syntrans.syntax.heads.word_heads`). The target UAS needs the reference decoded
teacher-forced (``--score-reference``); a causal head can only find heads to its left (or the word itself, a
root), hence the second figure.
"""
from __future__ import annotations

from typing import Dict, List, Optional, TextIO, Tuple

import numpy as np

from ..modules.parse_heads import ParseLayer
from ..syntax.heads import attachment, word_heads


class SyntaxPrinter:
    """Writes the SH-/TH- lines of each batch (:meth:`batch`) and the UAS summary (:meth:`finish`) to ``stream``.

    ``parses``: the model's parse layers; ``dataset``: the split (its ``src_side``/``tgt_side`` sidecars hold
    the gold ``word``/``head``, where present); ``teacher_forced``: the hypotheses are the references
    (``--score-reference``), so the target parse can be scored; ``nbest``: hypotheses printed per sentence."""

    def __init__(self, parses: List[ParseLayer], dataset, stream: TextIO, subset: str, teacher_forced: bool,
                 nbest: int = 1, close: bool = False):
        self.parses, self.stream, self.subset = parses, stream, subset
        self.teacher_forced, self.nbest, self.close = teacher_forced, max(1, int(nbest)), close
        self.src_gold = self._gold(getattr(dataset, "src_side", None) or {})
        self.tgt_gold = self._gold(getattr(dataset, "tgt_side", None) or {}) if teacher_forced else None
        self.counts: Dict[Tuple[str, str], List[int]] = {}  # (side, tag) → [hits, words, hits leftward, leftward]
        self.finished = False

    @staticmethod
    def _gold(side) -> Optional[Tuple[object, object]]:
        return (side["word"], side["head"]) if "word" in side and "head" in side else None

    def batch(self, sample, hypos) -> None:
        """The lines of one batch: ``sample`` as the task's dataset collates it, ``hypos`` as the recording
        generators return them (``hypo["syntax"]``), per sentence in the sample's order."""
        out = []
        for b, sid in enumerate(sample["id"].tolist()):
            best = hypos[b][: self.nbest]
            syntax = best[0]["syntax"]
            for tag, heads in syntax.source.items():
                out.append(f"SH-{sid}\t{tag}\t{_ints(heads)}\n")
                self._score("src", tag, sid, heads, self.src_gold)
            for hypo in best:
                for tag, heads in hypo["syntax"].target.items():
                    out.append(f"TH-{sid}\t{tag}\t{_ints(heads)}\n")
            if self.teacher_forced:
                for tag, heads in syntax.target.items():
                    self._score("tgt", tag, sid, heads, self.tgt_gold)
        self.stream.write("".join(out))

    def _score(self, side: str, tag: str, sid: int, heads, gold) -> None:
        if gold is None:
            return
        words, gold_heads = gold[0][sid], gold[1][sid]  # (n,) 0-based word per subword, (w,) 1-based heads
        what = "source" if side == "src" else "reference"
        if len(words) != len(heads):
            raise ValueError(f"sentence {sid} of {self.subset}: the {what} has {len(heads)} subwords but its word "
                             f"sidecar {len(words)}")
        pred = word_heads(heads.tolist(), words, self._mode(tag))
        if len(pred) != len(gold_heads):
            raise ValueError(f"sentence {sid} of {self.subset}: the {what}'s word sidecar has {len(pred)} words but "
                             f"its head sidecar {len(gold_heads)}")
        hits, total = attachment(pred, gold_heads)
        # a causal (decoder) head sees the word itself and the words before it: roots and leftward arcs
        leftward = (gold_heads == 0) | (gold_heads - 1 < np.arange(len(gold_heads)))
        hits_left, total_left = attachment(pred, gold_heads, leftward)
        c = self.counts.setdefault((side, tag), [0, 0, 0, 0])
        for k, v in enumerate((hits, total, hits_left, total_left)):
            c[k] += v

    def _mode(self, tag: str) -> str:
        return next(x.mode for x in self.parses if x.tag == tag)

    def summary_lines(self) -> List[str]:
        """The summary: per parse its word UAS, or why there is none."""
        lines = []
        for x in self.parses:
            side = "src" if x.side == "encoder" else "tgt"
            where = "source" if side == "src" else "target"
            head = f"Syntax {self.subset}: {where} {x.tag}"
            c = self.counts.get((side, x.tag))
            if side == "tgt" and not self.teacher_forced:
                lines.append(f"{head}: no word UAS, the hypotheses have no gold parse (--score-reference scores the "
                             "reference's parse)")
            elif c is None:
                lines.append(f"{head}: no word UAS, split {self.subset} has no {where} parse (word and head sidecars)")
            elif side == "src":
                lines.append(f"{head} word UAS = {_uas(c[0], c[1])}")
            else:
                lines.append(f"{head} word UAS = {_uas(c[0], c[1])}, on leftward arcs and roots = {_uas(c[2], c[3])}")
        return lines

    def finish(self) -> None:
        """Write the summary once (the end of the split), and close the stream if this printer opened it."""
        if self.finished:
            return
        self.finished = True
        self.stream.write("".join(line + "\n" for line in self.summary_lines()))
        self.stream.flush()
        if self.close:
            self.stream.close()


def _ints(heads) -> str:
    return " ".join(str(int(h)) for h in heads.tolist())


def _uas(hits: int, total: int) -> str:
    return f"{100.0 * hits / total:.2f} ({hits}/{total} words)" if total else "nan (0/0 words)"
