"""The install step (README, "Install"): setup.py's requirements, and the Makefile's targets, run for real by make
with stand-in interpreters (for the install: a script that
answers the three questions make asks a Python (is there a torch, which version, create a venv) and records every
call with the PIP_CONSTRAINT it saw, so the pin is checked without downloading anything. The pin is the venv's torch,
else the base interpreter's (the venv then created with --system-site-packages), else TORCH_VERSION; every pip call
carries the pin through PIP_CONSTRAINT, so no step lets pip choose a torch build by itself. `make test` runs one
pytest worker per core, `make test-fast` the tests marked fast, both after the install."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]

# a stand-in python: BASE_TORCH / VENV_TORCH say which torch it has (empty: none); every call is logged
STAND_IN = """#!/bin/bash
echo "$0 $*|PIP_CONSTRAINT=${PIP_CONSTRAINT:-}" >> "$CALLS"
echo "$*|MAX_JOBS=${MAX_JOBS:-}|PATH0=${PATH%%:*}|NO_UV=${SYNTRANS_NO_UV:-}" >> "$CALLS.env"
case "$*" in
  "-c import torch") [ -n "$BASE_TORCH" ] && exit 0 || exit 1 ;;
  "-c import torch; print(torch.__version__)") [ -n "$VENV_TORCH" ] && echo "$VENV_TORCH" && exit 0 || exit 1 ;;
  "-m venv"*) dest="${@: -1}"; mkdir -p "$dest/bin"; cp "$0" "$dest/bin/python"; exit 0 ;;
  "-m pip"*) exit 0 ;;
  "scripts/install_fairseq.py"*) exit 0 ;;
  "scripts/uv_pip.py install"*) exit 0 ;;
esac
echo "unexpected call: $*" >&2; exit 2
"""


def make_install(tmp_path, base_torch="", venv_torch="", existing_venv=False, *make_args):
    """`make install` with a stand-in base python and venv under tmp_path; returns (calls logged, the pin written)."""
    tool = tmp_path / "base-python"
    tool.write_text(STAND_IN)
    tool.chmod(0o755)
    venv = tmp_path / "venv"
    if existing_venv:
        (venv / "bin").mkdir(parents=True)
        shutil.copy(tool, venv / "bin" / "python")
    env = dict(os.environ, CALLS=str(tmp_path / "calls.log"), BASE_TORCH=base_torch, VENV_TORCH=venv_torch)
    env.pop("MAKEFLAGS", None)
    p = subprocess.run(["make", "-C", str(ROOT), "install", f"VENV={venv}", f"PYTHON={tool}", "TORCH_VERSION=1.2.3", *make_args],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    return calls, (venv / "constraints.txt").read_text().strip(), venv


def pip_calls(calls):
    """The installs: pip's own, and scripts/uv_pip.py's (pip's arguments, done by uv)."""
    return [c for c in calls if " -m pip " in c.split("|")[0] or " scripts/uv_pip.py install " in c.split("|")[0]]


def test_pin_is_the_base_torch_seen_through_system_site_packages(tmp_path):
    calls, pin, venv = make_install(tmp_path, base_torch="yes", venv_torch="2.5.1+cu121")
    assert any("-m venv --system-site-packages" in c for c in calls), calls
    assert pin == "torch==2.5.1+cu121"
    pips = pip_calls(calls)
    assert len(pips) == 3 and all(c.endswith(f"|PIP_CONSTRAINT={venv / 'constraints.txt'}") for c in pips), pips
    assert any('-e .[test,plot,reproduce]' in c for c in pips), pips
    # pip installs uv first; uv (scripts/uv_pip.py) installs the rest; INSTALLER=pip keeps pip throughout
    assert pips[0].startswith(f"{venv / 'bin' / 'python'} -m pip install --quiet uv|"), pips
    assert all(" scripts/uv_pip.py install " in c for c in pips[1:]), pips
    (tmp_path / "pip").mkdir()
    calls, _, _ = make_install(tmp_path / "pip", "yes", "2.5.1", False, "INSTALLER=pip")
    assert pip_calls(calls)[0].split("|")[0].endswith("-m pip install --quiet pip"), calls
    envs = [line for line in (tmp_path / "pip" / "calls.log.env").read_text().splitlines() if "uv_pip.py" in line]
    assert len(envs) == 2 and all(line.endswith("|NO_UV=1") for line in envs), envs  # a uv in the venv is not used


def test_fairseq_is_built_against_the_pinned_torch_without_build_isolation(tmp_path):
    """pip >= 25.3 does not hand PIP_CONSTRAINT to an isolated build environment, where fairseq's build requirement
    `torch` would then be the newest CUDA build (measured: 5.2 GB in the build folder). So the build requirements are
    installed into the venv under the pin first, and the package (fairseq with it) is built without isolation, with
    the venv's ninja on PATH and MAX_JOBS set."""
    calls, _, venv = make_install(tmp_path)
    pips = [c.split("|")[0] for c in pip_calls(calls)]
    build = next(k for k, c in enumerate(pips) if " install --quiet setuptools wheel torch numpy cython ninja" in c)
    package = next(k for k, c in enumerate(pips) if "-e .[test,plot,reproduce]" in c)
    assert build < package, pips
    assert "--no-build-isolation" in pips[package].split(), pips
    assert all("--no-build-isolation" not in c or k == package for k, c in enumerate(pips)), pips
    env = next(c for c in (tmp_path / "calls.log.env").read_text().splitlines() if "-e .[test,plot,reproduce]" in c)
    _, jobs, path0, _ = env.split("|")
    assert int(jobs.split("=")[1]) >= 1 and path0 == f"PATH0={venv / 'bin'}", env


def test_fairseq_gets_the_three_extensions_syntrans_runs_before_the_package_install(tmp_path):
    """scripts/install_fairseq.py runs after the build requirements (it compiles with them) and before the package
    install (which then finds fairseq installed), under the pin; FAIRSEQ_FULL=1 leaves fairseq to pip."""
    calls, _, venv = make_install(tmp_path)
    steps = [c.split("|")[0] for c in calls]
    script = next(k for k, c in enumerate(steps) if "scripts/install_fairseq.py" in c)
    build = next(k for k, c in enumerate(steps) if " install --quiet setuptools wheel torch numpy cython ninja packaging" in c)
    package = next(k for k, c in enumerate(steps) if "-e .[test,plot,reproduce]" in c)
    assert build < script < package, steps
    assert calls[script].endswith(f"|PIP_CONSTRAINT={venv / 'constraints.txt'}"), calls[script]
    (tmp_path / "full").mkdir()
    full, _, _ = make_install(tmp_path / "full", "", "", False, "FAIRSEQ_FULL=1")
    assert not any("install_fairseq.py" in c for c in full), full
    assert any("-e .[test,plot,reproduce]" in c for c in full), full


def test_pin_is_torch_version_without_any_torch(tmp_path):
    calls, pin, venv = make_install(tmp_path)
    venvs = [c for c in calls if " -m venv " in c]
    assert len(venvs) == 1 and "--system-site-packages" not in venvs[0], calls
    assert pin == "torch==1.2.3"
    assert all(c.endswith(f"|PIP_CONSTRAINT={venv / 'constraints.txt'}") for c in pip_calls(calls)), calls


def test_pin_is_the_torch_already_in_the_venv(tmp_path):
    calls, pin, _ = make_install(tmp_path, base_torch="", venv_torch="2.4.0", existing_venv=True)
    assert not any(" -m venv " in c for c in calls), calls  # the venv is kept
    assert pin == "torch==2.4.0"
    assert (tmp_path / "venv" / ".syntrans-installed").exists()


def make_dry(target, tmp_path):
    """The commands `make -n TARGET` would run, with an installed stand-in venv (so only TARGET's own recipe)."""
    venv = tmp_path / target / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / ".syntrans-installed").write_text("")
    os.utime(venv / ".syntrans-installed", (2**31, 2**31))  # newer than setup.py: the install is up to date
    p = subprocess.run(["make", "-C", str(ROOT), "-n", target, f"VENV={venv}"], capture_output=True, text=True,
                       timeout=60, env={k: v for k, v in os.environ.items() if k != "MAKEFLAGS"})
    assert p.returncode == 0, p.stdout + p.stderr
    return [line for line in p.stdout.splitlines() if "pytest" in line]


def test_make_test_runs_a_worker_per_core_and_test_fast_the_fast_tier(tmp_path):
    (full,) = make_dry("test", tmp_path)
    assert " -n auto " in full and " -m fast" not in full and full.endswith(" tests"), full
    # files in collection order (conftest: longest first), not xdist's reordering by the number of tests per file
    assert " --dist loadfile --no-loadscope-reorder " in full, full
    (fast,) = make_dry("test-fast", tmp_path)
    assert " -m fast " in fast and fast.endswith(" tests"), fast


def test_requirements_pick_fairseq_by_python_and_bound_each_range_by_the_next_major():
    """fairseq-fixed 0.12.3.1 on Python ≥ 3.11, fairseq 0.12.2 below; stanza, sacrebleu, subword-nmt, sentencepiece,
    sacremoses and nltk
    from the tested version up to, not including, the next major version (the next minor for a 0.x package)."""
    from importlib.metadata import distribution, version

    from packaging.requirements import Requirement
    from packaging.version import Version

    requires = [Requirement(r) for r in distribution("syntrans").requires or []]
    fairseq = {(r.name, str(r.specifier), str(r.marker)) for r in requires if r.name.startswith("fairseq")}
    assert fairseq == {("fairseq", "==0.12.2", 'python_version < "3.11"'),
                       ("fairseq-fixed", "==0.12.3.1", 'python_version >= "3.11"')}, fairseq
    for name in ("stanza", "sacrebleu", "subword-nmt", "sentencepiece", "sacremoses", "nltk"):
        (req,) = [r for r in requires if r.name == name]
        (upper,) = [Version(s.version) for s in req.specifier if s.operator == "<"]
        (lower,) = [Version(s.version) for s in req.specifier if s.operator == ">="]
        v = Version(version(name))
        assert lower <= v < upper, (name, v, req.specifier)
        assert upper == (Version(f"{v.major + 1}") if v.major else Version(f"0.{v.minor + 1}")), (name, upper, v)


def _install_fairseq():
    import importlib.util

    spec = importlib.util.spec_from_file_location("install_fairseq", ROOT / "scripts" / "install_fairseq.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_install_script_takes_the_fairseq_pin_setup_py_states_for_this_python(tmp_path):
    """The script reads its fairseq requirement from setup.py (one place), by the environment marker; the installed
    fairseq is that one, and the three extensions the script builds are in it (fairseq-generate's BLEU scorer,
    batching by size, token blocks)."""
    from importlib import metadata

    script = _install_fairseq()
    fake = tmp_path / "setup.py"
    fake.write_text('install_requires=["fairseq==0.1.0; python_version < \'3.0\'", '
                    '"fairseq-new==9.9; python_version >= \'3.0\'", "torch"]')
    assert script.fairseq_requirement(fake) == "fairseq-new==9.9"
    fake.write_text('install_requires=["fairseq==0.1.0; python_version < \'3.0\'"]')
    with pytest.raises(SystemExit, match="none of the fairseq requirements"):
        script.fairseq_requirement(fake)
    name, version = script.fairseq_requirement().split("==")
    assert metadata.version(name) == version
    found = script.installed_with_extensions(f"{name}=={version}")
    assert [p.name.split(".")[0] for p in found] == ["libbleu", "data_utils_fast", "token_block_utils_fast"], found
    assert script.installed_with_extensions(f"{name}==0.0.0") == []


FAKE_UV = """#!/bin/sh
printf '%s\\n' "$@" > "$UV_CALL"
printf 'SSL_CERT_FILE=%s UV_HTTP_TIMEOUT=%s\\n' "$SSL_CERT_FILE" "$UV_HTTP_TIMEOUT" >> "$UV_CALL"
exit $UV_STATUS
"""


def _uv_pip(tmp_path, status: int, *args: str, **env):
    """scripts/uv_pip.py install ARGS run by a python beside a stand-in uv (exiting with ``status``, its argv
    recorded), with pip's configuration from a file of ours: (completed process, uv's argv, uv's environment)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "uv").write_text(FAKE_UV)
    (bin_dir / "uv").chmod(0o755)
    (tmp_path / "wheels").mkdir()
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nextra-index-url = file://{tmp_path / 'no-index'} https://example.org/simple\n"
                    f"find-links = {tmp_path / 'wheels'} {tmp_path / 'no-wheels'}\nconstraint = {tmp_path / 'cap.txt'}\n"
                    f"cert = {tmp_path / 'ca.pem'}\ntimeout = 7\n[install]\nfind-links = {tmp_path / 'wheels'}\n"
                    f"[download]\nindex-url = https://not-for-install.example/simple\n")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "SYNTRANS_NO_UV"))}
    full.update(PIP_CONFIG_FILE=str(conf), UV_CALL=str(tmp_path / "uv.call"), UV_STATUS=str(status), **env)
    done = subprocess.run([str(bin_dir / "python"), str(ROOT / "scripts" / "uv_pip.py"), "install", *args],
                          capture_output=True, text=True, env=full, timeout=120)
    called = (tmp_path / "uv.call").read_text().splitlines() if (tmp_path / "uv.call").exists() else []
    return done, called[:-1], called[-1:]


def test_uv_installs_with_pips_configuration(tmp_path):
    """uv gets pip's indexes, wheel folders and constraints as `pip install` reads them (environment first, then
    [install], then [global]; a local index or folder that does not exist left out, as pip ignores it), pip's
    certificate bundle and timeout, pip's choice of the best version over every index, pip's byte-compiling (the
    .pyc files; --no-compile leaves it out), and this Python."""
    done, argv, env = _uv_pip(tmp_path, 0, "--quiet", "somepackage", PIP_CONSTRAINT=str(tmp_path / "pin.txt"))
    assert done.returncode == 0 and "pip install" not in done.stderr, done.stderr
    assert argv == ["pip", "install", "--python", str(tmp_path / "bin" / "python"),
                    "--index-strategy", "unsafe-best-match", "--compile-bytecode",
                    "--extra-index-url", "https://example.org/simple",
                    "--find-links", str(tmp_path / "wheels"), "--constraint", str(tmp_path / "pin.txt"),
                    "--quiet", "somepackage"], argv
    assert env == [f"SSL_CERT_FILE={tmp_path / 'ca.pem'} UV_HTTP_TIMEOUT=7"], env
    done, argv, _ = _uv_pip(tmp_path / "nc", 0, "--no-compile", "x")  # pip's --no-compile: uv's own default
    assert "--compile-bytecode" not in argv and "--no-compile" not in argv and argv[-1] == "x", argv


def test_pip_installs_where_uv_fails_or_is_turned_off(tmp_path):
    """A failing uv: the same arguments go to pip (said on stderr); SYNTRANS_NO_UV=1: pip alone. `pip install
    --help` stands for an install here (no download)."""
    done, argv, _ = _uv_pip(tmp_path / "a", 2, "--help")
    assert argv[-1] == "--help" and done.returncode == 0, done.stderr
    assert "uv pip install failed (exit status 2): the same install with pip" in done.stderr
    assert "pip install [options]" in done.stdout, done.stdout[:500]
    done, argv, _ = _uv_pip(tmp_path / "b", 0, "--help", SYNTRANS_NO_UV="1")
    assert argv == [] and done.returncode == 0 and "pip install (SYNTRANS_NO_UV is set)" in done.stderr
    assert "pip install [options]" in done.stdout


def test_fairseqs_source_archive_comes_from_pips_folders_and_indexes_checked_by_sha256(tmp_path):
    """The install script finds the source archive itself (no `pip download`, which builds fairseq's metadata first):
    in a wheel folder of pip's, else on pip's indexes, from a simple-API page in HTML or JSON, the file checked
    against the index's sha256; a mismatch or an index without it gives None (then pip download runs)."""
    import hashlib
    import json

    script = _install_fairseq()
    archive = b"not really a tar.gz, only its bytes"
    digest = hashlib.sha256(archive).hexdigest()
    html = tmp_path / "html-index"
    (html / "fairseq-fixed").mkdir(parents=True)
    (html / "files").mkdir()
    (html / "files" / "fairseq_fixed-1.2.tar.gz").write_bytes(archive)
    (html / "fairseq-fixed" / "index.html").write_text(
        f'<html><body><a href="../files/fairseq_fixed-1.2.tar.gz#sha256={digest}">fairseq_fixed-1.2.tar.gz</a>'
        f'<a href="../files/fairseq_fixed-1.1.tar.gz">fairseq_fixed-1.1.tar.gz</a></body></html>')
    empty = tmp_path / "empty-index"
    empty.mkdir()
    config = {"index-url": f"file://{empty}", "extra-index-url": f"file://{tmp_path / 'absent'} file://{html}"}

    def fetch(name, cfg):
        build = tmp_path / name
        build.mkdir()
        return script.fetch_source("fairseq-fixed==1.2", build, cfg)

    got = fetch("b1", config)
    assert got == tmp_path / "b1" / "fairseq_fixed-1.2.tar.gz" and got.read_bytes() == archive
    assert fetch("b2", {**config, "extra-index-url": ""}) is None  # on no index
    page = html / "fairseq-fixed" / "index.html"
    page.write_text(page.read_text().replace(digest, "0" * 64))
    assert fetch("b3", config) is None  # the sha256 does not match
    page.write_text(json.dumps({"files": [{"filename": "fairseq_fixed-1.2.tar.gz", "url": "../files/fairseq_fixed-1.2.tar.gz",
                                           "hashes": {"sha256": digest}}]}))
    assert fetch("b4", config).read_bytes() == archive  # the JSON form (PEP 691)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "fairseq_fixed-1.2.tar.gz").write_bytes(b"from the folder")
    assert fetch("b5", {"find-links": f"{tmp_path / 'none'} {wheels}"}).read_bytes() == b"from the folder"


def test_pip_download_fetches_fairseqs_source_only_where_the_direct_fetch_finds_nothing(tmp_path, monkeypatch):
    """download_source: the archive the direct fetch found is unpacked without pip; where it found none, `pip download`
    fetches it (its --no-binary source archive)."""
    import io
    import tarfile
    import types

    script = _install_fairseq()
    monkeypatch.setitem(sys.modules, "uv_pip", types.SimpleNamespace(pip_config=lambda: {"index-url": "file:///none"}))

    def archive(build):
        data = b"# fairseq's setup.py\n"
        path = build / "fairseq_fixed-1.2.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            info = tarfile.TarInfo("fairseq_fixed-1.2/setup.py")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        return path

    pip_calls = []
    monkeypatch.setattr(script, "_pip", lambda *args, **kw: (pip_calls.append(args), archive(Path(args[args.index("-d") + 1]))))
    monkeypatch.setattr(script, "fetch_source", lambda req, build, config: archive(build))
    src = script.download_source("fairseq-fixed==1.2", tmp_path / "direct")
    assert (src / "setup.py").read_bytes() == b"# fairseq's setup.py\n" and pip_calls == []
    monkeypatch.setattr(script, "fetch_source", lambda req, build, config: None)
    src = script.download_source("fairseq-fixed==1.2", tmp_path / "fallback")
    assert (src / "setup.py").is_file() and len(pip_calls) == 1
    assert pip_calls[0][0] == "download" and "--no-binary" in pip_calls[0] and pip_calls[0][-1] == "fairseq-fixed==1.2"
