"""A WMT-size corpus, simulated: ``syntrans-preprocess`` against ``fairseq-preprocess`` at N pairs, and fairseq-train
loading the result (``python -m syntrans.bench.scale``).

For each ``--pairs`` N (several give a scaling series) in ``--work-dir``:

1. ``syntrans-synth --train N --valid V --test V`` for the largest N (gold parses of both sides, both views); the
   smaller sizes take its first N training pairs, which are what ``--train N`` draws (one random stream);
2. ``fairseq-preprocess`` of the text (joined dictionary, ``--workers``), then ``syntrans-preprocess`` with the same
   flags plus the parses, then ``syntrans-preprocess --sidecars-only`` alone: wall time and peak resident memory
   (``/usr/bin/time``'s maximum RSS) of each command, the ratio syntrans / fairseq of wall time, and the sidecars'
   disk bytes per sentence (train, both sides);
3. fairseq-train on each data-bin with a small model for ``--updates`` updates (``--log-interval 1``): the stock
   ``transformer`` on fairseq's data (``--task translation``) and a syntax model that reads every sidecar kind
   (distance mask: ``dist``; DBSA on both sides: ``head``; +S&H labels: ``label``; all read ``word``) on ours:
   seconds from the start to the first logged update, and peak resident memory.

The figures are printed as Markdown (and written to ``WORK/scale.json``). Nothing is asserted: speed and memory are
measured here, never in a test. The corpus of each size is kept between runs unless ``--clean``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

from ..data.sidecar_format import KINDS

BIN = Path(sys.executable).parent
TIME = "/usr/bin/time"

#: the small model both trainings use (its sizes: the demo's); the syntax model adds mechanisms reading every kind
MODEL = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "128", "--decoder-embed-dim", "128",
         "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim", "256", "--encoder-attention-heads", "4",
         "--decoder-attention-heads", "4", "--share-all-embeddings", "--optimizer", "adam", "--lr", "1e-3",
         "--max-tokens", "4096", "--num-workers", "0", "--log-format", "simple", "--log-interval", "1",
         "--no-save", "--disable-validation", "--seed", "1", "--cpu"]
VANILLA = ["--task", "translation", "--arch", "transformer", "--criterion", "label_smoothed_cross_entropy"]
SYNTAX = ["--task", "syntax_translation", "--arch", "syntax_transformer", "--criterion",
          "syntax_label_smoothed_cross_entropy", "--distance-layers", "0", "--distance-heads", "1",
          "--dbsa-encoder-layers", "1", "--dbsa-decoder-layers", "1", "--dbsa-heads", "1", "--labels-input"]


def say(msg: str) -> None:
    print(f"[scale] {msg}", file=sys.stderr, flush=True)


def timed(cmd: List[str], log: Path, env: Optional[dict] = None, first_update: bool = False) -> Dict[str, float]:
    """Run ``cmd`` under /usr/bin/time -v (its output in ``log``): {"seconds", "peak_mb"} (+ "first_update_s": seconds
    from the start to the first ``train_inner`` line, when ``first_update``)."""
    t0 = time.time()
    first = None
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen([TIME, "-v", *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env)
        for line in proc.stdout:
            out.write(line)
            if first_update and first is None and re.search(r"\| (epoch 001|train_inner)\b.*\bnum_updates\b|"
                                                             r"\| epoch 001:\s+1 /", line):
                first = time.time() - t0
        code = proc.wait()
    seconds = time.time() - t0
    text = log.read_text(encoding="utf-8", errors="replace")
    killed = re.search(r"Command terminated by signal (\d+)", text)
    aborted_at_exit = bool(first_update and killed and "done training" in text)
    if code != 0 and not aborted_at_exit:
        raise RuntimeError(f"{' '.join(cmd[:3])}… failed (exit {code}); log {log}:\n" + "\n".join(text.splitlines()[-30:]))
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    out = {"seconds": round(seconds, 2), "cpu_s": cpu_seconds(text),
           "peak_mb": round(int(peak.group(1)) / 1024, 1) if peak else None}
    if first_update:
        out["first_update_s"] = round(first, 2) if first is not None else None
    if aborted_at_exit:  # trained to the end, then the interpreter's shutdown aborted: recorded, not a failure
        out["aborted_after_training"] = f"signal {killed.group(1)}"
        say(f"{cmd[0]} logged 'done training', then was terminated by signal {killed.group(1)} at exit; log {log}")
    return out


def cpu_seconds(time_output: str) -> Optional[float]:
    """User + system CPU seconds from /usr/bin/time -v's report (the command and the children it waited for)."""
    user = re.search(r"User time \(seconds\): ([\d.]+)", time_output)
    system = re.search(r"System time \(seconds\): ([\d.]+)", time_output)
    return round(float(user.group(1)) + float(system.group(1)), 2) if user and system else None


def sidecar_bytes(data_bin: Path, split: str = "train") -> Dict[str, int]:
    """Bytes of the sidecars of ``split`` per kind (both sides, .bin and .idx)."""
    out: Dict[str, int] = {}
    for p in data_bin.glob(f"{split}.*-*.*.*.*"):
        kind = p.name.split(".")[-2]
        if kind in KINDS:
            out[kind] = out.get(kind, 0) + p.stat().st_size
    return out


def prefix_corpus(big: Path, corpus: Path, n: int) -> None:
    """The corpus of ``n`` training pairs from a larger one of the same seed: syntrans-synth draws the training pairs
    from one random stream, so its first ``n`` lines (and their parses) are what ``--train n`` writes; valid and test
    are copied."""
    corpus.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(big):
        if not name.startswith("train."):
            if name != "synth.json":
                shutil.copyfile(big / name, corpus / name)
            continue
        with open(big / name, encoding="utf-8") as f, open(corpus / name, "w", encoding="utf-8") as out:
            if name.endswith(".conllu"):
                stop = f"# line = {n + 1}\n"
                for line in f:
                    if line == stop:
                        break
                    out.write(line)
            else:
                for _, line in zip(range(n), f):
                    out.write(line)


def run_size(n: int, work: Path, valid: int, workers: int, updates: int, train: bool, seed: int,
             source: Optional[Path] = None) -> dict:
    root = work / f"pairs{n}"
    corpus = root / "corpus"
    stamp = corpus / "synth.json"
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    result: dict = {"pairs": n}
    if source is not None and not (stamp.exists() and json.loads(stamp.read_text()).get("args") == [n, valid, seed]):
        shutil.rmtree(corpus, ignore_errors=True)
        say(f"{n} pairs: the first {n} training pairs of {source}")
        prefix_corpus(source, corpus, n)
        stamp.write_text(json.dumps({"args": [n, valid, seed], "synth": {"prefix_of": str(source)}}))
    if not (stamp.exists() and json.loads(stamp.read_text()).get("args") == [n, valid, seed]):
        shutil.rmtree(corpus, ignore_errors=True)
        corpus.mkdir(parents=True)
        say(f"{n} pairs: syntrans-synth")
        result["synth"] = timed([str(BIN / "syntrans-synth"), "--out-dir", str(corpus), "--train", str(n), "--valid",
                                 str(valid), "--test", str(valid), "--seed", str(seed)], root / "synth.log", env)
        stamp.write_text(json.dumps({"args": [n, valid, seed], "synth": result["synth"]}))
    else:
        result["synth"] = json.loads(stamp.read_text())["synth"]
    words = sum(len(line.split()) for line in open(corpus / "valid.src", encoding="utf-8"))
    result["mean_src_words"] = round(words / max(1, valid), 2)
    common = ["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary", "--workers", str(workers),
              "--dataset-impl", "mmap"]
    text = [f"--{s}pref" for s in ("train", "valid", "test")]
    prefixes = []
    for flag, split in zip(text, ("train", "valid", "test")):
        prefixes += [flag, str(corpus / split)]
    parses = []
    for split in ("train", "valid", "test"):
        parses += [f"--{split}parse", str(corpus / split)]
    vanilla_bin, ours_bin = root / "data-bin.fairseq", root / "data-bin.syntrans"
    for d in (vanilla_bin, ours_bin):
        shutil.rmtree(d, ignore_errors=True)
    say(f"{n} pairs: fairseq-preprocess")
    result["fairseq_preprocess"] = timed([str(BIN / "fairseq-preprocess"), *common, *prefixes, "--destdir",
                                          str(vanilla_bin)], root / "fairseq-preprocess.log", env)
    say(f"{n} pairs: syntrans-preprocess")
    result["syntrans_preprocess"] = timed([str(BIN / "syntrans-preprocess"), *common, *prefixes, *parses, "--destdir",
                                           str(ours_bin)], root / "syntrans-preprocess.log", env)
    say(f"{n} pairs: syntrans-preprocess --sidecars-only")
    result["sidecars_only"] = timed([str(BIN / "syntrans-preprocess"), *common, *prefixes, *parses, "--destdir",
                                     str(ours_bin), "--sidecars-only"], root / "sidecars-only.log", env)
    result["wall_ratio"] = round(result["syntrans_preprocess"]["seconds"] / result["fairseq_preprocess"]["seconds"], 3)
    result["cpu_ratio"] = round(result["syntrans_preprocess"]["cpu_s"] / result["fairseq_preprocess"]["cpu_s"], 3)
    sizes = sidecar_bytes(ours_bin)
    result["sidecar_bytes"] = sizes
    result["sidecar_bytes_per_sentence"] = round(sum(sizes.values()) / (2 * n), 1)  # per sentence of either side
    result["fairseq_bytes_per_sentence"] = round(sum(p.stat().st_size for p in vanilla_bin.glob("train.src-tgt.*.*"))
                                                 / (2 * n), 1)
    if train:
        from ..models.syntax_transformer import MODEL as SYNTAX_MODEL  # noqa: F401  (the arch name checked here)

        user_dir = str(Path(__file__).resolve().parents[1])
        for name, data, flags in (("vanilla", vanilla_bin, VANILLA), ("syntax", ours_bin, SYNTAX)):
            say(f"{n} pairs: fairseq-train {name}, {updates} updates")
            result[f"train_{name}"] = timed([str(BIN / "fairseq-train"), str(data), "--user-dir", user_dir, *flags,
                                             *MODEL, "--max-update", str(updates)], root / f"train.{name}.log", env,
                                            first_update=True)
    return result


def markdown(results: List[dict]) -> str:
    rows = ["| pairs | fairseq-preprocess wall s (CPU s) | syntrans-preprocess wall s (CPU s) | ratio wall (CPU) "
            "| peak MB fairseq / syntrans / sidecars only | sidecar bytes per sentence | fairseq bytes per sentence |",
            "|---|---|---|---|---|---|---|"]
    for r in results:
        f, s, o = r["fairseq_preprocess"], r["syntrans_preprocess"], r["sidecars_only"]
        rows.append(f"| {r['pairs']:,} | {f['seconds']:.1f} ({f.get('cpu_s')}) | {s['seconds']:.1f} ({s.get('cpu_s')}) | "
                    f"{r['wall_ratio']:.2f} ({r.get('cpu_ratio')}) | "
                    f"{f['peak_mb']:.0f} / {s['peak_mb']:.0f} / {o['peak_mb']:.0f} | "
                    f"{r['sidecar_bytes_per_sentence']:.1f} | {r['fairseq_bytes_per_sentence']:.1f} |")
    trained = [r for r in results if "train_vanilla" in r]
    if trained:
        rows += ["", "| pairs | fairseq-train | seconds to first update | peak MB |", "|---|---|---|---|"]
        for r in trained:
            for name in ("vanilla", "syntax"):
                t = r[f"train_{name}"]
                after = f" (then {t['aborted_after_training']} at exit)" if t.get("aborted_after_training") else ""
                rows.append(f"| {r['pairs']:,} | {name}{after} | {t['first_update_s']} | {t['peak_mb']:.0f} |")
    return "\n".join(rows)


def from_logs(work: Path, results: List[dict]) -> List[dict]:
    """``results`` with the CPU seconds read again from each size's /usr/bin/time logs (for a scale.json written
    before they were recorded)."""
    names = {"fairseq_preprocess": "fairseq-preprocess.log", "syntrans_preprocess": "syntrans-preprocess.log",
             "sidecars_only": "sidecars-only.log", "train_vanilla": "train.vanilla.log", "train_syntax": "train.syntax.log"}
    for r in results:
        for key, log in names.items():
            path = work / f"pairs{r['pairs']}" / log
            if key in r and path.exists():
                r[key]["cpu_s"] = cpu_seconds(path.read_text(encoding="utf-8", errors="replace"))
        if r["fairseq_preprocess"].get("cpu_s") and r["syntrans_preprocess"].get("cpu_s"):
            r["cpu_ratio"] = round(r["syntrans_preprocess"]["cpu_s"] / r["fairseq_preprocess"]["cpu_s"], 3)
    return results


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m syntrans.bench.scale", description=__doc__.splitlines()[0])
    p.add_argument("--pairs", default="4500000", help="comma-separated training pair counts (default 4500000)")
    p.add_argument("--valid", type=int, default=3000, help="valid and test pairs each (default 3000)")
    p.add_argument("--work-dir", type=Path, default=Path("bench/scale"), help="corpora and data-bins (default bench/scale)")
    p.add_argument("--workers", type=int, default=1, help="--workers of both preprocess commands (default 1)")
    p.add_argument("--updates", type=int, default=3, help="fairseq-train updates (default 3)")
    p.add_argument("--no-train", action="store_true", help="skip the fairseq-train measurement")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--clean", action="store_true", help="delete each size's folder after measuring it")
    p.add_argument("--report", action="store_true",
                   help="only print the table of WORK/scale.json (CPU seconds read again from the logs)")
    args = p.parse_args(argv)
    if args.report:
        results = from_logs(args.work_dir, json.loads((args.work_dir / "scale.json").read_text(encoding="utf-8")))
        print(markdown(sorted(results, key=lambda r: r["pairs"])))
        return 0
    sizes = [int(x) for x in args.pairs.split(",") if x.strip()]
    if not os.path.exists(TIME):
        print(f"{TIME} (GNU time) is needed to read peak memory", file=sys.stderr)
        return 2
    args.work_dir.mkdir(parents=True, exist_ok=True)
    results = []
    sizes = sorted(sizes, reverse=True)  # the largest corpus is drawn; the smaller ones are its prefixes
    largest = args.work_dir / f"pairs{sizes[0]}" / "corpus"
    for n in sizes:
        results.append(run_size(n, args.work_dir, args.valid, args.workers, args.updates, not args.no_train, args.seed,
                                None if n == sizes[0] else largest))
        (args.work_dir / "scale.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        say(json.dumps(results[-1]))
        if args.clean and n != sizes[0]:
            shutil.rmtree(args.work_dir / f"pairs{n}", ignore_errors=True)
    if args.clean:
        shutil.rmtree(args.work_dir / f"pairs{sizes[0]}", ignore_errors=True)
    print(markdown(sorted(results, key=lambda r: r["pairs"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
