#!/usr/bin/env python
"""Print the demo's table: sacreBLEU on detokenized test output of fairseq-generate, the best validation
NLL, and the LISA head's attachment score at each validation (LISA models).

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


def valid_curve(log):
    """Per validation of the training log: {'nll_loss': …, 'lisa_uas': …} (the keys that line has)."""
    out = []
    with open(log, encoding="utf-8") as f:
        for line in f:
            if "valid on 'valid' subset" in line:
                out.append({k: float(v) for k, v in re.findall(r"\| (nll_loss|lisa_uas) ([0-9.]+)", line)})
    return out


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
        curve = valid_curve(os.path.join(args.dir, f"train.{name}.log"))
        nll = min((v["nll_loss"] for v in curve if "nll_loss" in v), default=float("nan"))
        uas = " → ".join(f"{v['lisa_uas']:.1f}" for v in curve if "lisa_uas" in v) or "–"
        rows.append((name, len(hyps), score.score, nll, uas))
    # nll_loss, not loss: a model's loss also holds its weighted auxiliary losses (e.g. LISA's)
    print("| model | test sentences | sacreBLEU | best valid nll (bits) | LISA UAS % per validation |")
    print("|---|---|---|---|---|")
    for name, n, b, nll, uas in rows:
        print(f"| {name} | {n} | {b:.2f} | {nll:.3f} | {uas} |")
    print(f"sacreBLEU signature: {sig}")


if __name__ == "__main__":
    main()
