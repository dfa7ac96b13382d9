"""A markdown table of prepared folders: per folder its route, sizes, each step's time and every per-line fallback
counted (prepared.json's ``sizes``, ``step_seconds`` and ``fallbacks``).

    python scripts/routes_summary.py OUT NAME [NAME …]      (reads OUT/NAME/prepared.json)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

STEPS = ("tokenize", "bpe", "parse", "binarize")


def route_of(p: dict) -> str:
    """How the folder's pieces were made: the segmentation and the text it was applied to."""
    seg = {"subword_nmt": "subword-nmt BPE", "sentencepiece": "SentencePiece", "gpt2": "gpt2 BPE"}[p["segmentation"]]
    return f"{seg} on {'raw text' if p.get('text_route') == 'raw' else 'Moses tokens'}"


def fallback_totals(p: dict) -> dict:
    """{fallback: {lang: count}} over every split, the fallbacks counted at least once."""
    out: dict = {}
    for side, kinds in p.get("fallbacks", {}).items():
        lang = side.split(".")[1]
        for name, v in kinds.items():
            if v["count"]:
                out.setdefault(name, {}).setdefault(lang, 0)
                out[name][lang] += v["count"]
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    rows = ["| folder | route | train / valid / test | " + " | ".join(f"{s} (s)" for s in STEPS)
            + " | fallbacks (all splits; counts per language) |", "|" + "---|" * (4 + len(STEPS))]
    for name in argv[1:]:
        p = json.loads((out / name / "prepared.json").read_text(encoding="utf-8"))
        sizes = " / ".join(f"{p['sizes'][s]:,}" for s in ("train", "valid", "test"))
        secs = [p.get("step_seconds", {}).get(s) for s in STEPS]
        falls = "; ".join(f"{k} " + ", ".join(f"{lang} {n:,}" for lang, n in sorted(v.items()))
                          for k, v in sorted(fallback_totals(p).items())) or "none"
        rows.append(f"| {name} | {route_of(p)} | {sizes} | " + " | ".join("–" if x is None else f"{x:,.0f}" for x in secs)
                    + f" | {falls} |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
