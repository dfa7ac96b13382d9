"""One writer per data-bin: the lock file of ``syntrans-preprocess`` in ``--destdir``, and the staging folders a killed
run leaves there.

:class:`DestdirLock` creates ``.syntrans-preprocess.lock`` (exclusively: two runs cannot both create it) holding the
process id, the host and the start time, and removes it when the run ends. A second run into the same folder while the
first runs is refused, naming the running process. A lock whose process no longer runs on this host (a run that was
killed) is taken over, and said so. Holding the lock, :func:`leftover_staging` finds the staging folders
(``.binarized-*``, ``.sidecars-*``) that a killed run left: no other run can be writing them.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import time
from typing import Callable, List, Optional

LOCK_NAME = ".syntrans-preprocess.lock"
STAGING_PREFIXES = (".binarized-", ".sidecars-")


class DestdirBusy(ValueError):
    """Another run is writing into the data-bin; the message names it."""


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # runs, as another user
        return True
    return True


class DestdirLock:
    """The lock of ``folder`` (module docs), as a context manager; ``log`` gets the line saying a stale lock was
    taken over."""

    def __init__(self, folder: str, log: Callable[[str], None] = lambda message: None):
        self.path = os.path.join(folder, LOCK_NAME)
        self.log = log
        self.held = False

    def holder(self) -> Optional[dict]:
        """What the lock file says (pid, host, started), or None when there is none or it cannot be read."""
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def acquire(self) -> None:
        """Create the lock file, or raise :class:`DestdirBusy` naming the run that holds it."""
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        for _ in range(2):  # a second try after taking over a stale lock
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                other = self.holder() or {}
                pid, host = other.get("pid"), other.get("host")
                if isinstance(pid, int) and host == me["host"] and not _alive(pid):
                    os.remove(self.path)
                    self.log(f"[syntrans] {self.path}: the lock of a run that no longer runs (pid {pid}, started "
                             f"{other.get('started')}) is taken over")
                    continue
                who = (f"process {pid} on {host}, started {other.get('started')}" if pid else
                       "a run whose lock file cannot be read")
                raise DestdirBusy(f"{os.path.dirname(self.path)}: another syntrans-preprocess is writing into this "
                                  f"data-bin ({who}; lock file {self.path}): wait for it to end, or choose another "
                                  "--destdir (remove the lock file only if that run is gone)") from None
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(me, f)
            self.held = True
            return
        raise DestdirBusy(f"{self.path}: cannot take over the lock file")

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass

    def __enter__(self) -> "DestdirLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def leftover_staging(folder: str) -> List[str]:
    """The staging folders in ``folder`` (only runs holding its lock write them: these were left by a killed run)."""
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    return [os.path.join(folder, n) for n in names if n.startswith(STAGING_PREFIXES) and
            os.path.isdir(os.path.join(folder, n))]


def remove_leftover_staging(folder: str, log: Callable[[str], None]) -> List[str]:
    """Remove the staging folders a killed run left in ``folder`` (call it holding the lock); each is logged."""
    found = leftover_staging(folder)
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    if found:
        log(f"[syntrans] removed the staging folders of an earlier run that stopped before it ended: "
            f"{', '.join(os.path.basename(p) for p in found)}")
    return found


__all__ = ["DestdirBusy", "DestdirLock", "LOCK_NAME", "leftover_staging", "remove_leftover_staging"]
