"""Rebuild one published table or figure: prepare each dataset, train every system over the seeds, (average
checkpoints), decode the table's split with the paper's beam and length penalty, score detokenized output with
sacreBLEU (RIBES where the paper reports it; chrF++ for the cross kind), test every system against the row's reference
with sacreBLEU's paired bootstrap, and write results/<table>.md (and the figure's PNG beside it). Every step is skipped
when it finished before (and says so), so a re-run resumes a job.

The work is a list of units, one (dataset, system, seed) each: train, average, decode, score (:func:`run_unit`, a
module-level function a cluster job can run). The data of every unit is prepared first, by this process; the units then
run here one after another (``--launcher local``) or as jobs (:mod:`syntrans.jobs.launcher`); the table is written
from what the units left on disk."""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..prep import prepare_corpus
from ..prep.errors import PrepError
from ..prep.parse_step import PrepPending
from .batching import world_size_of
from .config_file import CONFIG_DIR, ArgsFile, ConfigError, config_batch, read_args_file
from .deviations import deviation_lines
from .parser_report import ParserScoresError, parser_score_lines, read_parser_scores
from .published import protocol
from .published_data import data_settings
from .report import results_markdown
from .scoring import TokenizerMissing, bleu, check_tokenizer, chrf, detokenize, generate_hypotheses, ribes, sacrebleu_tokenizer
from .significance import paired_bootstrap
from .tables import LICENSED, TABLES, Dataset, Row, System, Table


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
    launch: Any = None  # a launcher.LaunchOptions; None: every unit in this process, one after another
    parse_shards: int = 1  # each parse file in this many shards (jobs of ``launch`` where it is a cluster's)
    #: a JSON file of the parsers' own scores (UAS, LAS, UPOS, bracket F1 per language), printed under the table
    parser_scores: Optional[Path] = None


#: flags after a config's in a --smoke run: a tiny model, a few hundred updates, a short warm-up (later flags win)
SMOKE_MODEL = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
               "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128", "--encoder-attention-heads", "8",
               "--decoder-attention-heads", "8", "--max-tokens", "2048", "--lr", "2e-3", "--warmup-init-lr", "1e-7",
               "--num-workers", "0"]


def _last_value(flags: List[str], name: str) -> Optional[str]:
    """The value of the last ``name`` among fairseq flags (later flags win), or None."""
    values = [v for f, v in zip(flags, flags[1:]) if f == name]
    return values[-1] if values else None


def smoke_layers(flags: List[str]) -> int:
    """The layers a smoke model needs: 2, or more where a flag ``--…-layers`` names a deeper layer (0-based), e.g. a
    table's layer sweep (``--pascal-layers 5`` needs 6 layers)."""
    deepest = 1
    for name, value in zip(flags, flags[1:]):
        if name.startswith("--") and name.endswith("-layers") and name not in ("--encoder-layers", "--decoder-layers"):
            for part in value.split(","):
                if part.strip().isdigit():
                    deepest = max(deepest, int(part))
    return deepest + 1


def smoke_flags(cfg: ArgsFile, updates: int, extra: Tuple[str, ...] = ()) -> List[str]:
    """Flags after a config's (and a system's extra flags) in a --smoke run: :data:`SMOKE_MODEL`, as many layers as
    the system's layer flags need, a few hundred updates and a short warm-up."""
    layers = str(smoke_layers(list(cfg.flags) + list(extra)))
    flags = SMOKE_MODEL + ["--encoder-layers", layers, "--decoder-layers", layers]
    flags += ["--max-update", str(updates), "--warmup-updates", str(max(10, updates // 4))]
    warmup = _last_value(list(cfg.flags) + list(extra), "--gate-warmup-epochs")
    if warmup is not None and warmup.isdigit() and int(warmup) > 1:
        # the published K (50–80 epochs) would freeze the gates for the whole run; an ablation's K = 0 stays
        flags += ["--gate-warmup-epochs", "1"]
    if cfg.value("--nsd-embed-dim") is not None:
        flags += ["--nsd-embed-dim", "64"]  # e ∈ ℝ^d (Ma et al. 2019, Eq. 10) for the tiny model's 64 dims
    return flags


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", name).strip("_").lower()


#: a folder whose commands (fairseq-train, fairseq-generate, syntrans-average-checkpoints, and ``python`` for the
#: cross-paper table's measuring wrapper) the runner starts instead of this environment's: another installation, or
#: wrappers of the same commands (a profiler, a job shim)
BIN_ENV = "SYNTRANS_BIN"


def _tool(name: str) -> str:
    """A command from ``$SYNTRANS_BIN`` when set, else this environment's (next to the running Python; ``python`` is
    the running Python itself), else from PATH."""
    folder = os.environ.get(BIN_ENV)
    if folder:
        found = Path(folder) / name
        if not os.access(found, os.X_OK):
            raise RunError(f"{BIN_ENV}={folder}: it has no command {name}")
        return str(found)
    if name == "python":
        return sys.executable
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise RunError(f"{name} not found next to {sys.executable} or on PATH: install fairseq and syntrans (make install)")
    return found


def _run(cmd: List[str], log_path: Path, what: str) -> Optional[float]:
    """Run ``cmd`` with its output in ``log_path``; its peak resident memory in MB (the process and the processes it
    waited for, from ``os.wait4``; None where the platform has no wait4). RunError with the log's end on failure."""
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        peak = None
        if hasattr(os, "wait4"):
            try:
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                peak = usage.ru_maxrss / 1024  # Linux: kilobytes
            except ChildProcessError:  # reaped elsewhere
                pass
        code = proc.wait()
    if code != 0:
        tail = "\n".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-25:])
        raise RunError(f"{what} failed (exit {code}); log {log_path}; command:\n  {' '.join(cmd)}\n"
                       f"--- end of the log ---\n{tail}")
    return peak


#: the kinds of table whose units decode and score (the others read the training logs only)
DECODED_KINDS = ("bleu", "curve", "length", "cross")


def device_name() -> str:
    """The device a training runs on, named for a training-time table: the GPU's name, else the CPU's."""
    try:
        import torch  # heavy: only in a training unit

        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            return f"{n}× {torch.cuda.get_device_name(0)}"
    except Exception:  # noqa: BLE001  (no torch or no driver: the CPU)
        pass
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def _plain(name: str) -> str:
    """A name as the docs and the command line may spell it: without a leading "+" (the papers write the baselines
    +MULTI-TASK, +S&H), case and surrounding spaces ignored."""
    return name.strip().lstrip("+").strip().casefold()


def resolve_names(requested: Optional[List[str]], known: List[str], flag: str, what: str) -> Optional[List[str]]:
    """The names of ``known`` that ``requested`` (``flag``'s values; None: all) selects: each one exactly, or spelt as
    :func:`_plain` reads it when that matches one name only. RunError naming every unknown or ambiguous name and
    listing ``known``."""
    if requested is None:
        return None
    known = list(dict.fromkeys(known))
    out, bad = [], []
    for name in requested:
        if name in known:
            out.append(name)
            continue
        matches = [k for k in known if _plain(k) == _plain(name)]
        if len(matches) == 1:
            out.append(matches[0])
        else:
            bad.append(name)
    if bad:
        raise RunError(f"{flag} {','.join(bad)}: " + ("ambiguous or " if len(bad) == 1 else "")
                       + f"not among {what}; expected some of: {', '.join(known)}")
    return list(dict.fromkeys(out))


#: ``--systems all``: every system of the selected rows, whatever the table runs by default
ALL_SYSTEMS = "all"


def failure_summary(message: str) -> str:
    """The first line of a failure's message, fit for a table cell (its pipes escaped)."""
    first = next((line.strip() for line in str(message).splitlines() if line.strip()), "an unnamed error")
    return "FAILED: " + first.replace("|", "\\|")


class TableIncomplete(RunError):
    """Some systems failed: the results file was written with their rows saying why; the command exits non-zero."""


class Reproduction:
    def __init__(self, opts: Options, log: Callable[[str], None] = print):
        if opts.table not in TABLES:
            raise RunError(f"unknown table {opts.table!r}; tables: {', '.join(TABLES)}")
        self.opts, self.log = opts, log
        self.table: Table = TABLES[opts.table]
        # the table whose runs this one reads (a training-time table, a figure drawn from another table's runs)
        self.runs: Table = TABLES[self.table.runs_of] if self.table.runs_of else self.table
        self.user_dir = str(Path(__file__).resolve().parents[1])
        self.notes: List[str] = []
        self.facts: Dict[str, str] = {}  # per dataset: what data and parser it ran on
        self.parsers: Dict[str, str] = {}  # per dataset: the parsers we used and the paper's
        self.signatures: set = set()
        self.chrf_signatures: set = set()  # chrF++'s (the cross kind)
        self.test_descriptions: Dict[str, str] = {}  # per metric: the paired test's description
        self.protocols: Dict[str, str] = {}  # per dataset: seeds and checkpoint selection
        self.last_checkpoint: Dict[str, bool] = {}  # per dataset key: decode checkpoint_last.pt (the protocol's "last")
        self._prepared: Dict[tuple, Any] = {}
        if opts.smoke and not opts.synthetic and opts.raw_dir is None:
            raise RunError("--smoke needs real text from --raw-dir (e.g. ../shared/data/multi30k) or --synthetic")
        opts.datasets = resolve_names(opts.datasets, [r.dataset.key for r in self.table.rows], "--datasets",
                                      f"{self.table.key}'s datasets")
        rows = [r for r in self.table.rows if not opts.datasets or r.dataset.key in opts.datasets]
        names = [s.name for r in rows for s in r.systems]
        #: how the systems were chosen: "asked" (--systems NAMES), "all" (--systems all, or a table without a default)
        #: or "default" (the table's default_systems)
        self.selection = "asked" if opts.systems is not None else "all"
        if opts.systems is not None and [n.strip().casefold() for n in opts.systems] == [ALL_SYSTEMS]:
            opts.systems, self.selection = list(dict.fromkeys(names)), "all"
        elif opts.systems is None and self.table.default_systems:
            opts.systems, self.selection = list(self.table.default_systems), "default"
        opts.systems = resolve_names(opts.systems, names, "--systems",
                                     f"{self.table.key}'s systems" + (" on " + ", ".join(opts.datasets)
                                                                       if opts.datasets else ""))
        #: the parsers' own scores (--parser-scores), read now: a bad file stops the command before any work
        try:
            self.parser_scores = read_parser_scores(opts.parser_scores) if opts.parser_scores else None
        except ParserScoresError as e:
            raise RunError(str(e)) from None
        #: (dataset, system) → why it failed: its row says so, the others go on, the run ends non-zero naming it
        self.failures: Dict[Tuple[str, str], str] = {}

    @property
    def decodes(self) -> bool:
        return self.table.kind in DECODED_KINDS

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

    def recipe(self, ds: Dataset, system: Optional[System] = None):
        """The paper's preparation of ``ds`` (None in a smoke run: the stand-in corpus keeps its own), with the
        system's data overrides (System.data) on top."""
        from ..prep.recipe import Recipe

        recipe = None if self.opts.smoke else data_settings(self.runs.key, ds.key).recipe
        overrides = dict(system.data) if system is not None else {}
        if overrides:
            known = {f.name for f in dataclasses.fields(Recipe)}
            bad = sorted(set(overrides) - known)
            if bad:
                raise RunError(f"{self.runs.key} {ds.key} {system.name}: data overrides {bad} are not recipe fields "
                               f"({', '.join(sorted(known))})")
            request = self._data_request(ds)
            if self.opts.smoke and not isinstance(request, str):
                from ..prep.corpora import CORPORA
                from ..prep.recipe import refused_for

                # a smoke run's stand-in corpus may refuse a setting the paper's corpus takes (the synthetic one comes
                # tokenized with a gold parse per line: no text setting or filter applies): left out, and said
                corpus, src, tgt = request[:3]
                for name in refused_for(CORPORA[corpus].find_pair(src, tgt), overrides):
                    value = overrides.pop(name)
                    self.notes.append(f"smoke: {system.name}'s data setting {name}={value!r} left out ({corpus} "
                                      f"{src}-{tgt} cannot take it)")
                if not overrides:
                    return recipe
            recipe = dataclasses.replace(recipe or Recipe(), **overrides)
        return recipe

    def views(self, system: System) -> Dict[str, Tuple[str, ...]]:
        """{"source": views, "target": views} of the parse ``system`` reads (:mod:`syntrans.reproduce.config_views`:
        from its config's mechanisms)."""
        from .config_views import side_views_of_config

        try:
            return side_views_of_config(self.opts.config_dir / system.config, system.extra)
        except (ValueError, ConfigError) as e:
            raise RunError(f"{system.name} ({system.config}): cannot tell which parse it reads: {e}") from None

    def prepare(self, ds: Dataset, system: Optional[System] = None, views: Optional[Dict[str, Tuple[str, ...]]] = None):
        """The prepared data of ``ds`` for ``system`` (its recipe), parsed into ``views`` ({"source": …, "target": …};
        None: both views of both sides; the views of every system sharing the data, :meth:`plan`), or a reason to
        skip it."""
        request = self._data_request(ds)
        if isinstance(request, str):
            return request
        corpus, src, tgt, raw, note = request
        recipe = self.recipe(ds, system)
        key = (ds.key, recipe)
        if key in self._prepared:
            return self._prepared[key]
        root = self.opts.data_root or (self.opts.work_dir / "data")
        # one folder per corpus, direction and recipe: tables that prepare a corpus alike share it
        out = root / (f"{corpus}.{src}-{tgt}" + (f".{recipe.digest()}" if recipe else "")
                      + (".smoke" if self.opts.smoke else ""))
        self.log(f"== data {ds.title}: {corpus} {src}→{tgt} in {out}" + (f" ({note})" if note else ""))
        launch = self.opts.launch if getattr(self.opts.launch, "launcher", "local") != "local" else None
        if views is not None:
            from ..data.parse_views import format_side_views

            self.log(f"   parse views {format_side_views(views)}: what the systems to train on it read")
        prepared = prepare_corpus(corpus=corpus, src=src, tgt=tgt, out_dir=out, raw_dir=raw, smoke=self.opts.smoke,
                                  parser=self.opts.parser, bpe_ops=None, workers=self.opts.workers, force=False, log=self.log,
                                  smoke_sizes=self.opts.smoke_sizes, recipe=recipe, views=views, launch=launch,
                                  parse_shards=self.opts.parse_shards)
        parsers = ", ".join(f"{k}: {v}" for k, v in sorted(prepared.parsers.items()))
        which = ds.title + (f" ({system.name}'s data)" if system is not None and system.data else "")
        self.facts[which] = (f"{corpus} {src}→{tgt}, sizes {prepared.sizes}, parsers {parsers}"
                             + (", lowercased" if prepared.lowercase else "")
                             + (f", the preparation {recipe.digest()}: {recipe}" if recipe else ""))
        if note:
            self.notes.append(note)
        paper = data_settings(self.runs.key, ds.key)
        self.parsers[ds.title] = (f"ours: {parsers} (syntrans-prepare --parser {self.opts.parser}); the paper's: "
                                  f"{paper.parser} ({paper.source('parser')})")
        self._prepared[key] = prepared
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
        gpu_file = run_dir / "peak_memory.json"
        # the cross-paper table reports peak GPU memory: fairseq-train runs in a wrapper that records it
        train = ([_tool("python"), "-m", "syntrans.reproduce.peak_memory", str(gpu_file)] if self.runs.kind == "cross"
                 else [_tool("fairseq-train")])
        cmd = [*train, str(prepared.data_bin), "--user-dir", self.user_dir, *cfg.flags, *system.extra]
        cmd += self.batch(cfg, label)
        if self.opts.smoke:
            cmd += smoke_flags(cfg, self.opts.smoke_updates, system.extra)
        cmd += ["--seed", str(seed), "--save-dir", str(run_dir), "--log-format", "simple", "--log-interval", "100"]
        cmd += ["--keep-last-epochs", str(average_last)] if average_last else ["--no-epoch-checkpoints"]
        cmd += self.opts.train_args
        resumed = (run_dir / "checkpoint_last.pt").exists()
        self.log(f"   [{label}] fairseq-train" + (" (resuming from checkpoint_last.pt)" if resumed else ""))
        t0 = time.time()
        rss = _run(cmd, run_dir / ("train.resumed.log" if resumed else "train.log"), f"[{label}] fairseq-train")
        gpu = json.loads(gpu_file.read_text(encoding="utf-8"))["peak_gpu_bytes"] if gpu_file.exists() else {}
        done.write_text(json.dumps({"command": cmd, "seconds": round(time.time() - t0, 1), "device": device_name(),
                                    "resumed": resumed, "peak_rss_mb": None if rss is None else round(rss, 1),
                                    "peak_gpu_mb": round(max(gpu.values()) / 2 ** 20, 1) if gpu else None},
                                   indent=1), encoding="utf-8")
        self.log(f"   [{label}] trained in {time.time() - t0:.0f}s")

    def checkpoint(self, run_dir: Path, label: str, n: Optional[int], last: bool = False) -> Path:
        """The checkpoint to decode: the average of the last ``n`` epoch checkpoints (made here once), else
        checkpoint_last.pt when ``last`` (the end of training), else checkpoint_best.pt."""
        if not n:
            return run_dir / ("checkpoint_last.pt" if last else "checkpoint_best.pt")
        avg = run_dir / f"checkpoint_avg_last{n}.pt"
        if avg.exists() and avg.stat().st_mtime >= (run_dir / "train.done").stat().st_mtime:
            self.log(f"   [{label}] averaged checkpoint made before: skipped ({avg.name})")
            return avg
        cmd = [_tool("syntrans-average-checkpoints"), "--inputs", str(run_dir), "--num-epoch-checkpoints", str(n),
               "--output", str(avg)]
        _run(cmd, run_dir / "average.log", f"[{label}] syntrans-average-checkpoints")
        self.log(f"   [{label}] averaged the last {n} epoch checkpoints into {avg.name}")
        return avg

    def evaluation(self, prepared, ds: Dataset) -> Tuple[bool, Optional[str]]:
        """(lowercase, sacreBLEU tokenizer) of the paper's scoring (e.g. character BLEU for Japanese and Chinese,
        case-insensitive for English: Ma et al.); a smoke run scores case-insensitively where its data is lowercased.
        A paper that scores case-sensitively on lowercased data (Hou et al., gated, §5.1) gets exactly that: the
        references are the lowercased text, the signature says ``case:mixed``."""
        if self.opts.smoke:
            return prepared.lowercase, None
        paper = data_settings(self.runs.key, ds.key).evaluation
        return paper.lowercase, paper.tokenize

    def references(self, prepared, split: str) -> Path:
        return prepared.ref_test if split == "test" else Path(prepared.out_dir) / "ref" / f"{split}.{prepared.tgt}"

    def score(self, prepared, cfg: ArgsFile, ckpt: Path, run_dir: Path, label: str, ds: Dataset) -> dict:
        """Decode the table's split with ``ckpt`` and score it: {"bleu", "signature", "checkpoint", "hyps", "refs",
        and "ribes", "ribes_signature" where the table reports RIBES, "chrf", "chrf_signature" where it reports
        chrF++}; skipped when the score file is newer than the checkpoint and holds every score the table reports (a
        score file of an earlier run without chrF++ is scored again from its hypotheses, not decoded again)."""
        split = self.table.split
        tag = ckpt.stem if split == "test" else f"{split}.{ckpt.stem}"  # test files keep their earlier names
        score_file = run_dir / f"score.{tag}.json"
        hyp_file = run_dir / f"hyp.{tag}.detok.txt"
        ribes_wanted, chrf_wanted = self.table.ribes, self.table.chrf
        if score_file.exists() and score_file.stat().st_mtime >= ckpt.stat().st_mtime:
            result = json.loads(score_file.read_text(encoding="utf-8"))
            if (not ribes_wanted or "ribes" in result) and (not chrf_wanted or "chrf" in result):
                self.log(f"   [{label}] decoded and scored before: skipped (BLEU {result['bleu']:.2f})")
                self.signatures.add(result["signature"])
                return result
        ref_path = self.references(prepared, split)
        refs = Path(ref_path).read_text(encoding="utf-8").splitlines()
        more_paths = [str(x) for x in getattr(prepared, "ref_test_more", None) or []] if split == "test" else []
        more_refs = [Path(x).read_text(encoding="utf-8").splitlines() for x in more_paths]
        if not hyp_file.exists() or hyp_file.stat().st_mtime < ckpt.stat().st_mtime:
            gen = run_dir / f"generate.{tag}.txt"
            cmd = [_tool("fairseq-generate"), str(prepared.data_bin), "--user-dir", self.user_dir, "--task",
                   "syntax_translation", "--gen-subset", split, "--path", str(ckpt), *cfg.decode, "--batch-size", "64",
                   "--remove-bpe", "--num-workers", "0", *self.opts.generate_args]
            self.log(f"   [{label}] fairseq-generate --gen-subset {split} {' '.join(cfg.decode)}")
            log_name = "generate.log" if split == "test" else f"generate.{split}.log"
            with open(gen, "w", encoding="utf-8") as out, open(run_dir / log_name, "w", encoding="utf-8") as err:
                code = subprocess.call(cmd, stdout=out, stderr=err)
            if code != 0:
                raise RunError(f"[{label}] fairseq-generate failed (exit {code}); see {run_dir / log_name}; "
                               f"command:\n  {' '.join(cmd)}")
            hyps = detokenize(generate_hypotheses(gen, len(refs)), prepared.tgt)
            hyp_file.write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
        hyps = hyp_file.read_text(encoding="utf-8").splitlines()
        lowercase, tokenize = self.evaluation(prepared, ds)
        value, signature = bleu(hyps, refs, prepared.tgt, lowercase=lowercase, tokenize=tokenize, more_refs=more_refs)
        self.signatures.add(signature)
        result = {"bleu": value, "signature": signature, "checkpoint": str(ckpt), "split": split, "hyps": str(hyp_file),
                  "refs": str(ref_path), "more_refs": more_paths, "lowercase": lowercase, "tokenize": tokenize}
        message = f"sacreBLEU {value:.2f}  ({signature})"
        if ribes_wanted:
            result["ribes"], result["ribes_signature"] = ribes(hyps, refs, prepared.tgt, tokenize=tokenize)
            message += f"; RIBES {result['ribes']:.2f}"
        if chrf_wanted:
            result["chrf"], result["chrf_signature"] = chrf(hyps, refs, lowercase, more_refs=more_refs)
            message += f"; chrF++ {result['chrf']:.2f}"
        score_file.write_text(json.dumps(result, indent=1), encoding="utf-8")
        self.log(f"   [{label}] {message}")
        return result

    def protocol(self, ds: Dataset):
        """(seeds, N of the last N checkpoints averaged or None) of one row: the options', else the paper's."""
        paper = protocol(self.runs.key, ds.key)
        smoke = self.opts.smoke  # a smoke run: one seed and checkpoint_best.pt unless asked otherwise
        seeds = self.opts.seeds or ([1] if smoke else list(range(1, paper.seeds + 1)))
        average_last = self.opts.average_last
        if average_last is None and paper.checkpoint.startswith("last ") and not smoke:
            average_last = int(paper.checkpoint.split()[1])
        last = average_last is None and paper.checkpoint == "last" and not smoke
        self.last_checkpoint[ds.key] = last
        self.protocols[ds.title] = (f"seeds {', '.join(map(str, seeds))}; "
                                    + (f"the average of the last {average_last} epoch checkpoints" if average_last
                                       else "checkpoint_last.pt (the end of training)" if last
                                       else "checkpoint_best.pt (smallest validation loss)")
                                    + f" (the paper: {paper.seeds} run{'s' if paper.seeds > 1 else ''}, "
                                      f"{paper.checkpoint}; {paper.where})")
        return seeds, average_last

    # ---- units: one (dataset, system, seed) each
    def run_dir(self, ds: Dataset, system: System, seed: int) -> Path:
        return self.opts.work_dir / self.runs.key / ds.key / _slug(system.name) / f"seed{seed}"

    def _find(self, dataset: str, system: str) -> Tuple[Row, System]:
        for row in self.runs.rows:
            if row.dataset.key == dataset:
                for s in row.systems:
                    if s.name == system:
                        return row, s
        raise RunError(f"{self.runs.key} has no system {system!r} for dataset {dataset!r}")

    def unit_done(self, dataset: str, system: str, seed: int) -> bool:
        """Whether the unit finished before: trained, and (for a table that decodes) its score file is there."""
        row, s = self._find(dataset, system)
        run_dir = self.run_dir(row.dataset, s, seed)
        if not (run_dir / "train.done").exists():
            return False
        if not self.decodes:
            return True
        split = self.table.split
        return any(run_dir.glob(f"score.{'' if split == 'test' else split + '.'}checkpoint_*.json"))

    def unit(self, dataset: str, system: str, seed: int, prepared) -> dict:
        """One unit: train (skipped when done), average, decode and score where the table decodes."""
        row, s = self._find(dataset, system)
        ds = row.dataset
        cfg = read_args_file(self.opts.config_dir / s.config)
        _, average_last = self.protocol(ds)
        label = f"{ds.key} {s.name} seed {seed}"
        run_dir = self.run_dir(ds, s, seed)
        self.train(prepared, cfg, s, seed, run_dir, label, average_last)
        result = {"run_dir": str(run_dir), "train": json.loads((run_dir / "train.done").read_text(encoding="utf-8"))}
        if self.decodes:
            ckpt = self.checkpoint(run_dir, label, average_last, self.last_checkpoint.get(ds.key, False))
            result.update(self.score(prepared, cfg, ckpt, run_dir, label, ds))
        return result

    def guarded_unit(self, dataset: str, system: str, seed: int, prepared) -> dict:
        """:meth:`unit`, or {"failed": why} when one of its steps fails (the other units go on)."""
        try:
            return self.unit(dataset, system, seed, prepared)
        except (RunError, ConfigError, PrepError, OSError) as e:
            self.log(f"   [{dataset} {system} seed {seed}] FAILED: {e}")
            return {"failed": str(e)}

    # ---- the table
    def plan(self):
        """(units, prepared data per unit, outcomes of what is skipped): the data of every selected system is
        prepared here, once per dataset and recipe."""
        o = self.opts
        units, skipped = [], {}
        chosen = []
        for shown in self.table.rows:  # the table's own systems, looked up in the table whose runs it reads
            ds = shown.dataset
            if o.datasets and ds.key not in o.datasets:
                for s in shown.systems:
                    skipped[(ds.key, s.name)] = {"skipped": "not selected (--datasets)"}
                continue
            for system in (self._find(ds.key, s.name)[1] for s in shown.systems):
                if o.systems and system.name not in o.systems:
                    why = ("not selected (not among the table's default systems; --systems all runs every system)"
                           if self.selection == "default" else "not selected (--systems)")
                    skipped[(ds.key, system.name)] = {"skipped": why}
                    continue
                chosen.append((ds, system))
        views: Dict[tuple, Dict[str, set]] = {}  # per prepared folder (dataset, recipe) and side: what its systems read
        readers: Dict[tuple, Dict[tuple, list]] = {}  # per folder: (side, view) → the systems that read it
        ready = []
        for ds, system in chosen:
            try:
                key = (ds.key, self.recipe(ds, system))
                read = self.views(system)
            except (RunError, ConfigError) as e:
                self.fail(ds, system, e, skipped)
                continue
            # the table's own views of each side (Table.source_views, target_views), then what each system reads
            folder = views.setdefault(key, {"source": set(self.runs.source_views),
                                            "target": set(self.runs.target_views)})
            for side, side_views in read.items():
                folder[side].update(side_views)
                for view in side_views:
                    readers.setdefault(key, {}).setdefault((side, view), []).append(system.name)
            ready.append((ds, system, key))
        for ds, system, key in ready:
            wanted = views[key]
            try:
                prepared = self.prepare(ds, system, {side: tuple(v for v in ("deps", "trees") if v in wanted[side])
                                                     for side in ("source", "target")})
            except PrepPending:
                raise
            except (RunError, PrepError, ConfigError) as e:
                who = "; ".join(f"the {side} {view}: {', '.join(names)}"
                                for (side, view), names in sorted(readers.get(key, {}).items()))
                self.fail(ds, system, f"{e}" + (f"\n(the parse views of this data and the systems that read them: {who})"
                                                  if who else ""), skipped)
                continue
            if isinstance(prepared, str):
                self.log(f"== {ds.title} {system.name}: skipped: {prepared}")
                skipped[(ds.key, system.name)] = {"skipped": prepared}
                continue
            if self.decodes:  # a tokenizer the scoring needs and lacks stops the run now, not after training
                if not o.smoke:  # the paper's references per segment (NIST: 4), as the corpus' layout gives them
                    want, have = data_settings(self.runs.key, ds.key).references, \
                        1 + len(getattr(prepared, "ref_test_more", None) or [])
                    if want != have:
                        where = data_settings(self.runs.key, ds.key).source("references")
                        raise RunError(f"{self.table.key} {ds.title}: the recipe scores against {want} references "
                                       f"per segment ({where}), the prepared data has {have} (the layout of corpus "
                                       f"{ds.corpus!r}: syntrans.prep.corpora)")
                _, tokenize = self.evaluation(prepared, ds)
                try:
                    check_tokenizer(tokenize or sacrebleu_tokenizer(prepared.tgt))
                except TokenizerMissing as e:
                    raise RunError(f"{self.table.key} {ds.title}: {e}") from None
            seeds, _ = self.protocol(ds)
            units += [(ds.key, system.name, seed, prepared) for seed in seeds]
        return units, skipped

    def fail(self, ds: Dataset, system: System, error, outcomes: Dict[tuple, dict]) -> None:
        """Record that ``system`` failed on ``ds`` (its row says why; the table goes on without it)."""
        message = str(error)
        self.record_failure(ds.key, system.name, message, outcomes)
        self.log(f"== {ds.title} {system.name}: FAILED, the table goes on without it:\n{message}")

    def record_failure(self, dataset: str, system: str, message: str, outcomes: Dict[tuple, dict]) -> None:
        """The failure of (dataset, system): named at the end of the run, its row saying why."""
        self.failures[(dataset, system)] = message
        outcomes[(dataset, system)] = {"skipped": failure_summary(message), "failed": message}

    def run(self) -> Optional[Path]:
        """Run every unit and write the results file (its path); None when jobs were left running (--no-wait)."""
        o, t = self.opts, self.table
        start = time.time()
        self.log(f"== {t.key}: {t.title} ({t.paper})" + ("  [SMOKE RUN]" if o.smoke else "")
                 + (f"; the runs of {t.runs_of}" if t.runs_of else ""))
        try:
            units, outcomes = self.plan()
        except PrepPending as e:  # --no-wait: parse jobs still running; a re-run collects them
            self.log(f"== {t.key}: {e}")
            return None
        results = self.launch(units)
        running = [u for u, r in zip(units, results) if r is None]
        if running:  # --no-wait: some jobs are still running; a re-run collects them
            self.log(f"== {t.key}: {len(running)} of {len(units)} runs still running as jobs (e.g. "
                     f"{' '.join(map(str, running[0][:3]))}); run the same command again to collect them and write the "
                     "table")
            return None
        for (dataset, system, seed, prepared), result in zip(units, results):
            if "failed" in result or (dataset, system) in self.failures:
                if "failed" in result:  # its message's first words name the unit: dataset, system and seed
                    self.record_failure(dataset, system, result["failed"], outcomes)
                continue
            got = outcomes.setdefault((dataset, system), {"results": [], "seeds": [], "prepared": prepared})
            got["results"].append(result)
            got["seeds"].append(seed)
            if "signature" in result:
                self.signatures.add(result["signature"])
            if "chrf_signature" in result:
                self.chrf_signatures.add(result["chrf_signature"])
        self.summarise(outcomes)
        minutes = (time.time() - start) / 60
        path = self.write(outcomes, minutes)
        self.log(path.read_text(encoding="utf-8"))
        self.log(f"== {t.key} finished in {minutes:.1f} min; results in {path}")
        if self.failures:
            raise TableIncomplete(f"{t.key}: {len(self.failures)} system(s) failed, their rows in {path} say why: "
                                  + "; ".join(f"{ds} {name}" for ds, name in self.failures)
                                  + "\n" + "\n".join(f"--- {ds} {name}:\n{message}"
                                                      for (ds, name), message in self.failures.items()))
        return path

    def launch(self, units) -> List[dict]:
        """Run the units (here, or as jobs: Options.launch) and return their results in unit order."""
        launch = self.opts.launch
        if launch is None or getattr(launch, "launcher", "local") == "local":
            return [self.guarded_unit(*u) for u in units]
        from ..jobs.launcher import run_units

        return run_units(run_unit, [(self.opts, *u) for u in units], launch,
                         done=lambda args: self.unit_done(*args[1:4]), log=self.log, label=unit_label, load=run_unit)

    def summarise(self, outcomes: Dict[tuple, dict]) -> None:
        """Per (dataset, system): the scores per seed, and the paired bootstrap against the row's reference (of BLEU:
        "scores", "p_values"; of chrF++ where the table reports it: "chrf", "chrf_p_values")."""
        for row in self.runs.rows:
            ref = outcomes.get((row.dataset.key, row.systems[0].name), {})
            for s in row.systems:
                got = outcomes.get((row.dataset.key, s.name))
                if not got or "results" not in got:
                    continue
                results = got["results"]
                if self.decodes:
                    got["scores"] = [r["bleu"] for r in results]
                    if self.table.ribes:
                        got["ribes"] = [r["ribes"] for r in results]
                    if self.table.chrf:
                        got["chrf"] = [r["chrf"] for r in results]
                    if s is not row.systems[0] and ref.get("results"):
                        got["p_values"] = self.significance(row.dataset, got, ref)
                        if self.table.chrf:
                            got["chrf_p_values"] = self.significance(row.dataset, got, ref, metric="chrF++")

    def significance(self, ds: Dataset, got: dict, ref: dict, metric: str = "BLEU") -> List[float]:
        """sacreBLEU's paired bootstrap (Koehn 2004) of ``metric`` (BLEU, or chrF++) of each seed of a system against
        the same seed of the row's reference system (seeds the reference lacks are not tested)."""
        p_values = []
        by_seed = dict(zip(ref["seeds"], ref["results"]))
        lowercase, tokenize = self.evaluation(got["prepared"], ds)
        for seed, result in zip(got["seeds"], got["results"]):
            if seed not in by_seed:
                continue
            base = by_seed[seed]
            refs = Path(result["refs"]).read_text(encoding="utf-8").splitlines()
            if Path(base["refs"]).read_text(encoding="utf-8").splitlines() != refs:
                raise RunError(f"{ds.key}: the systems were scored on different references ({base['refs']}, "
                               f"{result['refs']}): no paired test")
            more = [Path(x).read_text(encoding="utf-8").splitlines() for x in result.get("more_refs", [])]
            p, description = paired_bootstrap(Path(base["hyps"]).read_text(encoding="utf-8").splitlines(),
                                              Path(result["hyps"]).read_text(encoding="utf-8").splitlines(), refs,
                                              got["prepared"].tgt, lowercase, tokenize=tokenize, more_refs=more,
                                              metric=metric)
            self.test_descriptions[metric] = description
            p_values.append(p)
        return p_values

    def write(self, outcomes, minutes: float) -> Path:
        o, t = self.opts, self.table
        header = []
        if o.smoke:
            header.append(f"**Smoke run** (`--smoke`): a tiny slice of text and a tiny model trained {o.smoke_updates} updates; "
                          "the pipeline is the real one, the numbers are not comparable with the published ones.")
        if t.runs_of:
            header.append(f"Drawn from the runs of `{t.runs_of}` ({TABLES[t.runs_of].paper}): the same work folders, "
                          "trained there or here, whichever ran first.")
        if self.decodes:
            header.append(f"Decoded ({t.split} set) with each config's `# decode:` flags; sacreBLEU on Moses-detokenized "
                          "output against the raw references. Seeds and checkpoint per dataset:")
        else:
            header.append("Read from the training logs of every run. Seeds and checkpoint per dataset:")
        header += [f"- {k}: {v}" for k, v in self.protocols.items()]
        if self.parsers:
            header.append("Parsers (ours and the paper's; parses differ between parsers, and so can BLEU: "
                          "docs/reproduce.md, Parsers):")
            header += [f"- {k}: {v}" for k, v in self.parsers.items()]
        if self.selection == "default":
            header.append(f"Systems: the table's default, {', '.join(t.default_systems)} (`--systems all` runs every "
                          "system; `--systems NAMES` any of them).")
        for sig in sorted(self.signatures):
            header.append(f"sacreBLEU signature: `{sig}`")
        for sig in sorted(self.chrf_signatures):
            header.append(f"chrF++ signature (sacreBLEU CHRF, word_order=2): `{sig}`")
        for metric, description in self.test_descriptions.items():
            header.append(f"Significance{'' if metric == 'BLEU' else f' ({metric})'}: {description}")
        footer = [f"- data, {k}: {v}" for k, v in self.facts.items()] + [f"- {n}" for n in dict.fromkeys(self.notes)]
        footer.append(f"- wall time of this run: {minutes:.1f} min (finished steps of earlier runs are skipped, not counted)")
        footer.append(f"- command: `{o.command or 'syntrans-reproduce ' + o.table}`")
        footer += deviation_lines(t, self.runs, o.datasets, o.smoke)  # every label of the data record the run read
        out_dir = o.results_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{o.table}.md"
        below = parser_score_lines(o.parser_scores, self.parser_scores) if self.parser_scores is not None else []
        path.write_text(render(t, self.runs, outcomes, header, footer, out_dir, below), encoding="utf-8")
        return path


def render(table: Table, runs: Table, outcomes, header: List[str], footer: List[str], out_dir: Path,
           below: List[str] = ()) -> str:
    """The results file of any kind of table (figures also write their PNG into ``out_dir``); ``below``: lines under
    the table (the parsers' scores): right under the cross kind's tables, else before the footer."""
    if table.kind == "cross":
        from .cross import cross_markdown

        return cross_markdown(table, outcomes, header, footer, out_dir / f"{table.key}.png", below=list(below))
    footer = list(below) + list(footer)
    if table.kind in ("bleu", "curve"):
        text = results_markdown(table, outcomes, header, footer)
        if table.kind == "curve":
            from .figures import curve_figure

            text += curve_figure(table, outcomes, out_dir / f"{table.key}.png")
        return text
    if table.kind == "time":
        from .timing import time_markdown

        return time_markdown(table, outcomes, header, footer)
    if table.kind == "length":
        from .figures import length_markdown

        return length_markdown(table, outcomes, header, footer, out_dir / f"{table.key}.png")
    if table.kind == "gates":
        from .figures import gates_markdown

        return gates_markdown(table, outcomes, header, footer, out_dir / f"{table.key}.png")
    raise RunError(f"{table.key}: unknown kind {table.kind!r}")


def unit_label(args: tuple) -> str:
    """A unit's stable name for the job ledger: table, smoke or not, dataset, system, seed (not the flags of the
    command, so that a re-run with other flags finds its jobs)."""
    opts, dataset, system, seed = args[:4]
    return f"{opts.table}{'/smoke' if opts.smoke else ''}/{dataset}/{_slug(system)}/seed{seed}"


def run_unit(opts: Options, dataset: str, system: str, seed: int, prepared) -> dict:
    """One (dataset, system, seed) of ``opts.table`` in any process (a cluster job): train, average, decode, score."""
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    return Reproduction(opts, log=lambda m: print(m, flush=True)).guarded_unit(dataset, system, seed, prepared)


def reproduce(opts: Options, log: Callable[[str], None] = print) -> Optional[Path]:
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    return Reproduction(opts, log).run()
