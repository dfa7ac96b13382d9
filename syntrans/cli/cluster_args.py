"""The cluster flags that ``syntrans-reproduce``, ``syntrans-prepare`` and ``syntrans-parse`` share: which launcher runs
the units (:mod:`syntrans.jobs.launcher`) and what each job asks for. No submitit import (``--help``)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..jobs.launcher import DEFAULT_TIME_MIN, LAUNCHERS, LaunchError, LaunchOptions, parse_extra, require_submitit
from .argtypes import positive_int

#: option attribute → its flag (refused with --launcher local)
CLUSTER_FLAGS = {"slurm_partition": "--slurm-partition", "gpus_per_job": "--gpus-per-job", "cpus_per_job": "--cpus-per-job",
                 "time_min": "--time-min", "mem_gb": "--mem-gb", "max_parallel": "--max-parallel", "no_wait": "--no-wait",
                 "slurm_extra": "--slurm-extra"}


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, found {value}")
    return value


def add_cluster_args(p: argparse.ArgumentParser, units: str, folder: str) -> argparse._ArgumentGroup:
    """The ``--launcher`` group; ``units``: what runs as a job (for the help), ``folder``: where the jobs' files go."""
    g = p.add_argument_group("cluster jobs", f"{units} as its own job through submitit (pip install syntrans[cluster]); "
                                             f"logs, pickles and the ledger in {folder}")
    g.add_argument("--launcher", choices=LAUNCHERS, default="local", help="local: here, one after another (default); "
                   "slurm: SLURM jobs; submitit-local: a process each on this machine")
    g.add_argument("--slurm-partition", default=None, help="the jobs' partition")
    g.add_argument("--gpus-per-job", type=_count, default=None, help="GPUs per job (submitit-local: default all it sees)")
    g.add_argument("--cpus-per-job", type=positive_int, default=None, help="CPUs per job (slurm)")
    g.add_argument("--time-min", type=positive_int, default=None,
                   help=f"a job's time limit in minutes (default {DEFAULT_TIME_MIN}: a day)")
    g.add_argument("--mem-gb", type=float, default=None, help="memory per job in GB (slurm)")
    g.add_argument("--max-parallel", type=positive_int, default=None, help="jobs running at once (slurm: one job array)")
    g.add_argument("--no-wait", action="store_true", help="submit the jobs and return; run the same command again "
                   "to collect their results (jobs still running are not submitted twice)")
    g.add_argument("--slurm-extra", action="append", default=[], metavar="KEY=VALUE",
                   help="an extra #SBATCH --KEY=VALUE line (repeatable), e.g. account=nlp")
    return g


def launch_options(args: argparse.Namespace, folder: Path) -> LaunchOptions:
    """The LaunchOptions of the cluster flags, jobs' files in ``folder``; LaunchError when they do not fit the launcher
    or submitit is missing."""
    if args.launcher == "local":
        given = [flag for key, flag in CLUSTER_FLAGS.items() if getattr(args, key) not in (None, False, [])]
        if given:
            raise LaunchError(f"{', '.join(given)} go(es) with --launcher slurm or submitit-local")
    else:
        require_submitit(args.launcher)
    return LaunchOptions(launcher=args.launcher, folder=Path(folder), partition=args.slurm_partition,
                         gpus_per_job=args.gpus_per_job, cpus_per_job=args.cpus_per_job,
                         time_min=args.time_min or DEFAULT_TIME_MIN,
                         mem_gb=args.mem_gb, max_parallel=args.max_parallel, wait=not args.no_wait,
                         slurm_extra=parse_extra(args.slurm_extra))
