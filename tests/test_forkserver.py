"""The tests' fork server (forkserver.py): a command run through its client behaves as the venv's own script —
the same output, status, standard input, working folder and signal — and a client with no server runs the script
itself. Each comparison runs the same command both ways."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import forkserver
import pytest
from helpers import BIN

pytestmark = [pytest.mark.slow,  # starts syntrans-reproduce (conftest's slow-tier guard)
              pytest.mark.skipif(BIN == forkserver.REAL_BIN, reason="SYNTRANS_TEST_FORKSERVER=0: no fork server")]


def both(name, *args, **kw):
    """(real, served) CompletedProcess of the command ``name ARGS`` run from the venv and through BIN."""
    kw = dict(capture_output=True, text=True, **kw)
    return (subprocess.run([str(forkserver.REAL_BIN / name), *args], timeout=120, **kw),
            subprocess.run([str(BIN / name), *args], timeout=120, **kw))


def wait_for_server(timeout=180):
    sock = BIN / "server.sock"
    t0 = time.time()
    while not sock.exists():
        assert time.time() - t0 < timeout, f"the fork server did not listen on {sock} within {timeout} s"
        time.sleep(0.2)


def test_same_output_and_status_as_the_script():
    wait_for_server()
    real, served = both("syntrans-reproduce", "no_such_table")
    assert real.returncode == served.returncode == 2
    assert (served.stdout, served.stderr) == (real.stdout, real.stderr)
    real, served = both("syntrans-synth", "--help")
    assert real.returncode == served.returncode == 0 and served.stdout == real.stdout and "usage" in real.stdout


def test_fairseq_logs_where_and_how_it_logs_in_its_own_process(tmp_path):
    """fairseq-generate configures no logging before it imports fairseq, whose import puts a handler on stderr; its
    own messages then go there in that handler's format. Served, the same lines in the same place (the server has not
    imported fairseq: the command imports it in its own order)."""
    wait_for_server()
    real, served = both("fairseq-generate", str(tmp_path), "--path", str(tmp_path / "none.pt"), cwd=tmp_path)
    assert real.returncode == served.returncode != 0
    assert served.stdout == real.stdout
    logged = [ln for ln in real.stderr.splitlines() if ln.startswith("INFO:fairseq_cli.generate:")]
    assert logged and [ln for ln in served.stderr.splitlines() if ln.startswith("INFO:")] == [
        ln for ln in real.stderr.splitlines() if ln.startswith("INFO:")]


PROBE = """import logging, sys
print("fairseq before:", "fairseq" in sys.modules)
import syntrans
print("fairseq after syntrans:", "fairseq" in sys.modules)
from fairseq.models import ARCH_MODEL_REGISTRY
print("registered:", "syntax_transformer" in ARCH_MODEL_REGISTRY, "pascal" in " ".join(ARCH_MODEL_REGISTRY))
root = logging.getLogger()
print("root:", root.level, [(type(h).__name__, h.stream is sys.stderr, h.formatter._fmt) for h in root.handlers])
logging.basicConfig(level=logging.INFO, stream=sys.stdout)  # fairseq's command modules do this
logging.getLogger("probe").info("after")
print("fairseq before:", "fairseq" in sys.modules, file=sys.stderr)
"""


def test_fairseq_is_imported_when_and_as_a_command_imports_it(tmp_path):
    """The server has imported fairseq, but a command sees it only from its own first import on: a light command
    runs without it; importing syntrans then fairseq registers syntrans' models (its import hook sees fairseq load);
    the root logger is as fairseq's import leaves it under syntrans (quiet: no handler) in both places."""
    wait_for_server()
    (tmp_path / "probe.py").write_text(PROBE)
    real, served = both("python", "-m", "probe", cwd=tmp_path)
    assert real.returncode == served.returncode == 0, served.stderr
    assert served.stdout == real.stdout and served.stderr == real.stderr
    assert "fairseq before: False\nfairseq after syntrans: False\nregistered: True True\n" in real.stdout
    (tmp_path / "probe.py").write_text("import fairseq, logging, sys\n" + PROBE.split("\n", 1)[1])
    real, served = both("python", "-m", "probe", cwd=tmp_path)
    assert real.returncode == served.returncode == 0, served.stderr
    assert (served.stdout, served.stderr) == (real.stdout, real.stderr)
    assert "root: 10 [('StreamHandler', True," in real.stdout  # fairseq's handler, on stderr


def test_commands_find_fairseqs_default_overrides_parsed(tmp_path):
    """The server fills the tests' memo of hydra's override parsing (hydra_memo.py) before it forks: a command finds
    the memo installed, holding the overrides of fairseq-train's and fairseq-generate's defaults; its configs equal
    hydra's own (tests/test_hydra_memo.py)."""
    wait_for_server()
    (tmp_path / "memo_probe.py").write_text(
        "import hydra_memo\n"
        "from hydra.core.override_parser.overrides_parser import OverridesParser\n"
        "print(getattr(OverridesParser.parse_rule, '_syntrans_memo', False), len(hydra_memo._CACHE))\n")
    served = subprocess.run([str(BIN / "python"), "-m", "memo_probe"], capture_output=True, text=True, cwd=tmp_path,
                            timeout=120, env={**os.environ, "PYTHONPATH": str(Path(forkserver.__file__).parent)})
    assert served.returncode == 0, served.stderr[-2000:]
    installed, size = served.stdout.split()
    assert installed == "True" and int(size) > 200, served.stdout


def test_python_dash_m_gets_stdin_and_the_working_folder(tmp_path):
    wait_for_server()
    (tmp_path / "in.json").write_text('{"b": 1, "a": [2]}')
    real, served = both("python", "-m", "json.tool", "--sort-keys", "in.json", cwd=tmp_path)
    assert real.returncode == served.returncode == 0 and served.stdout == real.stdout and '"a"' in real.stdout
    real, served = both("python", "-m", "json.tool", input='{"x": 3}')
    assert real.returncode == served.returncode == 0 and served.stdout == real.stdout and '"x": 3' in real.stdout
    # started without a standard input (`<&-`): the command has none either (sys.stdin is None), in both places
    real, served = both("python", "-m", "json.tool", preexec_fn=lambda: os.close(0))
    last = lambda err: err.strip().splitlines()[-1]  # noqa: E731 (the traceback's frames differ: runpy's entry)
    assert real.returncode == served.returncode != 0 and last(served.stderr) == last(real.stderr)
    assert "'NoneType'" in last(real.stderr), real.stderr
    # a module found through a PYTHONPATH the server was not started with, after the working folder
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "where.py").write_text("import sys, where\nprint(where.__file__, sys.path[0] == '', sys.argv)")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "lib")}
    real, served = both("python", "-m", "where", "x", cwd=tmp_path, env=env)
    assert real.returncode == served.returncode == 0 and served.stdout == real.stdout, (real.stderr, served.stderr)
    assert str(tmp_path / "lib" / "where.py") in real.stdout
    real, served = both("python", "-c", "import sys; print(sys.argv)")  # not -m: the real python runs it
    assert served.stdout == real.stdout and served.returncode == 0


def test_a_signal_to_the_client_ends_the_command_as_it_ends_the_script():
    """SIGTERM to a client waiting on a command that reads a pipe never closed: the command ends, and the client's
    status is the signal's, as the real process's would be."""
    wait_for_server()
    statuses = []
    for folder in (forkserver.REAL_BIN, BIN):
        p = subprocess.Popen([str(folder / "python"), "-m", "json.tool"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(3)
        assert p.poll() is None
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
        p.stdin.close()
        statuses.append(p.returncode)
    assert statuses == [-signal.SIGTERM, -signal.SIGTERM]


def test_a_client_without_a_server_runs_the_script_itself(tmp_path):
    folder = forkserver.shim_dir()  # a new folder whose server never started
    assert not (folder / "server.sock").exists()
    real = subprocess.run([str(forkserver.REAL_BIN / "syntrans-reproduce"), "no_such_table"], capture_output=True,
                          text=True, timeout=120)
    alone = subprocess.run([str(folder / "syntrans-reproduce"), "no_such_table"], capture_output=True, text=True,
                           timeout=120)
    assert (alone.returncode, alone.stdout, alone.stderr) == (real.returncode, real.stdout, real.stderr)
    assert os.access(folder / "python", os.X_OK) and (folder / "fairseq-train").read_text().startswith(
        f"#!{sys.executable}")


def test_a_server_whose_test_process_was_killed_stops(tmp_path):
    """A pytest process killed before it could stop its server (SIGKILL, a CI timeout) leaves none running."""
    code = ("import sys, time; sys.path.insert(0, %r); import forkserver; folder = forkserver.shim_dir(); "
            "forkserver.start(folder); print(folder, flush=True); time.sleep(600)") % str(Path(__file__).parent)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        folder = Path(parent.stdout.readline().strip())
        t0 = time.time()
        while not (folder / "server.sock").exists():
            assert time.time() - t0 < 180, "the server did not start"
            time.sleep(0.2)
        servers = subprocess.run(["pgrep", "-f", f"forkserver.py {folder}/server.sock"], capture_output=True,
                                 text=True, timeout=30).stdout.split()
        assert len(servers) == 1, servers
    finally:
        parent.kill()
        parent.wait(timeout=30)
    t0 = time.time()
    while os.path.exists(f"/proc/{servers[0]}") and time.time() - t0 < 60:
        time.sleep(0.5)
    gone = not os.path.exists(f"/proc/{servers[0]}") or "Z" in Path(f"/proc/{servers[0]}/stat").read_text().split()[2]
    assert gone, f"the server {servers[0]} still runs a minute after its test process was killed"


def test_switched_off_the_tests_start_the_venvs_own_scripts(monkeypatch):
    monkeypatch.setenv(forkserver.ENV, "0")
    assert forkserver.shim_dir() == forkserver.REAL_BIN and forkserver.start(forkserver.REAL_BIN) is None
