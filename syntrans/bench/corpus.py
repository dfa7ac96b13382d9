"""The benchmark's corpus: preparation, binarization and the sidecar timing.

Corpus: Multi30k en→de from ``../shared/data/multi30k`` when present (Moses-tokenized with sacremoses,
joint subword-nmt BPE learnt on its train split, parsed with the model-free right-branching parser,
since no stanza model is available), else the built-in synthetic corpus with its gold parses.
Prepared text and binarized data are cached under ``--work-dir`` (default ``bench/``), each stage
stamped with the configuration it was made with.

Sidecar timing: on the same corpus, fairseq's binarization (``fairseq_cli.preprocess.main``, the
first phase of ``syntrans-preprocess``: :func:`syntrans.data.binarization.fairseq_binarize`, one worker)
against building the syntax sidecars of the same splits and sides (``build_side``, its second phase:
:func:`syntrans.data.binarization.build_sidecars`), as the ratio sidecars / fairseq.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from ..data.binarization import build_sidecars, fairseq_binarize, parse_preprocess_args, split_jobs
from ..parsing.trivial import trivial_parse
from ..syntax.parsed import write_conllu
from ..synth import write_corpus
from .options import BenchError, BenchOptions


def say(msg: str) -> None:
    print(f"[benchmark] {msg}", file=sys.stderr, flush=True)


@dataclass
class Corpus:
    name: str
    description: str
    root: Path
    src: str
    tgt: str
    splits: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # split → (BPE text prefix, parse prefix)

    @property
    def data_bin(self) -> Path:
        return self.root / "data-bin"


def _default_multi30k() -> Optional[Path]:
    here = Path(__file__).resolve().parents[2]
    for cand in (Path.cwd().parent / "shared" / "data" / "multi30k", here.parent / "shared" / "data" / "multi30k"):
        if (cand / "train.en").exists():
            return cand
    return None


def _stamp_ok(path: Path, config: dict) -> bool:
    try:
        return json.loads(path.read_text()) == config
    except (OSError, ValueError):
        return False


def _learn_and_apply_bpe(train_texts: List[str], merges: int, jobs: List[Tuple[str, Path]]) -> None:
    """Joint subword-nmt BPE learnt on ``train_texts`` (file paths), applied to each (input, output)."""
    text = "".join(Path(t).read_text(encoding="utf-8") for t in train_texts)
    codes = io.StringIO()
    learn_bpe(io.StringIO(text), codes, merges)
    codes.seek(0)
    bpe = BPE(codes)
    for src, out in jobs:
        lines = Path(src).read_text(encoding="utf-8").splitlines()
        out.write_text("".join(bpe.process_line(x) + "\n" for x in lines), encoding="utf-8")


def prepare_synth(opts: BenchOptions, root: Path) -> Corpus:
    merges = opts.bpe_merges or 500
    sizes = {"train": opts.synth_train, "test": opts.synth_test}
    config = {"corpus": "synth", "sizes": sizes, "seed": 1, "merges": merges, "version": 1}
    raw = root / "raw"
    corpus = Corpus("synth", f"synthetic (syntrans.synth, seed 1, {sizes['train']} train / {sizes['test']} test "
                             f"sentences, gold parses, joint BPE {merges} merges)", root, "src", "tgt")
    for split in sizes:
        corpus.splits[split] = (str(root / f"{split}.bpe"), str(raw / split))
    stamp = root / "prepared.json"
    if _stamp_ok(stamp, config):
        return corpus
    say(f"preparing the synthetic corpus in {root}")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    write_corpus(str(raw), sizes, 1)
    _learn_and_apply_bpe([str(raw / "train.src"), str(raw / "train.tgt")], merges,
                         [(str(raw / f"{s}.{lang}"), root / f"{s}.bpe.{lang}") for s in sizes for lang in ("src", "tgt")])
    stamp.write_text(json.dumps(config))
    return corpus


def prepare_multi30k(opts: BenchOptions, root: Path, raw_dir: Path) -> Corpus:
    from sacremoses import MosesTokenizer  # lazy: a slow import, needed only for Multi30k

    merges = opts.bpe_merges or 2000
    files = {"train": "train", "test": "test_2016_flickr"}
    config = {"corpus": "multi30k", "raw": str(raw_dir.resolve()), "merges": merges, "parser": "right-branching",
              "version": 1}
    src, tgt = "en", "de"
    corpus = Corpus("multi30k", f"Multi30k {src}→{tgt} ({raw_dir}; train 29,000 / test_2016_flickr 1,000 lines; "
                                f"sacremoses tokenization, joint BPE {merges} merges, right-branching trivial parses)",
                    root, src, tgt)
    for split in files:
        corpus.splits[split] = (str(root / f"{split}.bpe"), str(root / "tok" / split))
    stamp = root / "prepared.json"
    if _stamp_ok(stamp, config):
        return corpus
    say(f"preparing Multi30k in {root} (tokenize, BPE, right-branching parses; cached for later runs)")
    shutil.rmtree(root, ignore_errors=True)
    (root / "tok").mkdir(parents=True)
    for lang in (src, tgt):
        mt = MosesTokenizer(lang=lang)
        for split, name in files.items():
            lines = (raw_dir / f"{name}.{lang}").read_text(encoding="utf-8").splitlines()
            toks = [mt.tokenize(line, escape=False) for line in lines]
            base = root / "tok" / f"{split}.{lang}"
            base.write_text("".join(" ".join(t) + "\n" for t in toks), encoding="utf-8")
            write_conllu(f"{base}.conllu",
                         [trivial_parse(t, "right-branching", line=k) for k, t in enumerate(toks, 1) if t])
    _learn_and_apply_bpe([str(root / "tok" / f"train.{src}"), str(root / "tok" / f"train.{tgt}")], merges,
                         [(str(root / "tok" / f"{s}.{lang}"), root / f"{s}.bpe.{lang}")
                          for s in files for lang in (src, tgt)])
    stamp.write_text(json.dumps(config))
    return corpus


def bench_corpus(opts: BenchOptions) -> Corpus:
    """The benchmark's corpus, prepared (or taken from the cache) under ``opts.work_dir``."""
    work = Path(opts.work_dir)
    m30k = Path(opts.multi30k_dir) if opts.multi30k_dir else _default_multi30k()
    use_m30k = opts.corpus == "multi30k" or (opts.corpus == "auto" and not opts.quick and m30k is not None
                                              and (m30k / "train.en").exists())
    if use_m30k:
        if m30k is None or not (m30k / "train.en").exists():
            raise BenchError(f"no Multi30k at {m30k or '../shared/data/multi30k'}")
        return prepare_multi30k(opts, work / "multi30k", m30k)
    name = "synth-quick" if opts.quick else "synth"
    return prepare_synth(opts, work / name)


def _preprocess_args(corpus: Corpus, dest: Path):
    """syntrans-preprocess's options for the corpus into ``dest``, one worker."""
    # joined dictionary (the BPE is joint): presets that share all embeddings need it
    argv = ["-s", corpus.src, "-t", corpus.tgt, "--destdir", str(dest), "--workers", "1", "--joined-dictionary"]
    for split, (text, parse) in corpus.splits.items():
        argv += [f"--{split}pref", text, f"--{split}parse", parse]
    return parse_preprocess_args(argv)


def time_preprocessing(corpus: Corpus, reps: int = 1) -> dict:
    """fairseq's binarization then the sidecars of the same splits into a fresh folder (timed apart),
    ``reps`` times; medians."""
    dest = corpus.root / "timing"
    args = _preprocess_args(corpus, dest)
    jobs = list(split_jobs(args))
    t_fairseq, t_side = [], []
    for _ in range(reps):
        shutil.rmtree(dest, ignore_errors=True)
        t0 = time.perf_counter()
        fairseq_binarize(args)
        t_fairseq.append(time.perf_counter() - t0)
        t1 = time.perf_counter()
        build_sidecars(args, jobs)
        t_side.append(time.perf_counter() - t1)
    lines = sum(sum(1 for _ in open(f"{text}.{corpus.src}", encoding="utf-8")) for text, _ in corpus.splits.values())
    f, sc = statistics.median(t_fairseq), statistics.median(t_side)
    return {"fairseq_s": f, "sidecars_s": sc, "ratio": sc / f, "fairseq_s_reps": t_fairseq, "sidecars_s_reps": t_side,
            "reps": reps, "dest": dest, "splits": sorted(corpus.splits), "sides": [corpus.src, corpus.tgt],
            "lines_per_side": lines, "workers": 1}


def ensure_data_bin(corpus: Corpus, timing: Optional[dict]) -> None:
    stamp = corpus.data_bin / "complete.json"
    config = {**json.loads((corpus.root / "prepared.json").read_text()), "dictionary": "joined"}
    if _stamp_ok(stamp, config):
        if timing:
            shutil.rmtree(timing["dest"], ignore_errors=True)
        return
    shutil.rmtree(corpus.data_bin, ignore_errors=True)
    if timing:  # the timing run wrote exactly what is needed
        os.replace(timing["dest"], corpus.data_bin)
    else:
        say(f"binarizing {corpus.name} into {corpus.data_bin}")
        args = _preprocess_args(corpus, corpus.data_bin)
        fairseq_binarize(args)
        build_sidecars(args, list(split_jobs(args)))
    stamp.write_text(json.dumps(config))
