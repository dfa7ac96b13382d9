"""The training part of a reproduction: one system and seed trained by fairseq-train with the config's flags, its
batch kept on any number of GPUs, marked done (``train.done``, written atomically) so that a re-run skips it; the
last epoch checkpoints averaged where the paper averages. A run stopped before its end (a killed job, a session's
end) resumes from its ``checkpoint_last.pt``; each resumed part's output is appended to ``train.resumed.log`` after a
header line, and ``train.done``'s ``seconds`` are the wall time of every part (the earlier ones read from their
logs' timestamps, the work a stop lost included). A part of
:class:`syntrans.reproduce.runner.Reproduction` (it reads ``opts``, ``runs``, ``user_dir``, ``log``)."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import List, Optional

from ..atomic_write import write_text
from .batching import world_size_of
from .config_file import ArgsFile, config_batch
from .run_commands import _run, _tool, device_name
from .smoke_flags import smoke_flags
from .tables import System
from .timing import RESUME_HEADER, earlier_parts


class Training:
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
        earlier = earlier_parts(run_dir) if resumed else []  # (seconds, …) of the parts before this one, from their logs
        t0 = time.time()
        header = f"{RESUME_HEADER} {time.strftime('%Y-%m-%d %H:%M:%S')}" if resumed else ""
        rss = _run(cmd, run_dir / ("train.resumed.log" if resumed else "train.log"), f"[{label}] fairseq-train", header)
        gpu = json.loads(gpu_file.read_text(encoding="utf-8"))["peak_gpu_bytes"] if gpu_file.exists() else {}
        seconds = time.time() - t0
        write_text(done, json.dumps({"command": cmd, "seconds": round(seconds + sum(earlier), 1),
                                     "last_part_seconds": round(seconds, 1), "parts": len(earlier) + 1,
                                     "device": device_name(), "resumed": resumed,
                                     "peak_rss_mb": None if rss is None else round(rss, 1),
                                     "peak_gpu_mb": round(max(gpu.values()) / 2 ** 20, 1) if gpu else None},
                                    indent=1))  # atomically: a half-written marker would read as a finished run
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
