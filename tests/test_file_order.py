"""The test order `make test` uses (tests/file_order.py): files longest first by measured time, taken from the last
full run's cache over the committed times; a run of part of the suite keeps the times it did not measure."""
import json
from pathlib import Path
from types import SimpleNamespace

import file_order
import pytest

pytestmark = pytest.mark.fast


class DictCache:
    """pytest's cache interface (get/set), in memory."""

    def __init__(self, data=None):
        self.data = dict(data or {})

    def get(self, key, default):
        return self.data.get(key, default)

    def set(self, key, value):
        self.data[key] = value


def items(*nodeids):
    return [SimpleNamespace(path=Path("tests") / n.split("::")[0], nodeid=n) for n in nodeids]


def test_files_run_longest_first_and_keep_their_tests_order():
    its = items("test_a.py::x", "test_b.py::y", "test_a.py::z", "test_c.py::w")
    order = file_order.ordered(its, {"test_a.py": 5.0, "test_b.py": 30.0, "test_c.py": 12.0})
    assert [i.nodeid for i in order] == ["test_b.py::y", "test_c.py::w", "test_a.py::x", "test_a.py::z"]


def test_a_file_measured_nowhere_runs_among_the_first():
    its = items("test_short.py::a", "test_new.py::b", "test_long.py::c")
    durations = {"test_short.py": 1.0, "test_long.py": file_order.UNMEASURED_SECONDS + 1}
    assert [i.path.name for i in file_order.ordered(its, durations)] == ["test_long.py", "test_new.py",
                                                                          "test_short.py"]


def test_the_last_run_overrides_the_committed_times(tmp_path, monkeypatch):
    committed = tmp_path / "file_durations.json"
    committed.write_text(json.dumps({"test_a.py": 10.0, "test_b.py": 20.0}))
    monkeypatch.setattr(file_order, "COMMITTED", committed)
    cache = DictCache({file_order.CACHE_KEY: {"test_a.py": 40.0}})
    assert file_order.load(cache) == {"test_a.py": 40.0, "test_b.py": 20.0}
    assert file_order.load(None) == {"test_a.py": 10.0, "test_b.py": 20.0}


def test_the_recorder_sums_a_files_phases_and_keeps_the_times_it_did_not_measure():
    cache = DictCache({file_order.CACHE_KEY: {"test_old.py": 7.0, "test_a.py": 1.0}})
    rec = file_order.Recorder(cache)
    for nodeid, seconds in [("tests/test_a.py::x", 1.5), ("tests/test_a.py::x", 2.0), ("tests/test_b.py::y", 0.3)]:
        rec.add(nodeid, seconds)
    rec.save(rec.seconds)
    assert cache.data[file_order.CACHE_KEY] == {"test_old.py": 7.0, "test_a.py": 3.5, "test_b.py": 0.3}


def test_make_test_durations_writes_the_cache_longest_first(tmp_path, monkeypatch):
    cache_dir = tmp_path / ".pytest_cache"
    (cache_dir / "v" / "syntrans").mkdir(parents=True)
    (cache_dir / "v" / file_order.CACHE_KEY).write_text(json.dumps({"test_a.py": 2.0, "test_b.py": 9.0}))
    monkeypatch.setattr(file_order, "COMMITTED", tmp_path / "file_durations.json")
    file_order.write_committed(cache_dir)
    assert list(json.loads((tmp_path / "file_durations.json").read_text())) == ["test_b.py", "test_a.py"]
    with pytest.raises(SystemExit, match="no per-file times"):
        file_order.write_committed(tmp_path / "elsewhere")


def test_the_committed_times_name_only_files_of_the_suite():
    """A renamed or deleted test file must leave tests/file_durations.json (`make test-durations`)."""
    names = set(json.loads(file_order.COMMITTED.read_text(encoding="utf-8")))
    here = {p.name for p in Path(file_order.__file__).parent.glob("test_*.py")}
    assert names and names <= here, sorted(names - here)
