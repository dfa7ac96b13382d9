#!/usr/bin/env python
"""Print the demo's table: sacreBLEU on detokenized test output of fairseq-generate, the best validation
NLL, and the attachment score of the parent-trained heads at each validation (LISA: `lisa`; DBSA and
SyncAttn: encoder `src` and decoder `tgt`).

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


# attachment-score keys of the validation log and their short names in the table
UAS_KEYS = {"lisa_uas": "lisa", "dbsa_src_uas": "src", "dbsa_tgt_uas": "tgt"}


def valid_curve(log):
    """Per validation of the training log: {'nll_loss': …, 'lisa_uas': …, 'dbsa_src_uas': …} (the keys that line has)."""
    pattern = re.compile(r"\| (nll_loss|%s) ([0-9.]+)" % "|".join(UAS_KEYS))
    out = []
    with open(log, encoding="utf-8") as f:
        for line in f:
            if "valid on 'valid' subset" in line:
                out.append({k: float(v) for k, v in pattern.findall(line)})
    return out


def uas_summary(curve):
    """'lisa 12.0 → 40.5' or 'src 12.5 → 60.0; tgt 30.1 → 55.2': each attachment score per validation, '–' if none."""
    parts = []
    for key, short in UAS_KEYS.items():
        values = [f"{v[key]:.1f}" for v in curve if key in v]
        if values:
            parts.append(f"{short} " + " → ".join(values))
    return "; ".join(parts) or "–"


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
        uas = uas_summary(curve)
        rows.append((name, len(hyps), score.score, nll, uas))
    # nll_loss, not loss: a model's loss also holds its weighted auxiliary losses (e.g. LISA's, DBSA's)
    print("| model | test sentences | sacreBLEU | best valid nll (bits) | UAS % per validation |")
    print("|---|---|---|---|---|")
    for name, n, b, nll, uas in rows:
        print(f"| {name} | {n} | {b:.2f} | {nll:.3f} | {uas} |")
    print(f"sacreBLEU signature: {sig}")


if __name__ == "__main__":
    main()
