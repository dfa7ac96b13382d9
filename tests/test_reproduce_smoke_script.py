"""make reproduce-smoke (scripts/reproduce_smoke.sh): every registered table and figure, each on its first dataset with
one seed on the synthetic corpus. A stand-in syntrans-reproduce records how it is called, so this checks the loop
without training anything (tests/test_reproduce_smoke.py runs a real one)."""
import os
import subprocess
import sys
from pathlib import Path

from syntrans.reproduce.tables import TABLES

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "reproduce_smoke.sh"


def _stand_in(tmp_path: Path, fail_on: str = "") -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "syntrans-reproduce"
    tool.write_text("#!/usr/bin/env bash\n"
                    f'echo "$*" >> "{tmp_path}/calls.txt"\n'
                    f'echo "${{OMP_NUM_THREADS:-unset}}" >> "{tmp_path}/threads.txt"\n'
                    + (f'[[ "$1" == "{fail_on}" ]] && {{ echo boom; exit 3; }}\n' if fail_on else "")
                    + "exit 0\n")
    tool.chmod(0o755)
    python = bin_dir / "python"  # the Python next to syntrans-reproduce, as in a venv
    python.write_text(f'#!/usr/bin/env bash\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return bin_dir


def _run(tmp_path: Path, bin_dir: Path, **env):
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env})


def test_every_table_runs_once_on_its_first_dataset(tmp_path):
    bin_dir = _stand_in(tmp_path)
    done = _run(tmp_path, bin_dir, SMOKE_DIR=str(tmp_path / "out"), SMOKE_UPDATES="17")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = [line.split() for line in (tmp_path / "calls.txt").read_text().splitlines()]
    assert [c[0] for c in calls] == list(TABLES)
    for call in calls:
        t = TABLES[call[0]]
        flag = lambda name: call[call.index(name) + 1]  # noqa: E731
        assert "--smoke" in call and "--synthetic" in call
        assert flag("--datasets") == t.rows[0].dataset.key and flag("--seeds") == "1" and flag("--smoke-updates") == "17"
        assert flag("--results-dir") == str(tmp_path / "out" / "results")


def test_a_failing_table_is_named_and_the_others_still_run(tmp_path):
    second = list(TABLES)[1]
    bin_dir = _stand_in(tmp_path, fail_on=second)
    done = _run(tmp_path, bin_dir, SMOKE_DIR=str(tmp_path / "out"))
    assert done.returncode == 1
    assert f"{second} failed: see {tmp_path / 'out'}/{second}.log" in done.stdout and "boom" in done.stdout
    assert len((tmp_path / "calls.txt").read_text().splitlines()) == len(TABLES)  # every table was run
    assert done.stdout.rstrip().splitlines()[-1].startswith(f"== failed: {second} ")


def test_smoke_raw_dir_takes_the_real_route(tmp_path):
    """SMOKE_RAW_DIR: real text (--raw-dir) instead of the synthetic corpus, with SMOKE_SIZES."""
    bin_dir = _stand_in(tmp_path)
    done = _run(tmp_path, bin_dir, SMOKE_DIR=str(tmp_path / "out"), SMOKE_RAW_DIR="/data/m30k", SMOKE_SIZES="60,9,9",
                SMOKE_TABLES="pascal_table1 cross_paper")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = [line.split() for line in (tmp_path / "calls.txt").read_text().splitlines()]
    assert [c[0] for c in calls] == ["pascal_table1", "cross_paper"]
    for call in calls:
        assert "--synthetic" not in call and call[call.index("--raw-dir") + 1] == "/data/m30k"
        assert call[call.index("--smoke-sizes") + 1] == "60,9,9"


def test_make_reproduce_smoke_runs_the_script():
    p = subprocess.run(["make", "-C", str(ROOT), "-n", "reproduce-smoke", "VENV=/nonexistent-venv"], capture_output=True,
                       text=True, timeout=60, env={k: v for k, v in os.environ.items() if k != "MAKEFLAGS"})
    assert "bash scripts/reproduce_smoke.sh" in p.stdout, p.stdout + p.stderr


def test_each_table_computes_with_one_thread_unless_told(tmp_path):
    """Tiny models: OMP_NUM_THREADS=1 by default (torch's thread per core spins against other work); the caller's
    value is kept."""
    bin_dir = _stand_in(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "SMOKE_DIR": str(tmp_path / "a"),
                               "SMOKE_TABLES": "pascal_table1"})
    assert done.returncode == 0 and (tmp_path / "threads.txt").read_text() == "1\n", done.stderr
    done = _run(tmp_path, bin_dir, SMOKE_DIR=str(tmp_path / "b"), SMOKE_TABLES="pascal_table1", OMP_NUM_THREADS="3")
    assert done.returncode == 0 and (tmp_path / "threads.txt").read_text() == "1\n3\n", done.stderr
