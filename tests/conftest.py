"""Shared fixtures: a tiny synthetic parsed corpus, BPE'd and binarized with its syntax sidecars. Only fixtures
and hooks live here; the helpers the test modules share are in helpers.py (``from helpers import …``)."""
import fcntl
import os
import subprocess
import sys
from pathlib import Path

import forkserver
import hydra_memo
import pytest
from helpers import BIN, SHARED_DATA, make_bpe_corpus, slow_command

# the real Popen, kept on the subprocess module itself: the same object however often this file is imported (pytest
# loads it as a plugin; tests/test_test_rules.py imports it again, possibly while a guard is installed)
_POPEN = subprocess.__dict__.setdefault("_syntrans_unguarded_popen", subprocess.Popen)


def pytest_configure(config):
    """Under pytest-xdist (`make test` runs one worker per core), each worker and the tools it starts compute with one
    thread: two workers of two threads each on two cores spin against each other. Each process that runs tests (not
    xdist's controller) starts the fork server of the console scripts in ``helpers.BIN`` (forkserver.py): it imports
    torch and fairseq while the tests are collected. hydra's override parsing is remembered per process
    (hydra_memo.py: about 15% of each model build the way fairseq-train does it)."""
    hydra_memo.install()  # each override string parsed once per process (tests/hydra_memo.py)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ["OMP_NUM_THREADS"] = "1"
        import torch
        torch.set_num_threads(1)
    if worker or not getattr(config.option, "numprocesses", None):
        config._syntrans_fork_server = forkserver.start(BIN)
        if config._syntrans_fork_server is not None:  # syntrans-reproduce starts fairseq's commands through it too
            os.environ["SYNTRANS_BIN"] = str(BIN)


def pytest_unconfigure(config):
    stop = getattr(config, "_syntrans_fork_server", None)
    if stop is not None:
        stop()


#: the files that take 10 s or more, longest first (per-file time measured on two cores), run first: pytest-xdist's
#: --dist loadfile hands files to the workers in collection order, so a long file collected last would leave one
#: worker idle while the other finishes it (`make test` passes --no-loadscope-reorder: by default pytest-xdist 3.6+
#: reorders the files by their number of tests, and the longest file, which has few, then starts last).
#: test_real_route.py builds the stanza models (conftest ``stanza_res``) that test_stanza_pipeline.py also reads: the
#: latter comes a few long files later, so that its worker finds them built instead of waiting on the build's lock
LONGEST_FIRST = ("test_real_route.py", "test_reproduce_smoke.py", "test_distributed.py", "test_end_to_end_parents.py",
                 "test_half_precision.py", "test_stanza_pipeline.py", "test_raw_sentencepiece.py",
                 "test_translate.py", "test_end_to_end_dbsa.py",
                 "test_warm_start.py", "test_configs.py", "test_light_start.py", "test_print_syntax.py",
                 "test_end_to_end_nsd.py",
                 "test_invariance.py", "test_bad_input_round2.py", "test_bad_input_round3.py", "test_demo.py",
                 "test_resume.py",
                 "test_reproduce_tables.py", "test_benchmark.py", "test_install.py", "test_end_to_end_gate.py",
                 "test_end_to_end.py", "test_end_to_end_baselines.py", "test_reproduce_selection.py",
                 "test_bad_input.py", "test_char_align.py", "test_multitask.py", "test_parse_views.py",
                 "test_compiled_kernels.py", "test_typed_config_checkpoint.py", "test_average_checkpoints.py",
                 "test_synth.py", "test_nsd.py", "test_launcher.py")


def pytest_collection_modifyitems(config, items):
    """The files of :data:`LONGEST_FIRST` first, in that order; every other file after them, as collected (each
    file's own tests keep their order)."""
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items[:] = sorted(items, key=lambda item: rank.get(item.path.name, len(rank)))  # sorted() is stable


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _SlowTierGuard(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _SlowTierGuard(item):
        yield


class _SlowTierGuard:
    """While a test that is not marked ``slow`` runs (its fixtures included), starting a process that trains,
    translates, installs or runs the demo (:func:`helpers.slow_command`) fails it, naming the command: the
    ``slow`` mark is what `pytest -m "not slow"` leaves out, so it must be on every such test."""

    def __init__(self, item):
        self.item = item

    def __enter__(self):
        self.before = subprocess.Popen
        if self.item.get_closest_marker("slow") is None:
            nodeid = self.item.nodeid

            def guarded(args, *a, **kw):
                what = slow_command(args)
                if what:
                    raise AssertionError(f"{nodeid} starts {what} but is not marked slow (pytest.mark.slow)")
                return _POPEN(args, *a, **kw)

            subprocess.Popen = guarded
        return self

    def __exit__(self, *exc):
        subprocess.Popen = self.before
        return False


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory) -> Path:
    return make_bpe_corpus(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def single_threaded_tools():
    """The fairseq tools a test module starts run with one OpenMP thread: on a few shared cores, spinning
    threads make them up to ten times slower when another process is busy."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
        yield


@pytest.fixture(autouse=True)
def _no_unsafe_torch_load(monkeypatch):
    """Every test loads checkpoints with torch's own default (the safe loader since torch 2.6): neither of torch's
    global switches is set during a test (TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD: the full unpickler everywhere;
    TORCH_FORCE_WEIGHTS_ONLY_LOAD: the safe one even where a caller asks for the full one). Whatever the
    environment held is restored after the test."""
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", raising=False)


def shared_once(tmp_path_factory, name: str, build):
    """``build(folder)`` run once per test session, its folder shared by every pytest-xdist worker (the workers' temp
    folders have one parent): the first worker to ask builds it under a file lock, the others wait and reuse it. A
    build that failed is not reused: its error is raised again in each worker that asks."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the workers of this session
    folder, done = root / f"shared-{name}", root / f"shared-{name}.done"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            build(folder)
            done.write_text("built\n")
    return folder


STANZA_BUILDER = Path(__file__).with_name("stanza_models.py")
GUM = SHARED_DATA / "gum"
MULTI30K = SHARED_DATA / "multi30k"


@pytest.fixture(scope="session")
def stanza_res(tmp_path_factory):
    """stanza resources (tests/stanza_models.py: tiny English and German models trained on GUM), built once per
    session in a process of its own and shared by the workers; skipped when the shared GUM data is absent."""
    if not ((GUM / "dep").is_dir() and (GUM / "const").is_dir()):
        pytest.skip(f"{GUM} is absent (the shared real-data folder is optional)")

    def build(res):
        env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
        env.update(OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONWARNINGS="ignore")
        argv = [sys.executable, str(STANZA_BUILDER), str(res), str(GUM)] + ([str(MULTI30K)] if MULTI30K.is_dir() else [])
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
        assert p.returncode == 0, f"building the stanza models failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"

    return shared_once(tmp_path_factory, "stanza", build)
