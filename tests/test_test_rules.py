"""Rules of the test suite itself, read from the source of tests/*.py with ``ast`` and checked on the conftest guard:
every process a test starts has a timeout (a hung tool fails its test instead of stopping the suite), and a test that
starts a slow process (training, translation, installation, the demo) is marked ``slow``, so that
`pytest -m "not slow"` (README: the tiers) really leaves those out."""
import ast
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import _POPEN, _SlowTierGuard
from helpers import BIN, slow_command

pytestmark = pytest.mark.fast

TESTS = Path(__file__).resolve().parent
RUNNERS = {"run", "check_output", "check_call", "call"}  # subprocess functions that wait for the process


def subprocess_calls(tree):
    """(call node, enclosing function or None) of every ``subprocess.<f>(…)`` call in ``tree``."""
    found = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and isinstance(child.func.value, ast.Name) and child.func.value.id == "subprocess":
                found.append((child, func))
            visit(child, inner)

    visit(tree, None)
    return found


def missing_timeouts(source: str, name: str):
    """'file:line' of every subprocess call without a timeout: run/check_output/check_call/call need ``timeout=``; a
    Popen's function must bound its wait (``timeout`` named in it: communicate(timeout=…) or a deadline)."""
    bad = []
    for call, func in subprocess_calls(ast.parse(source)):
        kind = call.func.attr
        if kind in RUNNERS and not any(k.arg == "timeout" for k in call.keywords):
            bad.append(f"{name}:{call.lineno}: subprocess.{kind} without timeout=")
        elif kind == "Popen" and (func is None or "timeout" not in ast.unparse(func)):
            bad.append(f"{name}:{call.lineno}: subprocess.Popen whose function never bounds its wait")
    return bad


def test_every_started_process_has_a_timeout():
    files = sorted(TESTS.glob("*.py"))
    bad = [x for f in files for x in missing_timeouts(f.read_text(), f.name)]
    assert not bad, "\n".join(bad)
    assert sum(len(subprocess_calls(ast.parse(f.read_text()))) for f in files) > 10  # the rule saw the calls


@pytest.mark.parametrize("source,expected", [
    ("import subprocess\nsubprocess.run(['x'])\n", ["t.py:2: subprocess.run without timeout="]),
    ("import subprocess\nsubprocess.run(['x'], timeout=5)\n", []),
    ("import subprocess\ndef f():\n    p = subprocess.Popen(['x'])\n    p.wait()\n",
     ["t.py:3: subprocess.Popen whose function never bounds its wait"]),
    ("import subprocess\ndef f():\n    p = subprocess.Popen(['x'])\n    p.communicate(timeout=3)\n", []),
])
def test_the_timeout_rule_can_fail(source, expected):
    assert missing_timeouts(source, "t.py") == expected


def test_slow_commands_are_recognised():
    assert slow_command([BIN / "fairseq-train", "data"]) == "fairseq-train"
    assert slow_command([sys.executable, "-m", "venv", "x"]) == "python -m venv"
    assert slow_command([sys.executable, TESTS / "torch_ddp_cpu.py", "data"]) == "torch_ddp_cpu.py"
    assert slow_command(["bash", "scripts/demo.sh"]) == "demo.sh"
    assert slow_command([BIN / "syntrans-parse", "data"]) == ""
    assert slow_command([BIN / "syntrans-translate", "--help"]) == ""  # help trains and translates nothing
    assert slow_command([sys.executable, "-c", "import syntrans"]) == ""


def item(marked: bool):
    return SimpleNamespace(nodeid="tests/t.py::test_x", get_closest_marker=lambda name: object() if marked else None)


def test_an_unmarked_test_cannot_start_a_slow_process():
    guard = subprocess.Popen
    assert guard is not _POPEN  # this test is not marked slow: conftest guards it
    subprocess.Popen = _POPEN  # that guard set aside while the test tries its own (not monkeypatch: its undo would
    try:  # come after conftest's guard is removed, and put the guard back for the tests that follow)
        with _SlowTierGuard(item(marked=False)):
            with pytest.raises(AssertionError, match=r"tests/t\.py::test_x starts fairseq-train but is not marked slow"):
                subprocess.run([str(BIN / "fairseq-train"), "--version"], timeout=60)
            assert subprocess.run([sys.executable, "-c", "pass"], timeout=60).returncode == 0  # others still start
        assert subprocess.Popen is _POPEN  # restored after the block
        with _SlowTierGuard(item(marked=True)):  # marked: the process starts (here it does not exist)
            with pytest.raises(FileNotFoundError):
                subprocess.run(["/nonexistent/fairseq-train"], timeout=60)
        assert subprocess.Popen is _POPEN
    finally:
        subprocess.Popen = guard
