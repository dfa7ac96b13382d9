"""Training-time tables (Hou et al. 2022 Table 4, Hou et al. gated Table 8, Bugliarello & Okazaki 2020 Table 6): our
measured training time per update and per epoch, read from each run's fairseq log, beside the published time, with
the device named.

fairseq's end-of-epoch line (``train | epoch 003 | … | num_updates 900 | … | train_wall 41 | … | wall 57``) gives
the updates so far and ``train_wall``, the seconds spent in training steps during that epoch (fairseq resets the
``train`` meters every epoch, and rounds it to whole seconds); ``num. model params: N`` gives the model's size. The
total is the wall time of the whole ``fairseq-train`` process (validation and checkpoints included), as the runner
measured it (``train.done``; a resumed run's: every part's, :func:`earlier_parts`). fairseq 0.12 logs the size as ``num. shared model params: N``.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

_EPOCH = re.compile(r"\| train \| epoch (\d+) \|(.*)$")
_FIELD = re.compile(r"\b([a-z_]+) ([-+0-9.eE]+)\b")
_PARAMS = re.compile(r"num\. (?:shared )?model params: ([\d,]+)")

#: seconds per unit of a published time
SECONDS = {"seconds": 1.0, "minutes": 60.0, "hours": 3600.0, "GPU-hours": 3600.0}


@dataclass(frozen=True)
class TrainingLog:
    epochs: int
    updates: int
    train_wall: float  # seconds in training steps, summed over the epochs (fairseq's train_wall)
    parameters: Optional[int]

    @property
    def per_update(self) -> Optional[float]:
        return self.train_wall / self.updates if self.updates else None

    @property
    def per_epoch(self) -> Optional[float]:
        return self.train_wall / self.epochs if self.epochs else None


#: the line before each resumed part of ``train.resumed.log`` (then its start time)
RESUME_HEADER = "== syntrans-reproduce: resumed from checkpoint_last.pt at"
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\b")


def earlier_parts(run_dir: Path) -> List[float]:
    """The wall seconds of each part of a run written so far: ``train.log`` and every part of ``train.resumed.log``
    (split at :data:`RESUME_HEADER` lines), each from its first to its last timestamped line (fairseq's simple
    format); a part with fewer than two timestamps counts 0."""
    import datetime

    parts: List[List[str]] = []
    for name in ("train.log", "train.resumed.log"):
        path = Path(run_dir) / name
        if not path.exists():
            continue
        chunks: List[List[str]] = [[]]
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(RESUME_HEADER):
                chunks.append([])
                continue
            m = _STAMP.match(line)
            if m:
                chunks[-1].append(m.group(1))
        parts += chunks[1:] if name == "train.resumed.log" and not chunks[0] else chunks  # a log before headers: one part
    out = []
    for stamps in parts:
        if len(stamps) < 2:
            out.append(0.0)
            continue
        first, last = (datetime.datetime.strptime(x, "%Y-%m-%d %H:%M:%S") for x in (stamps[0], stamps[-1]))
        out.append((last - first).total_seconds())
    return out


def read_training_log(*paths: Path) -> TrainingLog:
    """The epochs, updates, summed ``train_wall`` and parameter count of a fairseq-train log (simple format); a
    resumed run's logs are read in order (``train.log``, ``train.resumed.log``), each epoch counted once."""
    per_epoch: Dict[int, dict] = {}
    parameters = None
    for path in paths:
        if not Path(path).exists():
            continue
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
            m = _PARAMS.search(line)
            if m:
                parameters = int(m.group(1).replace(",", ""))
            m = _EPOCH.search(line)
            if m:
                per_epoch[int(m.group(1))] = {k: float(v) for k, v in _FIELD.findall(m.group(2))}
    if not per_epoch:
        raise ValueError(f"{', '.join(map(str, paths))}: no end-of-epoch line ('| train | epoch N | …'): not a finished "
                         "fairseq-train log in the simple format")
    last = per_epoch[max(per_epoch)]
    if "num_updates" not in last or any("train_wall" not in e for e in per_epoch.values()):
        raise ValueError(f"{paths[0]}: an end-of-epoch line without num_updates or train_wall")
    return TrainingLog(epochs=len(per_epoch), updates=int(last["num_updates"]),
                       train_wall=sum(e["train_wall"] for e in per_epoch.values()), parameters=parameters)


def _gpus(device: str) -> int:
    m = re.match(r"(\d+)× ", device)
    return int(m.group(1)) if m else 1


def _fmt(values: List[float], digits: int = 2) -> str:
    if not values:
        return "—"
    m = statistics.fmean(values)
    return f"{m:.{digits}f}" + (f" ± {statistics.stdev(values):.{digits}f}" if len(values) > 1 else "")


def time_markdown(table, outcomes: Dict[tuple, dict], header: List[str], footer: List[str]) -> str:
    """The training-time table: published time (the table's unit) and ours in the same unit (mean ± sd over seeds;
    GPU-hours count every device of the run), seconds per update and per epoch (fairseq's train_wall), the updates,
    the parameters (published where the paper gives them) and the device."""
    unit = table.unit or "seconds"
    scale = SECONDS[unit]
    lines = [f"# {table.title}", "", f"Paper: {table.paper}.", ""] + header + [""]
    lines += [f"| dataset | system | published ({unit}) | ours ({unit}) | ours s/update | ours s/epoch | updates | "
              "parameters (published / ours) | device |", "|---|---|---|---|---|---|---|---|---|"]
    for row in table.rows:
        for system in row.systems:
            got = outcomes.get((row.dataset.key, system.name), {})
            pub = "—" if system.published is None else f"{system.published:g}"
            pub_params = system.more("parameters")
            results = got.get("results")
            if not results:
                lines.append(f"| {row.dataset.title} | {system.name} | {pub} | not run: {got.get('skipped', 'not requested')} "
                             f"| | | | {'' if pub_params is None else f'{pub_params:,.0f} / —'} | |")
                continue
            logs = [read_training_log(Path(r["run_dir"]) / "train.log", Path(r["run_dir"]) / "train.resumed.log")
                    for r in results]
            devices = sorted({r["train"].get("device", "unknown") for r in results})
            totals = [r["train"]["seconds"] * (_gpus(r["train"].get("device", "")) if unit == "GPU-hours" else 1) / scale
                      for r in results]
            params = sorted({lg.parameters for lg in logs if lg.parameters is not None})
            ours_params = ", ".join(f"{p:,}" for p in params) or "—"
            lines.append(f"| {row.dataset.title} | {system.name} | {pub} | {_fmt(totals)} | "
                         f"{_fmt([lg.per_update for lg in logs if lg.per_update is not None], 3)} | "
                         f"{_fmt([lg.per_epoch for lg in logs if lg.per_epoch is not None], 1)} | "
                         f"{', '.join(str(lg.updates) for lg in logs)} | "
                         f"{'—' if pub_params is None else f'{pub_params:,.0f}'} / {ours_params} | {'; '.join(devices)} |")
    lines += ["", "- ours: the wall time of the whole fairseq-train process (validation and checkpoints included); "
              "s/update and s/epoch: fairseq's train_wall (seconds in training steps, whole seconds per epoch) over the "
              "updates and epochs. Times compare only on the same device and batch; the published ones name theirs in "
              "the notes."]
    lines += [f"- {n}" for n in table.notes] + footer
    return "\n".join(lines) + "\n"
