"""The commands a reproduction starts (fairseq-train, fairseq-generate, syntrans-average-checkpoints: this
environment's, or ``$SYNTRANS_BIN``'s), how it runs one with its log, and the device a training ran on."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

from .run_options import RunError


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


def _run(cmd: List[str], log_path: Path, what: str, header: str = "") -> Optional[float]:
    """Run ``cmd`` with its output in ``log_path``; its peak resident memory in MB (the process and the processes it
    waited for, from ``os.wait4``; None where the platform has no wait4). RunError with the log's end on failure.
    With a ``header`` line the output is appended after it (the log of an earlier run kept), else the log is new."""
    with open(log_path, "a" if header else "w", encoding="utf-8") as log:
        if header:
            log.write(header + "\n")
            log.flush()
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
