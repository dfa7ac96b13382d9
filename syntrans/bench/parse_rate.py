"""Parse throughput (``python -m syntrans.bench.parse_rate``): sentences per second of ``syntrans-parse`` for each view
set, against a bare stanza ``Pipeline`` with the same processors on the same text, and each view set against all
processors.

For each view set (``deps``, ``trees``, ``deps,trees``), on ``--device``:

* **bare stanza**: ``stanza.Pipeline(lang, processors=…, tokenize_pretokenized=True)`` with the batch sizes
  syntrans-parse gives it, called on the token lists ``--batch-size`` lines at a time, nothing written;
* **syntrans-parse**: :func:`syntrans.parsing.driver.parse_job` on the same tokenized file into a fresh CoNLL-U file
  (hashing the input, Moses unescaping, multi-word-token marking, alignment to the tokens, the output and its
  marker included), its pipeline built before the clock starts (as the bare one is).

Both pipelines are loaded once; the measurements are interleaved over ``--reps`` repetitions (each bare/syntrans pair
back to back, its order alternated) and the median is kept. On CPU the clock is the process's CPU time (one torch
thread by default): a shared machine's other load slows the wall clock, not the CPU seconds a sentence costs. Reported:
sentences per second of each, their ratio (syntrans ÷ bare, median of the per-repetition ratios: the cost of the
wrapping), and each view set's rate against ``deps,trees`` (what parsing only what a method reads saves). Nothing is
asserted.

The models: stanza's resources in ``STANZA_RESOURCES_DIR`` (``--models``), e.g. the GUM-trained test models that
``tests/stanza_models.py`` builds (hidden sizes 16–32); stanza's default models are much larger, so absolute rates
here are far above theirs, and the share of each processor differs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

VIEW_SETS = (("deps",), ("trees",), ("deps", "trees"))


def say(msg: str) -> None:
    print(f"[parse-rate] {msg}", file=sys.stderr, flush=True)


def tokenized_lines(path: Path, n: int, lang: str, raw: bool) -> List[str]:
    """The first ``n`` non-empty lines of ``path``, Moses-tokenized (escaped, as syntrans-prepare writes them) when
    ``raw``."""
    lines = []
    tok = None
    if raw:
        from sacremoses import MosesTokenizer

        tok = MosesTokenizer(lang=lang)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            lines.append(tok.tokenize(line, return_str=True, escape=True) if tok else line)
            if len(lines) >= n:
                break
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m syntrans.bench.parse_rate", description=__doc__.splitlines()[0])
    p.add_argument("--text", type=Path, required=True, help="text to parse, one sentence per line")
    p.add_argument("--raw", action="store_true", help="--text is raw: Moses-tokenize it first (not timed)")
    p.add_argument("--lang", default="en")
    p.add_argument("--lines", type=int, default=1000, help="lines parsed per measurement (default 1000)")
    p.add_argument("--reps", type=int, default=3, help="repetitions, interleaved; the median is kept (default 3)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--batch-size", type=int, default=None, help="lines per pipeline call (default: the device's)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1; 0: torch's default)")
    p.add_argument("--models", type=Path, default=None, help="stanza resources directory (default: STANZA_RESOURCES_DIR)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = p.parse_args(argv)
    if args.models is not None:
        os.environ["STANZA_RESOURCES_DIR"] = str(args.models)

    import stanza
    import torch

    from ..parsing import driver, stanza_parser
    from ..parsing.stanza_parser import DEFAULT_LINES_PER_CALL, StanzaParser, moses_unescape, pipeline_options

    if args.threads:
        torch.set_num_threads(args.threads)
    # CPU: the process's CPU seconds (one torch thread: what a core spends, whatever else the machine runs);
    # cuda: wall seconds after a synchronize
    if args.device == "cuda":
        def clock() -> float:
            torch.cuda.synchronize()
            return time.perf_counter()
    else:
        clock = time.process_time
    batch = args.batch_size or DEFAULT_LINES_PER_CALL[args.device]
    lines = tokenized_lines(args.text, args.lines, args.lang, args.raw)
    tokens = [[moses_unescape(t) for t in line.split()] for line in lines]
    work = Path(tempfile.mkdtemp(prefix="parse-rate-"))
    src = work / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    say(f"{len(lines)} lines, {sum(map(len, tokens))} tokens, device {args.device}, {batch} lines per call, "
        f"torch threads {torch.get_num_threads()}, models {stanza_parser.resources_dir()}")

    pipelines: Dict[tuple, dict] = {}
    for views in VIEW_SETS:
        options = pipeline_options(args.lang, views, args.device)
        pipelines[views] = {"bare": stanza.Pipeline(args.lang, **options), "ours": stanza.Pipeline(args.lang, **options),
                            "processors": options["processors"]}

    def bare(views) -> float:
        nlp = pipelines[views]["bare"]
        t0 = clock()
        n = 0
        for k in range(0, len(tokens), batch):
            n += len(nlp(tokens[k:k + batch]).sentences)
        assert n == len(tokens)
        return clock() - t0

    def ours(views) -> float:
        out = work / f"out.{'-'.join(views)}.conllu"
        for path in (out, Path(f"{out}.done")):
            if path.exists():
                path.unlink()
        pipe = pipelines[views]["ours"]
        saved = stanza_parser.make_pipeline
        stanza_parser.make_pipeline = lambda *a, **k: pipe  # built before the clock starts, as the bare one
        try:
            t0 = clock()
            driver.parse_job(driver.ParseJob(input=str(src), output=str(out), lang=args.lang, views=views,
                                             device=args.device, batch_size=batch))
            return clock() - t0
        finally:
            stanza_parser.make_pipeline = saved

    for views in VIEW_SETS:  # warm-up (first calls allocate)
        StanzaParser(args.lang, pipeline=pipelines[views]["ours"], views=views).parse_batch([s.split() for s in lines[:8]])
        pipelines[views]["bare"](tokens[:8])
    times: Dict[tuple, Dict[str, List[float]]] = {v: {"bare": [], "ours": []} for v in VIEW_SETS}
    for rep in range(args.reps):
        shift = rep % len(VIEW_SETS)
        kinds = ("bare", "ours") if rep % 2 == 0 else ("ours", "bare")  # each pair back to back, the order alternated
        for views, kind in [(v, k) for v in VIEW_SETS[shift:] + VIEW_SETS[:shift] for k in kinds]:
            seconds = bare(views) if kind == "bare" else ours(views)
            times[views][kind].append(seconds)
            say(f"rep {rep + 1}: {','.join(views)} {kind}: {len(tokens) / seconds:.1f} sentences per second")
    rows = []
    for views in VIEW_SETS:
        b, o = (statistics.median(times[views][k]) for k in ("bare", "ours"))
        ratios = [x / y for x, y in zip(times[views]["bare"], times[views]["ours"])]  # per repetition
        rows.append({"views": ",".join(views), "processors": pipelines[views]["processors"],
                     "bare_sps": round(len(tokens) / b, 1), "ours_sps": round(len(tokens) / o, 1),
                     "ratio": round(statistics.median(ratios), 3), "ratio_range": [round(min(ratios), 3),
                                                                                 round(max(ratios), 3)]})
    full = next(r for r in rows if r["views"] == "deps,trees")
    for r in rows:
        r["vs_all"] = round(r["ours_sps"] / full["ours_sps"], 2)
    unit = "sentences per CPU second" if args.device == "cpu" else "sentences per second"
    print(f"| views | processors | bare Pipeline, {unit} | syntrans-parse, {unit} | ratio (range) | rate vs deps,trees |\n"
          f"|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['views']} | {r['processors']} | {r['bare_sps']} | {r['ours_sps']} | {r['ratio']:.2f} "
              f"({r['ratio_range'][0]:.2f}–{r['ratio_range'][1]:.2f}) | {r['vs_all']:.2f}× |")
    if args.json:
        args.json.write_text(json.dumps({"lines": len(tokens), "device": args.device, "batch": batch,
                                         "threads": torch.get_num_threads(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
