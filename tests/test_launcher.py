"""syntrans.jobs.launcher: the units of a reproduction run here (``local``) or as submitit jobs. submitit's local
executor really runs them (each unit a process of its own, killed by submitit after the one-minute limit set here);
the slurm executor submits to stand-in sbatch/srun/sacct scripts that record the batch script submitit wrote."""
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from launcher_units import blocked, record

from syntrans.cli import reproduce as cli
from syntrans.jobs.launcher import LaunchError, LaunchOptions, _visible_gpus, parse_extra, run_units

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.fixture
def jobs_env(monkeypatch):
    """The jobs import launcher_units (this folder on their PYTHONPATH) and see the GPUs "3,5" (none are used)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")


def local_opts(tmp_path, **kw):
    return LaunchOptions(launcher="submitit-local", folder=tmp_path / "jobs", **{"time_min": 1, **kw})


def ledger(tmp_path):
    return json.loads((tmp_path / "jobs" / "ledger.json").read_text())


def submitted(tmp_path):
    """The jobs submitit wrote (one <id>_submitted.pkl each)."""
    return sorted(p.name for p in (tmp_path / "jobs").glob("*_submitted.pkl"))


def test_units_run_as_processes_of_their_own_results_in_unit_order(tmp_path, jobs_env):
    logs = []
    units = [(str(tmp_path), "a", 2.0), (str(tmp_path), "b"), (str(tmp_path), "c", 1.0)]  # a ends last
    out = run_units(record, units, local_opts(tmp_path), done=lambda u: u[1] == "b", log=logs.append,
                    load=lambda folder, name, *rest: {"loaded": name})
    assert [r.get("name", r.get("loaded")) for r in out] == ["a", "b", "c"]
    assert out[1] == {"loaded": "b"}  # done before: loaded here, not run
    pids = {n: int((tmp_path / f"{n}.pid").read_text()) for n in ("a", "c")}
    assert not (tmp_path / "b.pid").exists()
    assert os.getpid() not in pids.values() and pids["a"] != pids["c"]
    assert [out[0]["pid"], out[2]["pid"]] == [pids["a"], pids["c"]]
    assert out[0]["cuda"] == out[2]["cuda"] == "3,5"  # no --gpus-per-job: all the GPUs this process sees
    assert out[0]["saw"] == ["c"]  # no max_parallel: the two ran at once
    assert out[0]["limit_s"] == "60"  # time_min=1
    assert any("skipped" in m and "'b'" in m for m in logs), logs
    assert len(submitted(tmp_path)) == 2 and len(ledger(tmp_path)) == 2
    assert not any("'b'" in k for k in ledger(tmp_path))


def test_max_parallel_runs_one_at_a_time_with_the_gpus_asked(tmp_path, jobs_env):
    units = [(str(tmp_path), "a", 1.0), (str(tmp_path), "b", 1.0)]
    out = run_units(record, units, local_opts(tmp_path, max_parallel=1, gpus_per_job=1), log=lambda m: None)
    assert [r["saw"] for r in out] == [[], []]
    assert [r["cuda"] for r in out] == ["3", "3"]  # the first of "3,5"


def test_a_failing_unit_is_named_with_its_log_and_a_rerun_submits_only_it(tmp_path, jobs_env):
    (tmp_path / "b.fail").write_text("")
    (tmp_path / "c.fail").write_text("")
    units = [(str(tmp_path), n) for n in "abc"]
    with pytest.raises(LaunchError) as err:
        run_units(record, units, local_opts(tmp_path), log=lambda m: None)
    message = str(err.value)
    assert message.startswith("2 of 3 unit(s) failed")
    records = ledger(tmp_path)
    for name in "bc":
        (job,) = [e["job_id"] for k, e in records.items() if k.endswith(f"'{name}'")]
        log = tmp_path / "jobs" / f"{job}_0_log.err"
        assert f"'{name}': job {job} failed; log {log}" in message
        assert f"ValueError: unit {name} fails on purpose" in log.read_text()
        assert f"ValueError: unit {name} fails on purpose" in message  # the end of the log
    assert "'a'" not in message
    # fixed: the re-run collects a's result from its job and submits b and c again
    (tmp_path / "b.fail").unlink()
    (tmp_path / "c.fail").unlink()
    first_a = (tmp_path / "a.pid").read_text()
    logs = []
    out = run_units(record, units, local_opts(tmp_path), log=logs.append)
    assert [r["name"] for r in out] == ["a", "b", "c"]
    assert (tmp_path / "a.pid").read_text() == first_a and out[0]["pid"] == int(first_a)
    assert len(submitted(tmp_path)) == 5  # 3, then b and c again
    assert any("collected the result of job" in m and "'a'" in m for m in logs), logs
    assert ledger(tmp_path)[next(k for k in records if k.endswith("'a'"))] == records[next(k for k in records
                                                                                               if k.endswith("'a'"))]


def test_a_rerun_reattaches_to_a_running_job_instead_of_submitting_it_again(tmp_path, jobs_env):
    units = [(str(tmp_path), "a")]
    opts = local_opts(tmp_path, wait=False, time_min=10)  # no time-out signal while a loaded machine starts the job
    assert run_units(blocked, units, opts, log=lambda m: None) == [None]  # submitted, not waited for
    (job,) = [e["job_id"] for e in ledger(tmp_path).values()]
    logs = []
    assert run_units(blocked, units, opts, log=logs.append) == [None]
    assert any(f"still running as job {job}" in m for m in logs), logs
    (tmp_path / "go").write_text("")
    out = run_units(blocked, units, local_opts(tmp_path, time_min=10), log=lambda m: None)  # now waits
    assert out[0]["pid"] == int((tmp_path / "a.pid").read_text())
    assert submitted(tmp_path) == [f"{job}_submitted.pkl"]


def test_a_job_that_ended_without_a_result_is_submitted_again(tmp_path, jobs_env):
    units = [(str(tmp_path), "a")]
    # The job must not inherit an ignored SIGINT: a shell starts a background command (`make test &`) with SIGINT
    # ignored, an ignored signal stays ignored across exec, and the job's controller would never see this test's
    # SIGINT (the unit then ran on). So Python's own handler is in place while the job starts: its SIGINT is the
    # default. A 10-minute limit: with one minute, submitit signals the job's time-out after 30 s.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run_units(blocked, units, local_opts(tmp_path, wait=False, time_min=10), log=lambda m: None)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
    (job,) = [e["job_id"] for e in ledger(tmp_path).values()]
    # generous limits, each asserted: on a loaded machine the job's interpreter may take long to start, and a signal
    # sent before the unit is running would test something else
    deadline = time.monotonic() + 300
    while not (tmp_path / "a.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "a.pid").exists(), "the job never started its unit"
    os.kill(int(job), signal.SIGINT)  # the controller this test's run started: it stops the unit, no result
    stat = Path(f"/proc/{job}/stat")  # "pid (comm) STATE …": Z once it has ended (this process has not reaped it)
    ended = lambda: not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"  # noqa: E731
    deadline = time.monotonic() + 300
    while not ended() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ended(), "the job did not end on SIGINT"
    assert not (tmp_path / "jobs" / f"{job}_0_result.pkl").exists()
    (tmp_path / "go").write_text("")
    logs = []
    out = run_units(blocked, units, local_opts(tmp_path), log=logs.append)
    assert out[0]["name"] == "a"
    assert any(f"job {job} ended without a result" in m and "submitting it again" in m for m in logs), logs
    assert len(submitted(tmp_path)) == 2


def test_the_local_launcher_runs_in_this_process(tmp_path):
    units = [(str(tmp_path), "a"), (str(tmp_path), "b")]
    logs = []
    out = run_units(record, units, LaunchOptions(), done=lambda u: u[1] == "a", log=logs.append)
    assert out[0] is None and out[1]["pid"] == os.getpid()
    assert not (tmp_path / "a.pid").exists() and any("skipped" in m for m in logs)
    (tmp_path / "b.fail").write_text("")
    with pytest.raises(ValueError, match="unit b fails on purpose"):  # in-process: the unit's own error
        run_units(record, units[1:], LaunchOptions(), log=logs.append)


STAND_INS = {
    "srun": "#!/bin/sh\nexit 0\n",
    # records the batch script submitit wrote and answers as sbatch does; job ids 4242, 4243, …
    "sbatch": '#!/bin/sh\nn=$(ls "$SBATCH_RECORD" | wc -l)\ncp "$1" "$SBATCH_RECORD/$n.sh"\n'
              'echo "Submitted batch job $((4242 + n))"\n',
    # every job asked about (and every task of an array) is running
    "sacct": '#!/bin/sh\necho "JobID|State|NodeList"\nwhile [ $# -gt 0 ]; do\n'
             '  if [ "$1" = "-j" ]; then echo "$2|RUNNING|n1"; echo "$2_[0-9]|RUNNING|n1"; fi; shift\ndone\n',
}


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    bin_dir, record_dir = tmp_path / "bin", tmp_path / "sbatch"
    bin_dir.mkdir()
    record_dir.mkdir()
    for name, text in STAND_INS.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SBATCH_RECORD", str(record_dir))
    return record_dir


def scripts(record_dir):
    return [(record_dir / f"{n}.sh").read_text() for n in range(len(list(record_dir.iterdir())))]


def test_slurm_jobs_ask_for_what_the_options_say(tmp_path, fake_slurm):
    opts = LaunchOptions(launcher="slurm", folder=tmp_path / "jobs", partition="gpu", gpus_per_job=2, cpus_per_job=8,
                         time_min=90, mem_gb=16, wait=False, slurm_extra={"account": "nlp"})
    units = [("wmt14", "baseline", 1), ("wmt14", "PASCAL", 1)]
    label = "/".join
    logs = []
    assert run_units(record, units, opts, log=logs.append, label=lambda u: label(map(str, u))) == [None, None]
    texts = scripts(fake_slurm)
    assert len(texts) == 2  # one job per unit
    for text, name in zip(texts, ["wmt14_baseline_1", "wmt14_PASCAL_1"]):
        lines = set(text.splitlines())
        for flag in ("--partition=gpu", "--gpus-per-node=2", "--cpus-per-task=8", "--time=90", "--mem=16GB",
                     "--account=nlp", f"--job-name=syntrans-{name}"):
            assert f"#SBATCH {flag}" in lines, (flag, text)
        assert not any(x.startswith("#SBATCH --array") for x in lines)
        assert f"{sys.executable} -u -m submitit.core._submit" in text  # the Python that submitted it
    assert [m.split(";")[0] for m in logs[:2]] == ["wmt14/baseline/1: submitted as job 4242 (slurm)",
                                               "wmt14/PASCAL/1: submitted as job 4243 (slurm)"]
    assert {e["label"]: e["job_id"] for e in ledger(tmp_path).values()} == {"wmt14/baseline/1": "4242",
                                                                            "wmt14/PASCAL/1": "4243"}
    # re-run while sacct says they run: nothing submitted again
    logs = []
    assert run_units(record, units, opts, log=logs.append, label=lambda u: label(map(str, u))) == [None, None]
    assert len(scripts(fake_slurm)) == 2
    assert sum("still running as job 424" in m for m in logs) == 2, logs


def test_slurm_max_parallel_submits_one_array(tmp_path, fake_slurm):
    opts = LaunchOptions(launcher="slurm", folder=tmp_path / "jobs", max_parallel=2, wait=False)
    units = [(str(tmp_path), n) for n in "abc"]
    run_units(record, units, opts, log=lambda m: None)
    (text,) = scripts(fake_slurm)
    lines = text.splitlines()
    assert "#SBATCH --array=0-2%2" in lines and "#SBATCH --time=1440" in lines  # the default limit: a day
    assert not any(x.startswith("#SBATCH --gpus") or x.startswith("#SBATCH --partition") for x in lines)
    assert sorted((e["label"][-3:], e["job_id"]) for e in ledger(tmp_path).values()) == \
        [("'a'", "4242_0"), ("'b'", "4242_1"), ("'c'", "4242_2")]


def test_slurm_without_srun_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no srun
    with pytest.raises(LaunchError, match="slurm executor.*srun"):
        run_units(record, [(str(tmp_path), "a")], LaunchOptions(launcher="slurm", folder=tmp_path), log=lambda m: None)


def test_missing_submitit_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit fails
    with pytest.raises(LaunchError, match=r"pip install syntrans\[cluster\]"):
        run_units(record, [(str(tmp_path), "a")], local_opts(tmp_path), log=lambda m: None)
    monkeypatch.setattr(cli, "reproduce", lambda *a, **k: pytest.fail("ran without submitit"))
    assert cli.main(["distance_table1", "--launcher", "slurm", "--work-dir", str(tmp_path)]) == 2
    assert "--launcher slurm needs submitit" in capsys.readouterr().err
    assert not (tmp_path / "a.pid").exists()


def test_labels_must_name_units_apart_and_stably(tmp_path, jobs_env):
    units = [(str(tmp_path), "a"), (str(tmp_path), "b")]
    with pytest.raises(LaunchError, match="share a label"):
        run_units(record, units, local_opts(tmp_path), log=lambda m: None, label=lambda u: "same")
    with pytest.raises(LaunchError, match="memory address"):
        run_units(record, [(object(),)], local_opts(tmp_path), log=lambda m: None)
    assert not (tmp_path / "a.pid").exists()


def test_cli_flags_build_the_launch_options(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "reproduce", lambda opts, log: seen.append(opts))
    argv = ["distance_table1", "--work-dir", str(tmp_path), "--launcher", "slurm", "--slurm-partition", "gpu",
            "--gpus-per-job", "2", "--cpus-per-job", "8", "--time-min", "90", "--mem-gb", "16", "--max-parallel", "4",
            "--no-wait", "--slurm-extra", "account=nlp", "--slurm-extra", "qos=high"]
    assert cli.main(argv) == 0
    assert seen[0].launch == LaunchOptions(launcher="slurm", folder=tmp_path / "jobs", partition="gpu", gpus_per_job=2,
                                           cpus_per_job=8, time_min=90, mem_gb=16.0, max_parallel=4, wait=False,
                                           slurm_extra={"account": "nlp", "qos": "high"})
    assert cli.main(["distance_table1", "--work-dir", str(tmp_path)]) == 0
    assert seen[1].launch == LaunchOptions(launcher="local", folder=tmp_path / "jobs")


@pytest.mark.parametrize("argv,message", [
    (["--gpus-per-job", "1", "--no-wait"], "--gpus-per-job, --no-wait go(es) with --launcher slurm or submitit-local"),
    (["--launcher", "submitit-local", "--slurm-partition", "gpu"], "go with the slurm launcher, not submitit-local"),
    (["--launcher", "slurm", "--slurm-extra", "account"], "expected KEY=VALUE"),
])
def test_cli_refuses_flags_that_do_not_fit(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.setattr(cli, "reproduce", lambda *a, **k: pytest.fail("ran with bad flags"))
    assert cli.main(["distance_table1", "--work-dir", str(tmp_path), *argv]) == 2
    assert message in capsys.readouterr().err


def test_submitit_local_gpus_are_those_this_process_sees(monkeypatch):
    import torch

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,7")
    assert _visible_gpus() == [2, 7]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert _visible_gpus() == []
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert _visible_gpus() == [0, 1, 2]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8f3a,GPU-11b2")
    with pytest.raises(LaunchError, match="other than by index"):
        _visible_gpus()


def test_parse_extra():
    assert parse_extra(["account=nlp", "--constraint=a100|h100"]) == {"account": "nlp", "constraint": "a100|h100"}
    for bad in ("account", "=x", "account="):
        with pytest.raises(LaunchError, match=f"found '{bad}'"):
            parse_extra([bad])


def test_setup_offers_submitit_as_the_cluster_extra_and_to_the_tests(monkeypatch):
    """setup.py as pip runs it, with setuptools.setup replaced by a recorder of its arguments."""
    import runpy

    import setuptools

    got = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: got.update(kw))
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    assert got["extras_require"]["cluster"] == ["submitit>=1.5,<2"]
    assert "submitit>=1.5,<2" in got["extras_require"]["test"]
