"""Units for tests/test_launcher.py: module-level functions a submitit job imports by name (the tests put this folder on
the jobs' PYTHONPATH). Each leaves files in ``folder`` that the test reads."""
import os
import time
from pathlib import Path


def record(folder: str, name: str, hold_s: float = 0.0) -> dict:
    """Write this process's pid to <name>.pid; fail when <name>.fail exists; else return what the process saw. While
    it holds (``hold_s``), <name>.running exists; it returns which other units' .running files it saw meanwhile."""
    here = Path(folder)
    (here / f"{name}.pid").write_text(str(os.getpid()))
    if (here / f"{name}.fail").exists():
        raise ValueError(f"unit {name} fails on purpose")
    running = here / f"{name}.running"
    running.write_text("")
    seen = set()
    deadline = time.monotonic() + hold_s
    while time.monotonic() < deadline:
        seen |= {p.stem for p in here.glob("*.running") if p != running}
        time.sleep(0.05)
    running.unlink()
    return {"name": name, "pid": os.getpid(), "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "saw": sorted(seen),
            "limit_s": os.environ.get("SUBMITIT_LOCAL_TIMEOUT_S")}  # the limit submitit-local's controller enforces


def blocked(folder: str, name: str) -> dict:
    """Write the pid, then wait (at most 5 minutes) until <folder>/go exists."""
    here = Path(folder)
    (here / f"{name}.pid").write_text(str(os.getpid()))
    deadline = time.monotonic() + 300
    while not (here / "go").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{here / 'go'} never appeared")
        time.sleep(0.05)
    return {"name": name, "pid": os.getpid()}
