"""Every shard of one or more parses as units of the job launcher (:mod:`syntrans.jobs.launcher`):
``syntrans-parse --num-shards N`` without ``--shard-id``, ``syntrans-prepare`` and ``syntrans-reproduce``.

A unit is one shard, ``(ParseJob,)``, run by :func:`parse_unit` (:func:`~syntrans.parsing.driver.parse_job`) here
(``local``, one after another), as SLURM jobs (``slurm``) or as processes of this machine (``submitit-local``). A shard
finished before from the same input content with every view asked for is not submitted; a shard that died resumes
from its checkpoint when its job runs again. A unit's label names its output, its shard, the input's content (a
prefix of its sha256) and the views, so that the launcher's ledger never hands back a job of other text or views.
When every unit has finished, each output is merged from its shards (:func:`~syntrans.parsing.driver.merge_finished`)
here: the file is identical to a one-process run's.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ..data.parse_views import format_views, parse_views
from .driver import ParseJob, content_settings, merge_finished, parse_job, shard_is_finished
from .shards import read_marker, scan_input


def parse_unit(job: ParseJob) -> dict:
    """One shard in any process (a cluster job): :func:`parse_job`, its messages printed; returns its marker."""
    return parse_job(job, log=lambda m: print(f"syntrans-parse: {m}", flush=True))


def shard_jobs(job: ParseJob) -> list[ParseJob]:
    """The ``job.num_shards`` shards of ``job``, one ParseJob each."""
    return [dataclasses.replace(job, shard_id=k) for k in range(job.num_shards)]


def parse_sharded(jobs: Sequence[ParseJob], launch, log: Callable[[str], None] = print) -> bool:
    """Parse every shard of every job (its ``num_shards``; ``shard_id`` is ignored) with the launcher options
    ``launch`` (:class:`~syntrans.jobs.launcher.LaunchOptions`), then merge each output. Returns False when jobs
    are still running (``launch.wait`` off): run again to collect and merge; True when every output is merged."""
    from ..jobs.launcher import run_units  # lazy: submitit only where a launcher needs it

    scans, units, labels = {}, [], {}
    for job in jobs:
        scans[job.input] = scans.get(job.input) or scan_input(job.input)
        n_lines, digest = scans[job.input]
        content = content_settings(job, digest)
        for shard in shard_jobs(job):
            label = (f"parse {shard.output} shard {shard.shard_id + 1} of {shard.num_shards}, input "
                     f"{digest[:12]}, views {format_views(parse_views(shard.views))}")
            units.append((shard,))
            labels[id(shard)] = (label, content, n_lines)

    def done(unit) -> bool:
        shard = unit[0]
        _, content, n_lines = labels[id(shard)]
        return not shard.force and shard_is_finished(shard, content, n_lines)

    local = getattr(launch, "launcher", "local") == "local"
    fn = (lambda shard: parse_job(shard, log=log)) if local else parse_unit  # a job runs a module-level function
    results = run_units(fn, units, launch, done=done, log=log, label=lambda unit: labels[id(unit[0])][0])
    finished = all(r is not None or done(u) for u, r in zip(units, results))
    if not finished:
        running = sum(r is None and not done(u) for u, r in zip(units, results))
        log(f"parse: {running} of {len(units)} shards still running as jobs; run the same command again to collect "
            "them and merge")
        return False
    for job in jobs:
        if job.num_shards > 1:
            merge_finished(job.output, job.num_shards, explicit=False, log=log)
            merged = read_marker(job.output)
            if not (merged and merged.get("merged_from") == job.num_shards
                    and set(parse_views(job.views)) <= set(merged.get("views", ()))):
                merge_finished(job.output, job.num_shards, explicit=True, log=log)  # or the error saying why not
    return True
