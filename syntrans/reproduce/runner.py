"""Rebuild one published table: prepare each dataset, train every system over the seeds, (average checkpoints),
decode the test set with the paper's beam and length penalty, score detokenized output with sacreBLEU, and write
results/<table>.md. Every step is skipped when it finished before (and says so), so a re-run resumes a job."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..prep import prepare_corpus
from .batching import world_size_of
from .config_file import CONFIG_DIR, ArgsFile, config_batch, read_args_file
from .published import protocol
from .published_data import data_settings
from .report import results_markdown
from .scoring import bleu, detokenize, generate_hypotheses
from .tables import LICENSED, TABLES, Dataset, System, Table


class RunError(RuntimeError):
    """A step failed: the message names the step, its command and the end of its log."""


@dataclass
class Options:
    table: str
    work_dir: Path = Path("work")
    results_dir: Path = Path("results")
    data_root: Optional[Path] = None  # default: <work_dir>/data
    raw_dir: Optional[Path] = None  # downloads per corpus (<raw_dir>/<corpus>); with --smoke: a multi30k-style folder
    aspec_dir: Optional[Path] = None
    ldc_dir: Optional[Path] = None
    smoke: bool = False
    synthetic: bool = False  # with --smoke: the built-in synthetic corpus instead of --raw-dir text
    smoke_updates: int = 300
    smoke_sizes: Optional[Dict[str, int]] = None
    seeds: Optional[List[int]] = None  # default: 1…n, n the paper's number of runs for the row (published.protocol)
    average_last: Optional[int] = None  # average the last N epoch checkpoints; default: the paper's selection
    datasets: Optional[List[str]] = None  # only these dataset keys
    systems: Optional[List[str]] = None  # only these system names
    parser: str = "auto"
    train_args: List[str] = field(default_factory=list)
    generate_args: List[str] = field(default_factory=list)
    config_dir: Path = CONFIG_DIR
    workers: int = 1
    command: str = ""  # the command line, quoted in the results file


#: flags after a config's in a --smoke run: a tiny model, a few hundred updates, a short warm-up (later flags win)
SMOKE_MODEL = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
               "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128", "--encoder-attention-heads", "8",
               "--decoder-attention-heads", "8", "--max-tokens", "2048", "--lr", "2e-3", "--warmup-init-lr", "1e-7",
               "--num-workers", "0"]


def smoke_flags(cfg: ArgsFile, updates: int) -> List[str]:
    flags = SMOKE_MODEL + ["--max-update", str(updates), "--warmup-updates", str(max(10, updates // 4))]
    if cfg.value("--gate-warmup-epochs") is not None:
        flags += ["--gate-warmup-epochs", "1"]  # the published K (50–80 epochs) would freeze the gates for the whole run
    if cfg.value("--nsd-embed-dim") is not None:
        flags += ["--nsd-embed-dim", "64"]  # e ∈ ℝ^d (Ma et al. 2019, Eq. 10) for the tiny model's 64 dims
    return flags


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", name).strip("_").lower()


def _tool(name: str) -> str:
    """A console script of this environment (next to the running Python), else from PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise RunError(f"{name} not found next to {sys.executable} or on PATH: install fairseq and syntrans (make install)")
    return found


def _run(cmd: List[str], log_path: Path, what: str) -> None:
    with open(log_path, "w", encoding="utf-8") as log:
        code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    if code != 0:
        tail = "\n".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-25:])
        raise RunError(f"{what} failed (exit {code}); log {log_path}; command:\n  {' '.join(cmd)}\n"
                       f"--- end of the log ---\n{tail}")


class Reproduction:
    def __init__(self, opts: Options, log: Callable[[str], None] = print):
        if opts.table not in TABLES:
            raise RunError(f"unknown table {opts.table!r}; tables: {', '.join(TABLES)}")
        self.opts, self.log = opts, log
        self.table: Table = TABLES[opts.table]
        self.user_dir = str(Path(__file__).resolve().parents[1])
        self.notes: List[str] = []
        self.facts: Dict[str, str] = {}  # per dataset: what data and parser it ran on
        self.signatures: set = set()
        self.protocols: Dict[str, str] = {}  # per dataset: seeds and checkpoint selection
        if opts.smoke and not opts.synthetic and opts.raw_dir is None:
            raise RunError("--smoke needs real text from --raw-dir (e.g. ../shared/data/multi30k) or --synthetic")
        known = {r.dataset.key for r in self.table.rows}
        bad = sorted(set(opts.datasets or ()) - known)
        if bad:
            raise RunError(f"--datasets {','.join(bad)}: not in {self.table.key} (its datasets: {', '.join(sorted(known))})")

    # ---- data
    def _data_request(self, ds: Dataset):
        """(corpus, src, tgt, raw_dir, note) for one dataset, or a reason to skip it."""
        o = self.opts
        if o.smoke and o.synthetic:
            return ("synthetic", "src", "tgt", None, f"smoke: {ds.title} replaced by the synthetic corpus (src→tgt, gold parses)")
        if o.smoke:
            pair = (ds.src, ds.tgt) if {ds.src, ds.tgt} == {"de", "en"} else ("en", "de")
            note = f"smoke: {ds.title} replaced by the first lines of {o.raw_dir} (multi30k, {pair[0]}→{pair[1]})"
            return ("multi30k", pair[0], pair[1], o.raw_dir, note)
        if ds.licensed:
            flag = LICENSED[ds.corpus]
            local = o.aspec_dir if ds.corpus == "aspec" else o.ldc_dir
            if local is None:
                return f"{ds.corpus.upper()} is licensed: pass {flag} with your copy"
            return (ds.corpus, ds.src, ds.tgt, local, None)
        return (ds.corpus, ds.src, ds.tgt, (o.raw_dir / ds.corpus) if o.raw_dir else None, None)

    def prepare(self, ds: Dataset):
        request = self._data_request(ds)
        if isinstance(request, str):
            return request
        corpus, src, tgt, raw, note = request

        # the paper's preparation (filters, case, BPE, language filter); a smoke run's stand-in corpus keeps its own
        recipe = None if self.opts.smoke else data_settings(self.table.key, ds.key).recipe
        root = self.opts.data_root or (self.opts.work_dir / "data")
        # one folder per corpus, direction and recipe: tables that prepare a corpus alike share it
        out = root / (f"{corpus}.{src}-{tgt}" + (f".{recipe.digest()}" if recipe else "")
                      + (".smoke" if self.opts.smoke else ""))
        self.log(f"== data {ds.title}: {corpus} {src}→{tgt} in {out}" + (f" ({note})" if note else ""))
        prepared = prepare_corpus(corpus=corpus, src=src, tgt=tgt, out_dir=out, raw_dir=raw, smoke=self.opts.smoke,
                                  parser=self.opts.parser, bpe_ops=None, workers=self.opts.workers, force=False, log=self.log,
                                  smoke_sizes=self.opts.smoke_sizes, recipe=recipe)
        parsers = ", ".join(f"{k}: {v}" for k, v in sorted(prepared.parsers.items()))
        self.facts[ds.title] = (f"{corpus} {src}→{tgt}, sizes {prepared.sizes}, parsers {parsers}"
                                + (", lowercased" if prepared.lowercase else "")
                                + (f", the paper's preparation {recipe.digest()}: {recipe}" if recipe else ""))
        if note:
            self.notes.append(note)
        return prepared

    # ---- one system, one seed
    def batch(self, cfg: ArgsFile, label: str) -> List[str]:
        """--max-tokens and --update-freq that give the config's tokens per update on this run's GPUs (none in a
        smoke run, or when the config states no batch, or when --train-args sets --update-freq itself)."""
        if not cfg.tokens_per_update or self.opts.smoke:
            return []
        if any(a == "--update-freq" or a.startswith("--update-freq=") for a in self.opts.train_args):
            self.log(f"   [{label}] --update-freq from --train-args: the config's {cfg.tokens_per_update} tokens per update "
                     "are not enforced")
            return []
        flags, message = config_batch(cfg, world_size_of(self.opts.train_args))
        self.log(f"   [{label}] {message}")
        return flags

    def train(self, prepared, cfg: ArgsFile, system: System, seed: int, run_dir: Path, label: str,
              average_last: Optional[int] = None) -> None:
        done = run_dir / "train.done"
        if done.exists():
            self.log(f"   [{label}] training finished before: skipped ({done})")
            return
        run_dir.mkdir(parents=True, exist_ok=True)
        cmd = [_tool("fairseq-train"), str(prepared.data_bin), "--user-dir", self.user_dir, *cfg.flags, *system.extra]
        cmd += self.batch(cfg, label)
        if self.opts.smoke:
            cmd += smoke_flags(cfg, self.opts.smoke_updates)
        cmd += ["--seed", str(seed), "--save-dir", str(run_dir), "--log-format", "simple", "--log-interval", "100"]
        cmd += ["--keep-last-epochs", str(average_last)] if average_last else ["--no-epoch-checkpoints"]
        cmd += self.opts.train_args
        resumed = (run_dir / "checkpoint_last.pt").exists()
        self.log(f"   [{label}] fairseq-train" + (" (resuming from checkpoint_last.pt)" if resumed else ""))
        t0 = time.time()
        _run(cmd, run_dir / ("train.resumed.log" if resumed else "train.log"), f"[{label}] fairseq-train")
        done.write_text(json.dumps({"command": cmd, "seconds": round(time.time() - t0, 1)}, indent=1), encoding="utf-8")
        self.log(f"   [{label}] trained in {time.time() - t0:.0f}s")

    def checkpoint(self, run_dir: Path, label: str, n: Optional[int]) -> Path:
        if not n:
            return run_dir / "checkpoint_best.pt"
        avg = run_dir / f"checkpoint_avg_last{n}.pt"
        if avg.exists() and avg.stat().st_mtime >= (run_dir / "train.done").stat().st_mtime:
            self.log(f"   [{label}] averaged checkpoint made before: skipped ({avg.name})")
            return avg
        cmd = [_tool("syntrans-average-checkpoints"), "--inputs", str(run_dir), "--num-epoch-checkpoints", str(n),
               "--output", str(avg)]
        _run(cmd, run_dir / "average.log", f"[{label}] syntrans-average-checkpoints")
        self.log(f"   [{label}] averaged the last {n} epoch checkpoints into {avg.name}")
        return avg

    def score(self, prepared, cfg: ArgsFile, ckpt: Path, run_dir: Path, label: str, ds: Dataset) -> float:
        score_file = run_dir / f"score.{ckpt.stem}.json"
        if score_file.exists() and score_file.stat().st_mtime >= ckpt.stat().st_mtime:
            result = json.loads(score_file.read_text(encoding="utf-8"))
            self.log(f"   [{label}] decoded and scored before: skipped (BLEU {result['bleu']:.2f})")
            self.signatures.add(result["signature"])
            return result["bleu"]
        refs = Path(prepared.ref_test).read_text(encoding="utf-8").splitlines()
        gen = run_dir / f"generate.{ckpt.stem}.txt"
        cmd = [_tool("fairseq-generate"), str(prepared.data_bin), "--user-dir", self.user_dir, "--task", "syntax_translation",
               "--gen-subset", "test", "--path", str(ckpt), *cfg.decode, "--batch-size", "64", "--remove-bpe",
               "--num-workers", "0", *self.opts.generate_args]
        self.log(f"   [{label}] fairseq-generate {' '.join(cfg.decode)}")
        with open(gen, "w", encoding="utf-8") as out, open(run_dir / "generate.log", "w", encoding="utf-8") as err:
            code = subprocess.call(cmd, stdout=out, stderr=err)
        if code != 0:
            raise RunError(f"[{label}] fairseq-generate failed (exit {code}); see {run_dir / 'generate.log'}; "
                           f"command:\n  {' '.join(cmd)}")
        hyps = detokenize(generate_hypotheses(gen, len(refs)), prepared.tgt)
        (run_dir / f"hyp.{ckpt.stem}.detok.txt").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
        # the paper's scoring (e.g. character BLEU for Japanese and Chinese, case-insensitive for English: Ma et al.)
        paper = None if self.opts.smoke else data_settings(self.table.key, ds.key).evaluation
        score, signature = bleu(hyps, refs, prepared.tgt, lowercase=prepared.lowercase or bool(paper and paper.lowercase),
                                tokenize=paper.tokenize if paper else None)
        self.signatures.add(signature)
        score_file.write_text(json.dumps({"bleu": score, "signature": signature, "checkpoint": str(ckpt)}, indent=1),
                              encoding="utf-8")
        self.log(f"   [{label}] sacreBLEU {score:.2f}  ({signature})")
        return score

    def protocol(self, ds: Dataset):
        """(seeds, N of the last N checkpoints averaged or None) of one row: the options', else the paper's."""
        paper = protocol(self.table.key, ds.key)
        smoke = self.opts.smoke  # a smoke run: one seed and checkpoint_best.pt unless asked otherwise
        seeds = self.opts.seeds or ([1] if smoke else list(range(1, paper.seeds + 1)))
        average_last = self.opts.average_last
        if average_last is None and paper.checkpoint.startswith("last ") and not smoke:
            average_last = int(paper.checkpoint.split()[1])
        self.protocols[ds.title] = (f"seeds {', '.join(map(str, seeds))}; "
                                    + (f"the average of the last {average_last} epoch checkpoints" if average_last
                                       else "checkpoint_best.pt (smallest validation loss)")
                                    + f" (the paper: {paper.seeds} run{'s' if paper.seeds > 1 else ''}, "
                                      f"{paper.checkpoint}; {paper.where})")
        return seeds, average_last

    # ---- the table
    def run(self) -> Path:
        o, t = self.opts, self.table
        start = time.time()
        self.log(f"== {t.key}: {t.title} ({t.paper})" + ("  [SMOKE RUN]" if o.smoke else ""))
        outcomes: Dict[tuple, dict] = {}
        for row in t.rows:
            ds = row.dataset
            if o.datasets and ds.key not in o.datasets:
                for s in row.systems:
                    outcomes[(ds.key, s.name)] = {"skipped": "not selected (--datasets)"}
                continue
            prepared = self.prepare(ds)
            if isinstance(prepared, str):
                self.log(f"== {ds.title}: skipped: {prepared}")
                for s in row.systems:
                    outcomes[(ds.key, s.name)] = {"skipped": prepared}
                continue
            for system in row.systems:
                if o.systems and system.name not in o.systems:
                    outcomes[(ds.key, system.name)] = {"skipped": "not selected (--systems)"}
                    continue
                cfg = read_args_file(o.config_dir / system.config)
                seeds, average_last = self.protocol(ds)
                scores = []
                for seed in seeds:
                    label = f"{ds.key} {system.name} seed {seed}"
                    run_dir = o.work_dir / t.key / ds.key / _slug(system.name) / f"seed{seed}"
                    self.train(prepared, cfg, system, seed, run_dir, label, average_last)
                    scores.append(self.score(prepared, cfg, self.checkpoint(run_dir, label, average_last), run_dir, label, ds))
                outcomes[(ds.key, system.name)] = {"scores": scores}
        minutes = (time.time() - start) / 60
        path = self.write(outcomes, minutes)
        self.log(path.read_text(encoding="utf-8"))
        self.log(f"== {t.key} finished in {minutes:.1f} min; results in {path}")
        return path

    def write(self, outcomes, minutes: float) -> Path:
        o = self.opts
        header = []
        if o.smoke:
            header.append(f"**Smoke run** (`--smoke`): a tiny slice of text and a tiny model trained {o.smoke_updates} updates; "
                          "the pipeline is the real one, the numbers are not comparable with the published ones.")
        header.append("Decoded with each config's `# decode:` flags; sacreBLEU on Moses-detokenized output against the raw "
                      "references. Seeds and checkpoint per dataset:")
        header += [f"- {k}: {v}" for k, v in self.protocols.items()]
        for sig in sorted(self.signatures):
            header.append(f"sacreBLEU signature: `{sig}`")
        footer = [f"- data, {k}: {v}" for k, v in self.facts.items()] + [f"- {n}" for n in dict.fromkeys(self.notes)]
        footer.append(f"- wall time of this run: {minutes:.1f} min (finished steps of earlier runs are skipped, not counted)")
        footer.append(f"- command: `{o.command or 'syntrans-reproduce ' + o.table}`")
        out_dir = o.results_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{o.table}.md"
        path.write_text(results_markdown(self.table, outcomes, header, footer), encoding="utf-8")
        return path


def reproduce(opts: Options, log: Callable[[str], None] = print) -> Path:
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    return Reproduction(opts, log).run()
