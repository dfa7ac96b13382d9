"""The order in which `make test` hands test files to its workers: longest first, by measured time.

pytest-xdist's ``--dist loadfile`` hands files to the workers in collection order, so a long file collected last
would leave one worker idle while the other finishes it. Each run records every file's time (setup, call and
teardown of its tests, summed) in pytest's cache; the next run sorts by it. A fresh clone has no cache: it reads
``tests/file_durations.json``, the times of a full run on our 2-core machines (`make test-durations` writes it from
the cache). A file measured nowhere (a new one) counts as :data:`UNMEASURED_SECONDS`, so it runs early rather than
last."""
import json
import sys
from pathlib import Path
from typing import Dict, Iterable, List

#: the committed per-file times, seconds (written by `make test-durations` from the cache of a full run)
COMMITTED = Path(__file__).with_name("file_durations.json")
#: the pytest cache key of the last run's per-file times
CACHE_KEY = "syntrans/file_durations"
#: the time assumed for a file no run has measured: long enough to put it among the first
UNMEASURED_SECONDS = 60.0


def load(cache) -> Dict[str, float]:
    """Per-file seconds: the committed file's, updated with the last run's (pytest cache, when there is one)."""
    durations: Dict[str, float] = {}
    if COMMITTED.exists():
        durations.update(json.loads(COMMITTED.read_text(encoding="utf-8")))
    if cache is not None:
        durations.update(cache.get(CACHE_KEY, {}))
    return durations


def ordered(items: List, durations: Dict[str, float]) -> List:
    """``items`` (pytest items) with their files longest first; a file's tests keep their order; ties keep the
    collection order (sorted() is stable)."""
    return sorted(items, key=lambda item: -durations.get(item.path.name, UNMEASURED_SECONDS))


class Recorder:
    """Sums each file's reported durations during a run (on xdist's controller the workers' reports arrive too) and
    stores them in pytest's cache at the end, when the run collected the whole suite (a run of a few files or
    tests keeps the times it did not measure)."""

    def __init__(self, cache):
        self.cache = cache
        self.seconds: Dict[str, float] = {}

    def add(self, nodeid: str, seconds: float) -> None:
        name = Path(nodeid.split("::", 1)[0]).name
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def save(self, names: Iterable[str]) -> None:
        """Store the times of the files in ``names`` (those that ran whole) over the cache's."""
        if self.cache is None:
            return
        stored = dict(self.cache.get(CACHE_KEY, {}))
        stored.update({n: round(self.seconds[n], 1) for n in names if n in self.seconds})
        self.cache.set(CACHE_KEY, stored)


def write_committed(cache_dir: Path = COMMITTED.parent.parent / ".pytest_cache") -> Dict[str, float]:
    """`make test-durations`: the cache's per-file times into :data:`COMMITTED`, longest first."""
    cached = cache_dir / "v" / CACHE_KEY
    if not cached.exists():
        raise SystemExit(f"file_order: {cached}: no per-file times; run `make test` first")
    times = json.loads(cached.read_text(encoding="utf-8"))
    times = dict(sorted(times.items(), key=lambda kv: (-kv[1], kv[0])))
    COMMITTED.write_text(json.dumps(times, indent=0) + "\n", encoding="utf-8")
    return times


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    print(f"file_order: {len(write_committed())} files' times written to {COMMITTED}")
