"""Run units of work here or as jobs (``--launcher`` of syntrans-reproduce, syntrans-prepare, syntrans-parse), through submitit.

A unit is a tuple of picklable arguments of a module-level function (``fn(*unit)`` returns a picklable result, a dict).
:func:`run_units` runs a list of them with one of three launchers:

``local``
    in this process, one after another (no submitit needed).
``slurm``
    one SLURM job per unit (sbatch, through ``submitit.AutoExecutor(cluster="slurm")``); with ``max_parallel`` the units
    go as one job array (``#SBATCH --array=0-N%max_parallel``). The job folder must be on a file system the compute
    nodes share: each job runs this Python (``sys.executable``) on the pickled unit and pickles its result there.
``submitit-local``
    submitit's local executor: each unit its own process on this machine (a controller ``python -m
    submitit.local._local`` and, under it, the unit's ``python -m submitit.core._submit``).

What each option does on which executor (submitit 1.5):

=================  =============================================  ==============================================
option             slurm                                          submitit-local
=================  =============================================  ==============================================
partition          ``#SBATCH --partition``                        refused (slurm only)
gpus_per_job       ``#SBATCH --gpus-per-node``                    ``CUDA_VISIBLE_DEVICES`` of each unit: the first
                                                                  N of this process's GPUs, the same for every unit;
                                                                  unset: all of this process's GPUs
cpus_per_job       ``#SBATCH --cpus-per-task``                    ignored (no CPU binding)
time_min           ``#SBATCH --time`` (default one day)           the unit is killed after it (default one day)
mem_gb             ``#SBATCH --mem``                              ignored (no memory limit)
max_parallel       the array's ``%N``                             enforced here: with ``wait``, the next unit
                                                                  starts when one ends; without, only N start and
                                                                  a re-run starts the rest
slurm_extra        ``#SBATCH --KEY=VALUE`` each                   refused (slurm only)
=================  =============================================  ==============================================

Re-running: a unit ``done(unit)`` says finished is not submitted (the log says skipped). Every submitted unit is
recorded in ``<folder>/ledger.json`` (its label → job id, executor), written right after submission; on a re-run a
recorded job is reattached instead of submitted again: finished with a result → its result is collected; failed, or
ended without a result → submitted again; still running → waited for (``wait``) or reported as still running.
Whether a recorded job still runs is asked of SLURM (``sacct``, through ``submitit.SlurmJob``) for slurm; for
submitit-local, where ``submitit.LocalJob`` rebuilt from an id cannot tell (without its process object it reports any
job without a result as finished), it is whether the controller process (the job id is its pid) is alive, read from
``/proc/<pid>`` (elsewhere: whether the pid exists). Delete the ledger (or the unit's line in it) to run a
recorded unit again.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..atomic_write import atomic_file

LAUNCHERS = ("local", "slurm", "submitit-local")
CLUSTER = {"slurm": "slurm", "submitit-local": "local"}  # launcher → submitit's executor name
DEFAULT_TIME_MIN = 24 * 60  # submitit's own defaults (5 min on slurm, 2 min locally) would kill any training
POLL_S = {"slurm": 5.0, "local": 0.2}  # seconds between checks while waiting (slurm: sacct at most every 10 min)
TAIL_LINES = 25
INSTALL_HINT = "pip install syntrans[cluster]"


class LaunchError(RuntimeError):
    """A launcher that cannot start, or units whose jobs failed (the message names each with its log)."""


@dataclass
class LaunchOptions:
    """How the units run (see the module docstring for what each option does on which executor)."""
    launcher: str = "local"  # local | slurm | submitit-local
    folder: Optional[Path] = None  # submitit's folder: jobs' pickles, logs and ledger.json (the CLI: <work_dir>/jobs)
    partition: Optional[str] = None
    gpus_per_job: Optional[int] = None
    cpus_per_job: Optional[int] = None
    time_min: int = DEFAULT_TIME_MIN
    mem_gb: Optional[float] = None
    max_parallel: Optional[int] = None  # None: no limit (slurm: submitit's array default of 256)
    wait: bool = True  # False: submit and return; re-running the same command collects
    slurm_extra: Dict[str, str] = field(default_factory=dict)  # KEY → VALUE: #SBATCH --KEY=VALUE

    def __post_init__(self):
        if self.launcher not in LAUNCHERS:
            raise LaunchError(f"unknown launcher {self.launcher!r}: expected one of {', '.join(LAUNCHERS)}")
        for name in ("gpus_per_job", "cpus_per_job", "max_parallel"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < (0 if name == "gpus_per_job" else 1)):
                raise LaunchError(f"{name} must be an integer >= {0 if name == 'gpus_per_job' else 1}, found {value!r}")
        if not (isinstance(self.time_min, int) and self.time_min >= 1):
            raise LaunchError(f"time_min must be an integer >= 1 (minutes), found {self.time_min!r}")
        if self.mem_gb is not None and not self.mem_gb > 0:
            raise LaunchError(f"mem_gb must be > 0, found {self.mem_gb!r}")
        if self.launcher == "submitit-local" and (self.partition or self.slurm_extra):
            raise LaunchError("a partition and extra slurm parameters go with the slurm launcher, not submitit-local")
        if self.folder is not None:
            self.folder = Path(self.folder)


def parse_extra(items: Sequence[str]) -> Dict[str, str]:
    """``["account=nlp", "qos=high"]`` → {"account": "nlp", "qos": "high"} (``--slurm-extra``), naming a bad item."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lstrip("-")
        if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key) or not value:
            raise LaunchError(f"expected KEY=VALUE (an sbatch option without its dashes, e.g. account=nlp), found {item!r}")
        out[key] = value
    return out


def require_submitit(launcher: str):
    """The submitit module, or a LaunchError saying how to install it (``launcher``: the one that needs it)."""
    try:
        import submitit
    except ImportError:
        raise LaunchError(f"--launcher {launcher} needs submitit, which is not installed: {INSTALL_HINT}") from None
    return submitit


def default_label(unit: tuple) -> str:
    """A unit's name for the log, the job name and the ledger: the repr of its arguments."""
    return ", ".join(map(repr, unit))


def run_units(fn: Callable[..., Any], units: Sequence[tuple], opts: LaunchOptions,
              done: Optional[Callable[[tuple], bool]] = None, log: Callable[[str], None] = print,
              label: Callable[[tuple], str] = default_label, load: Optional[Callable[..., Any]] = None) -> List[Any]:
    """Run ``fn(*unit)`` for every unit with ``opts.launcher`` and return the results in unit order.

    ``done(unit)``: the unit finished before (its results are on disk): not run, not submitted; its entry is
    ``load(*unit)``, called here (e.g. ``fn`` itself when a finished unit only reads its files), or None without
    ``load``. ``label(unit)``: the unit's name in the log, its job name and its ledger key (with ``fn``'s name), so it
    must be unique among the units and the same on a re-run (the default, the repr of the arguments, changes when an
    argument carries settings that change between runs: pass a label then). Without ``opts.wait`` the entries of
    units still running are None: the caller tells a complete run by ``done`` afterwards. With ``wait``, units whose
    jobs failed raise one LaunchError, after all have ended, naming each with its stderr log and the log's end.
    """
    if opts.launcher != "local":
        require_submitit(opts.launcher)  # before anything runs or loads
    units = [tuple(u) for u in units]
    results: List[Any] = [None] * len(units)
    todo = []
    for i, unit in enumerate(units):
        if done is not None and done(unit):
            log(f"skipped {label(unit)}: finished before")
            if load is not None:
                results[i] = load(*unit)
        else:
            todo.append(i)
    if opts.launcher == "local":
        for i in todo:
            results[i] = fn(*units[i])
        return results
    return _Jobs(fn, units, opts, log, label).run(todo, results)


class _Ledger:
    """``<folder>/ledger.json``: ledger key → {"job_id", "cluster", "label", "submitted"}. Re-read before each write
    (another run may share the folder) and replaced atomically."""

    def __init__(self, folder: Path):
        self.path = folder / "ledger.json"

    def read(self) -> Dict[str, dict]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise LaunchError(f"{self.path}: not a JSON ledger ({e}); delete it to forget the recorded jobs") from None
        if not isinstance(data, dict):
            raise LaunchError(f"{self.path}: expected a JSON object (unit → job), found {type(data).__name__}")
        return data

    def record(self, entries: Dict[str, dict]) -> None:
        data = self.read()
        data.update(entries)
        with atomic_file(self.path, suffix=f".{os.getpid()}.tmp") as f:  # one temporary file per process
            f.write(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _local_alive(job_id: str) -> bool:
    """Whether submitit-local's controller ``job_id`` (its pid) still runs. With /proc: the process exists, is no
    zombie (/proc/<pid>/stat), and its /proc/<pid>/cmdline names submitit's local controller, or is empty (as it is
    for a moment while the controller starts); without /proc, whether the pid exists."""
    proc = Path("/proc") / job_id
    if Path("/proc/self/stat").exists():
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (proc / "cmdline").read_bytes()
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X") and (not cmdline or b"submitit.local._local" in cmdline)
    try:
        os.kill(int(job_id), 0)
    except (OSError, ValueError):
        return False
    return True


def _tail(text: Optional[str]) -> str:
    lines = (text or "").splitlines()[-TAIL_LINES:]
    return "\n".join(lines) if lines else "(empty)"


class _Jobs:
    """The submitit launchers: submission, the ledger, reattaching, waiting and collecting."""

    def __init__(self, fn, units, opts: LaunchOptions, log, label):
        if opts.folder is None:
            raise LaunchError("LaunchOptions.folder is not set: the folder for submitit's jobs (e.g. <work_dir>/jobs)")
        self.submitit = require_submitit(opts.launcher)
        self.fn, self.units, self.opts, self.log, self.label = fn, units, opts, log, label
        self.cluster = CLUSTER[opts.launcher]
        self.folder = opts.folder.absolute()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ledger = _Ledger(self.folder)
        self.fn_name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        self.executor = self._executor()

    # ---- keys and the executor
    def key(self, i: int) -> str:
        name = self.label(self.units[i])
        if re.search(r" at 0x[0-9a-fA-F]+>", name):
            raise LaunchError(f"unit {i}'s label {name!r} holds a memory address, which changes on a re-run: the ledger "
                              "could not recognise the unit; pass label= to run_units")
        return f"{self.fn_name}: {name}"

    def _executor(self):
        """slurm: ``AutoExecutor(cluster="slurm")`` with its generic parameters (timeout_min → --time, mem_gb → --mem,
        …) and the slurm_ ones. submitit-local: ``LocalExecutor`` itself, since AutoExecutor refuses its
        ``visible_gpus`` (the ids it writes into each unit's CUDA_VISIBLE_DEVICES, else 0…N-1)."""
        o = self.opts
        if self.cluster == "local":
            visible = _visible_gpus()
            if o.gpus_per_job is not None and o.gpus_per_job > len(visible):
                raise LaunchError(f"--gpus-per-job {o.gpus_per_job}, but this process sees {len(visible)} GPU(s) "
                                  f"{visible}")
            ex = self.submitit.LocalExecutor(folder=self.folder)
            ex.update_parameters(timeout_min=o.time_min, visible_gpus=visible,
                                 gpus_per_node=len(visible) if o.gpus_per_job is None else o.gpus_per_job)
            return ex
        try:
            ex = self.submitit.AutoExecutor(folder=self.folder, cluster="slurm")
        except RuntimeError as e:  # SlurmExecutor: 'Could not detect "srun", are you indeed on a slurm cluster?'
            raise LaunchError(f"--launcher slurm: submitit cannot start its slurm executor: {e}") from None
        params: Dict[str, Any] = {"timeout_min": o.time_min, "cpus_per_task": o.cpus_per_job, "mem_gb": o.mem_gb,
                                  "gpus_per_node": o.gpus_per_job, "slurm_partition": o.partition,
                                  "slurm_array_parallelism": o.max_parallel,
                                  "slurm_additional_parameters": dict(o.slurm_extra) or None}
        ex.update_parameters(**{k: v for k, v in params.items() if v is not None})
        return ex

    def job_name(self, i: int) -> str:
        return "syntrans-" + re.sub(r"[^A-Za-z0-9._-]+", "_", self.label(self.units[i])).strip("_")[:100]

    # ---- reattaching
    def reattach(self, entry: dict):
        cls = self.submitit.SlurmJob if entry.get("cluster") == "slurm" else self.submitit.LocalJob
        return cls(folder=self.folder, job_id=str(entry["job_id"]))

    def ended(self, job, cluster: str, fresh: bool) -> bool:
        """Whether ``job`` has ended (with or without a result)."""
        if job.paths.result_pickle.exists():
            return True
        if cluster == "local" and not fresh:
            return not _local_alive(job.job_id)
        return job.done()

    def failure(self, i: int, job, cluster: str) -> Optional[str]:
        """None when the ended job left a result; else what went wrong, with its stderr log and the log's end."""
        if cluster == "local" and not job.paths.result_pickle.exists():
            why = "ended without a result (killed?)"  # submitit would wait 15 s for the pickle first
        else:
            from submitit.core.utils import FailedJobError

            exc = job.exception()
            if exc is None:
                return None
            why = "failed" if isinstance(exc, FailedJobError) else "ended without a result"
        return (f"{self.label(self.units[i])}: job {job.job_id} {why}; log {job.paths.stderr}\n"
                f"--- end of the log ---\n{_tail(job.stderr())}")

    # ---- the run
    def run(self, todo: List[int], results: List[Any]) -> List[Any]:
        keys = [self.key(i) for i in todo]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise LaunchError(f"units share a label, so the ledger could not tell them apart: {twice}")
        recorded = self.ledger.read()
        running: Dict[int, tuple] = {}  # unit index → (job, cluster, fresh)
        queue: List[int] = []
        failures: List[str] = []
        for i in todo:
            entry = recorded.get(self.key(i))
            if entry is None:
                queue.append(i)
                continue
            job, cluster = self.reattach(entry), entry.get("cluster", self.cluster)
            if not self.ended(job, cluster, fresh=False):
                self.log(f"{self.label(self.units[i])}: still running as job {job.job_id} (submitted "
                         f"{entry.get('submitted', '?')}); log {job.paths.stdout}")
                running[i] = (job, cluster, False)
                continue
            why = self.failure(i, job, cluster)
            if why is None:
                results[i] = job.result()
                self.log(f"{self.label(self.units[i])}: collected the result of job {job.job_id}")
            else:
                self.log(f"{why}\n{self.label(self.units[i])}: submitting it again")
                queue.append(i)
        queue = self.submit(queue, running)
        if not self.opts.wait:
            if queue:
                self.log(f"{len(queue)} unit(s) wait for a free slot (--max-parallel {self.opts.max_parallel}): "
                         "re-run the same command to submit them")
            if running:
                self.log(f"{len(running)} job(s) running, logs in {self.folder}: re-run the same command to collect")
            return results
        while running or queue:
            time.sleep(POLL_S[self.cluster])
            for i, (job, cluster, fresh) in list(running.items()):
                if not self.ended(job, cluster, fresh):
                    continue
                del running[i]
                why = self.failure(i, job, cluster)
                if why is None:
                    results[i] = job.result()
                    self.log(f"{self.label(self.units[i])}: job {job.job_id} finished")
                else:
                    self.log(why.splitlines()[0])  # the log's end comes with the error, once
                    failures.append(why)
            queue = self.submit(queue, running)
        if failures:
            raise LaunchError(f"{len(failures)} of {len(todo)} unit(s) failed:\n\n" + "\n\n".join(failures))
        return results

    def submit(self, queue: List[int], running: Dict[int, tuple]) -> List[int]:
        """Submit what may start now (submitit-local: up to max_parallel running); return the units left waiting."""
        if not queue:
            return queue
        n = len(queue)
        if self.cluster == "local" and self.opts.max_parallel is not None:
            n = max(0, self.opts.max_parallel - len(running))
        now, rest = queue[:n], queue[n:]
        if not now:
            return rest
        if self.cluster == "slurm" and self.opts.max_parallel is not None and len(now) > 1:
            self.executor.update_parameters(name="syntrans-" + self.fn_name.rsplit(".", 1)[-1])
            with self.executor.batch():  # one job array: --array=0-N%max_parallel
                jobs = [self.executor.submit(self.fn, *self.units[i]) for i in now]
        else:
            jobs = []
            for i in now:
                self.executor.update_parameters(name=self.job_name(i))
                jobs.append(self.executor.submit(self.fn, *self.units[i]))
        stamp = datetime.datetime.now().isoformat(timespec="seconds")
        self.ledger.record({self.key(i): {"job_id": job.job_id, "cluster": self.cluster, "submitted": stamp,
                                          "label": self.label(self.units[i])} for i, job in zip(now, jobs)})
        for i, job in zip(now, jobs):
            running[i] = (job, self.cluster, True)
            self.log(f"{self.label(self.units[i])}: submitted as job {job.job_id} ({self.opts.launcher}); "
                     f"log {job.paths.stdout}")
        return rest


def _visible_gpus() -> List[int]:
    """This process's GPUs as submitit-local's ``visible_gpus`` (integer ids, which submitit-local writes into each
    unit's CUDA_VISIBLE_DEVICES): CUDA_VISIBLE_DEVICES when set, else torch's device count (none without torch)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        ids = [x.strip() for x in env.split(",") if x.strip()]
        if not all(x.isdigit() for x in ids):
            raise LaunchError(f"CUDA_VISIBLE_DEVICES={env!r} names devices other than by index, which submitit-local "
                              "cannot pass on (it sets each unit's CUDA_VISIBLE_DEVICES to indices): use indices")
        return [int(x) for x in ids]
    try:
        import torch
        return list(range(torch.cuda.device_count()))
    except Exception:  # no torch, or a broken CUDA setup: no GPU for the units
        return []
