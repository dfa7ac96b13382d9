"""Rebuild one published table or figure: prepare each dataset, train every system over the seeds, (average
checkpoints), decode the table's split with the paper's beam and length penalty, score detokenized output with
sacreBLEU (RIBES where the paper reports it; chrF++ for the cross kind), test every system against the row's reference
with sacreBLEU's paired bootstrap, and write results/<table>.md (and the figure's PNG beside it). Every step is skipped
when it finished before (and says so), so a re-run resumes a job.

The work is a list of units, one (dataset, system, seed) each: train, average, decode, score (:func:`run_unit`, a
module-level function a cluster job can run). The data of every unit is prepared first, by this process; the units then
run here one after another (``--launcher local``) or as jobs (:mod:`syntrans.jobs.launcher`); the table is written
from what the units left on disk. :class:`Reproduction` plans and runs; its parts are in their own files: the data
(:mod:`.run_data`), training (:mod:`.run_training`), scoring (:mod:`.run_scoring`) and the results file
(:mod:`.run_report`)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..prep.errors import PrepError
from ..prep.parse_step import PrepPending
from .config_file import ConfigError, read_args_file
from .parser_report import ParserScoresError, read_parser_scores
from .published_data import data_settings
from .run_commands import BIN_ENV, _run, _tool, device_name  # noqa: F401  (the runner's commands, imported from here)
from .run_data import DataRequests
from .run_options import (ALL_SYSTEMS, DECODED_KINDS, Options, RunError, TableIncomplete, _plain,  # noqa: F401
                          _slug, failure_summary, resolve_names)
from .run_report import Reporting, render  # noqa: F401
from .run_scoring import Scoring
from .run_training import Training
from .scoring import TokenizerMissing, check_tokenizer, sacrebleu_tokenizer
from .smoke_flags import SMOKE_MODEL, _last_value, smoke_flags, smoke_layers  # noqa: F401
from .tables import TABLES, Dataset, Row, System, Table


class Reproduction(DataRequests, Training, Scoring, Reporting):
    """One table's run: its options, what it learned on the way (data facts, parsers, signatures, protocols,
    failures) and the plan of its units; the data, training, scoring and report parts are its bases."""

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
