"""Done-markers of the pipeline steps: ``OUT/.done/<step>.json``.

A marker holds the step's ``settings`` (everything its output depends on), its ``outputs`` (paths
relative to OUT), an ``info`` dict (counts, parsers used, …) that later steps and the summary read, and
a random ``id``. A step's settings include the ``id`` of the marker of every step it reads from (key
``after``), so a redone step makes the settings of every step depending on it differ: a change cannot
be skipped past, even after a crash between two steps. A step is finished when its marker exists, its settings equal
the current ones and all its outputs exist; the pipeline then skips it. Markers are written
atomically, after the step's outputs.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path

from ..atomic_write import atomic_file

DONE_DIR = ".done"


def normalise(obj):
    """``obj`` as JSON would give it back (tuples become lists, keys strings), for comparisons."""
    return json.loads(json.dumps(obj, sort_keys=True))


def marker_file(out_dir: Path, step: str) -> Path:
    return out_dir / DONE_DIR / f"{step}.json"


def load(out_dir: Path, step: str) -> dict | None:
    """The marker of ``step``, or None when missing or unreadable."""
    try:
        with open(marker_file(out_dir, step), encoding="utf-8") as f:
            m = json.load(f)
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) and {"settings", "outputs", "info", "id"} <= set(m) else None


def save(out_dir: Path, step: str, settings: dict, outputs: list[str], info: dict, run_id: str | None = None) -> str:
    """Write the marker of a finished step; returns its id (``run_id``, else a new random one)."""
    run_id = run_id or uuid.uuid4().hex
    path = marker_file(out_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as f:
        json.dump({"step": step, "id": run_id, "settings": normalise(settings), "outputs": outputs,
                   "info": normalise(info)}, f, indent=1, sort_keys=True)
        f.write("\n")
    return run_id


def clear(out_dir: Path, step: str) -> None:
    marker_file(out_dir, step).unlink(missing_ok=True)


def check(out_dir: Path, step: str, settings: dict) -> tuple[bool, str | None]:
    """(finished, why not; None when it never ran) for ``step`` with ``settings``."""
    m = load(out_dir, step)
    if m is None:
        return False, None
    now = normalise(settings)
    if m["settings"] != now:
        keys = sorted(k for k in set(now) | set(m["settings"]) if now.get(k) != m["settings"].get(k))
        if keys == ["after"]:
            return False, "a step it reads from was redone"
        return False, f"its settings changed ({', '.join(k for k in keys if k != 'after')})"
    missing = [p for p in m["outputs"] if not (out_dir / p).exists()]
    if missing:
        return False, f"{out_dir / missing[0]} is missing"
    return True, None
