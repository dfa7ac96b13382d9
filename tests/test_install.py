"""The package as a user installs it: an sdist and a wheel built from the committed files, their metadata checked with
twine, the wheel installed with --no-deps into a fresh virtual environment that sees this environment's packages
(fairseq, torch, stanza…) but not the clone, and the commands run from a folder outside the clone: a smoke reproduction
on the synthetic corpus (configs read from the installed package data) and fairseq-train with the installed package
as --user-dir."""
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # trains, translates or installs in other processes (conftest)

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600  # seconds for any one command here (a build takes ~10 s, the smoke reproduction ~1 min)


def _run(cmd, **kw):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=TIMEOUT, **kw)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _source_copy(dest: Path) -> Path:
    """The files git tracks (what CI's clean clone holds), else the tree without build and environment folders."""
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True,
                               timeout=60).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info",
                                                                  "__pycache__", "work", "results", "demo"))
        return dest
    for name in filter(None, names):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    src = _source_copy(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build backend of this environment (setup.py's setuptools), no download
    _run([sys.executable, "-m", "build", "--sdist", "--wheel", "--no-isolation", "--outdir", out, src])
    wheel, = out.glob("syntrans-*.whl")
    sdist, = out.glob("syntrans-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def fresh(dists, tmp_path_factory):
    """A fresh venv holding the wheel alone; this environment's site-packages are on its path through a .pth file
    (plain folders: their .pth files, among them the editable install of the clone, are not run)."""
    venv = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    py = venv / "bin" / "python"
    purelib = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    ours = [p for p in {*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
            if Path(p).is_dir()]
    (purelib / "test_environment.pth").write_text("\n".join(sorted(ours)) + "\n", encoding="utf-8")
    _run([sys.executable, "-m", "pip", "--python", py, "install", "--quiet", "--no-deps", "--no-index", dists[0]])
    # fairseq's console scripts are not packages: the same commands, run by the fresh interpreter
    for name, module in (("fairseq-train", "fairseq_cli.train"), ("fairseq-generate", "fairseq_cli.generate"),
                         ("fairseq-preprocess", "fairseq_cli.preprocess")):
        script = venv / "bin" / name
        script.write_text(f'#!/bin/sh\nexec "{py}" -m {module} "$@"\n', encoding="utf-8")
        script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SYNTRANS_BIN")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    return venv, py, env


def test_tested_versions_lie_in_the_declared_ranges_and_pip_check_is_clean():
    """The declared ranges of the text-processing dependencies hold the versions these tests run on."""
    from importlib.metadata import distribution, version

    from packaging.requirements import Requirement

    declared = {Requirement(r).name: Requirement(r).specifier for r in distribution("syntrans").requires or []}
    for name in ("stanza", "sacrebleu", "subword-nmt", "sacremoses"):
        assert str(declared[name]), f"{name} has no declared range"
        assert declared[name].contains(version(name)), f"{name} {version(name)} is outside {declared[name]}"
    done = _run([sys.executable, "-m", "pip", "check"])
    assert "No broken requirements found" in done.stdout, done.stdout


def test_sdist_and_wheel_metadata_pass_twine_check(dists):
    done = _run([sys.executable, "-m", "twine", "check", "--strict", *dists])
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_wheel_carries_every_config_and_the_synthetic_generator(dists):
    names = set(zipfile.ZipFile(dists[0]).namelist())
    configs = {p.relative_to(ROOT / "configs").as_posix() for p in (ROOT / "configs").rglob("*")
               if p.is_file() and p.suffix in (".args", ".md")}
    assert configs and {f"syntrans/configs/{c}" for c in configs} <= names
    assert {"syntrans/synth/__init__.py", "syntrans/synth/grammar.py", "syntrans/reproduce/runner.py",
            "syntrans/reproduce/tables.py"} <= names


def test_wheel_holds_every_module_of_the_clone(dists):
    """find_packages() skips a folder without __init__.py: every .py of syntrans/ must be in the wheel."""
    names = set(zipfile.ZipFile(dists[0]).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "syntrans").rglob("*.py")}
    assert modules and not modules - names, sorted(modules - names)


def test_installed_package_is_the_wheel_not_the_clone(fresh, tmp_path):
    venv, py, env = fresh
    done = _run([py, "-c", "import syntrans, syntrans.reproduce.config_file as c; print(syntrans.__file__); "
                 "print(c.CONFIG_DIR); print(c.resolve_config('pascal/wmt16_en_de.args'))"], cwd=tmp_path, env=env)
    package, configs, config = done.stdout.split()
    assert Path(package).is_relative_to(venv) and Path(configs).is_relative_to(venv), done.stdout
    assert Path(config) == Path(configs) / "pascal" / "wmt16_en_de.args" and Path(config).is_file()


def test_smoke_reproduction_and_fairseq_train_from_outside_the_clone(fresh, tmp_path):
    venv, py, env = fresh
    work = tmp_path / "work"
    _run([venv / "bin" / "syntrans-reproduce", "distance_table1", "--smoke", "--synthetic", "--datasets",
          "iwslt14_de_en", "--seeds", "1", "--smoke-updates", "6", "--smoke-sizes", "120,20,20",
          "--work-dir", work, "--results-dir", tmp_path / "results"], cwd=tmp_path, env=env)
    table = (tmp_path / "results" / "distance_table1.md").read_text(encoding="utf-8")
    rows = [ln for ln in table.splitlines() if ln.startswith("| IWSLT14 de→en | ")]
    assert len(rows) == 2 and all("(n=1)" in r for r in rows), table  # both systems trained, decoded and scored

    user_dir = _run([py, "-c", "import os, syntrans; print(os.path.dirname(syntrans.__file__))"],
                    cwd=tmp_path, env=env).stdout.strip()
    data_bin, = {p.parent for p in work.rglob("dict.src.txt")}
    train = _run([venv / "bin" / "fairseq-train", data_bin, "--user-dir", user_dir, "--task", "syntax_translation",
                  "--arch", "pascal_transformer_iwslt_de_en", "--pascal-layers", "0", "--pascal-heads", "1",
                  "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
                  "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
                  "--encoder-attention-heads", "2", "--decoder-attention-heads", "2",
                  "--criterion", "syntax_label_smoothed_cross_entropy", "--optimizer", "adam", "--lr", "1e-3",
                  "--max-tokens", "500", "--max-update", "3", "--cpu", "--num-workers", "0", "--no-save",
                  "--log-format", "simple"], cwd=tmp_path, env=env)
    log = train.stdout + train.stderr
    assert "done training" in log and f"'user_dir': '{user_dir}'" in log, log[-2000:]
    assert Path(user_dir).is_relative_to(venv)
