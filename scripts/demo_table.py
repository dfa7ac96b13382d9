#!/usr/bin/env python
"""Print the demo's table: sacreBLEU on detokenized test output of fairseq-generate, and validation loss.

fairseq-generate's H-/T- lines (BPE removed) are Moses-tokenized; both sides are detokenized with
sacremoses before scoring, as sacreBLEU expects.
"""
import argparse
import os
import re
import sys

import sacrebleu
from sacremoses import MosesDetokenizer


def read_generate(path):
    """Hypotheses and references in test-set order from fairseq-generate output (H-/T- lines)."""
    hyps, refs = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([HT])-(\d+)\t(.*)$", line.rstrip("\n"))
            if not m:
                continue
            kind, idx, rest = m.group(1), int(m.group(2)), m.group(3)
            if kind == "H":
                hyps[idx] = rest.split("\t", 1)[1] if "\t" in rest else ""
            else:
                refs[idx] = rest
    if set(hyps) != set(refs):
        sys.exit(f"{path}: {len(hyps)} hypotheses but {len(refs)} references")
    order = sorted(refs)
    md = MosesDetokenizer(lang="en")
    return [md.detokenize(hyps[i].split()) for i in order], [md.detokenize(refs[i].split()) for i in order]


def best_valid_loss(log):
    best = None
    with open(log, encoding="utf-8") as f:
        for line in f:
            m = re.search(r"valid on 'valid' subset \| loss ([0-9.]+)", line)
            if m:
                v = float(m.group(1))
                best = v if best is None else min(best, v)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", required=True)
    ap.add_argument("names", nargs="+")
    args = ap.parse_args()
    rows, sig = [], None
    for name in args.names:
        hyps, refs = read_generate(os.path.join(args.dir, f"gen.{name}.txt"))
        bleu = sacrebleu.metrics.BLEU()
        score = bleu.corpus_score(hyps, [refs])
        sig = bleu.get_signature()
        rows.append((name, len(hyps), score.score, best_valid_loss(os.path.join(args.dir, f"train.{name}.log"))))
    print("| model | test sentences | sacreBLEU | best valid loss (bits) |")
    print("|---|---|---|---|")
    for name, n, b, loss in rows:
        print(f"| {name} | {n} | {b:.2f} | {loss:.3f} |")
    print(f"sacreBLEU signature: {sig}")


if __name__ == "__main__":
    main()
