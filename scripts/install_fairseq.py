"""Install fairseq into the running interpreter's environment with only the compiled parts syntrans runs (`make install`).

fairseq is published as a source distribution only, and building it compiles six extensions. syntrans runs three:
the BLEU scorer of fairseq-generate (``fairseq.libbleu``), batching by size (``fairseq.data.data_utils_fast``) and
token blocks (``fairseq.data.token_block_utils_fast``). The other three are fairseq's BASE layers (``libbase``), its
non-autoregressive models' edit distance (``libnat``) and an example's alignment operator; each includes torch's C++
headers, and together they took about four minutes of a fresh install on a 2-core machine. So:

1. the source distribution of the fairseq that setup.py asks for on this Python is downloaded (pip, no build);
2. its Python package is installed with fairseq's own switch for builds without extensions (``READTHEDOCS``), by
   uv where the venv has it (``scripts/uv_pip.py``);
3. the three extensions are compiled from the same sources, Cython and numpy as fairseq's setup.py uses them, and
   placed in the installed package;
4. the three are imported, so a failed build stops the install here.

``make install FAIRSEQ_FULL=1`` leaves the whole build to pip instead (every extension).
Run with the venv's Python, after the build requirements (torch pinned, numpy, cython) are installed:
``python scripts/install_fairseq.py BUILD_DIR``.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the extensions syntrans runs: module name → sources in fairseq's source distribution (as its setup.py lists them)
EXTENSIONS = {
    "fairseq.libbleu": ["fairseq/clib/libbleu/libbleu.cpp", "fairseq/clib/libbleu/module.cpp"],
    "fairseq.data.data_utils_fast": ["fairseq/data/data_utils_fast.pyx"],
    "fairseq.data.token_block_utils_fast": ["fairseq/data/token_block_utils_fast.pyx"],
}
NUMPY_EXTENSIONS = {"fairseq.data.data_utils_fast", "fairseq.data.token_block_utils_fast"}
COMPILE_ARGS = ["-std=c++11", "-O3"]  # fairseq's setup.py, off macOS

_PIN = re.compile(r"""(["'])(fairseq[-\w]*==[^;"']+)(?:;\s*(.*?))?\1""")


def fairseq_requirement(setup_py: Path = ROOT / "setup.py") -> str:
    """The fairseq requirement setup.py's install_requires states for this Python (an exact ``==`` pin)."""
    from packaging.markers import Marker

    text = setup_py.read_text()
    found = [(req, marker) for _, req, marker in _PIN.findall(text)]
    if not found:
        raise SystemExit(f"{setup_py}: no fairseq requirement pinned with '==' found")
    for req, marker in found:
        if not marker or Marker(marker).evaluate():
            return req.strip()
    raise SystemExit(f"{setup_py}: none of the fairseq requirements {[r for r, _ in found]} is for Python "
                     f"{sys.version.split()[0]}")


def _pip(*args: str, env=None) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True, env=env)


def download_source(requirement: str, build: Path) -> Path:
    """The unpacked source distribution of ``requirement`` under ``build`` (downloaded once)."""
    name, version = requirement.split("==")
    stem = f"{name.replace('-', '_')}-{version}"
    src = build / stem
    if (src / "setup.py").exists():
        return src
    build.mkdir(parents=True, exist_ok=True)
    _pip("download", "--quiet", "--no-deps", "--no-binary", ":all:", "--no-build-isolation", "-d", str(build),
         requirement)
    archives = [p for p in build.iterdir() if p.name.lower().startswith(stem.lower()) and p.name.endswith(".tar.gz")]
    if len(archives) != 1:
        raise SystemExit(f"{build}: expected one source archive {stem}*.tar.gz after pip download, found "
                         f"{[p.name for p in build.iterdir()]}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(build, filter="data")
    if not (src / "setup.py").exists():
        raise SystemExit(f"{archives[0]}: unpacked, but {src / 'setup.py'} is not there")
    return src


def build_extensions(src: Path, package_dir: Path) -> list[Path]:
    """Compile :data:`EXTENSIONS` from ``src`` and copy them into the installed package (``package_dir`` = the folder
    holding ``fairseq/``); returns the copied files."""
    import numpy
    from setuptools import Extension, setup

    exts = [Extension(name, sources=sources, language="c++", extra_compile_args=COMPILE_ARGS,
                      include_dirs=[numpy.get_include()] if name in NUMPY_EXTENSIONS else [])
            for name, sources in EXTENSIONS.items()]
    here = os.getcwd()
    os.chdir(src)
    try:
        jobs = str(max(1, min(len(exts), os.cpu_count() or 1)))  # the three compile side by side on several cores
        setup(name="fairseq-extensions", ext_modules=exts, script_args=["--quiet", "build_ext", "--inplace", "-j", jobs])
    finally:
        os.chdir(here)
    copied = []
    for name in EXTENSIONS:
        rel = Path(*name.split("."))
        built = sorted((src / rel.parent).glob(rel.name + ".*.so")) + sorted((src / rel.parent).glob(rel.name + ".*.pyd"))
        if not built:
            raise SystemExit(f"{src}: compiling {name} left no {rel}.*.so")
        dest = package_dir / rel.parent / built[-1].name
        shutil.copy2(built[-1], dest)
        copied.append(dest)
    return copied


def load_extension(path: Path):
    """Load one compiled extension by its file (fairseq itself is not imported: its other requirements come later)."""
    name = path.name.split(".")[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def installed_with_extensions(requirement: str) -> list[Path]:
    """The extension files of an installed ``requirement`` (same name and version) when all of :data:`EXTENSIONS`
    are there, else an empty list."""
    from importlib import metadata

    name, version = requirement.split("==")
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return []
    if dist.version != version:
        return []
    found = []
    for ext in EXTENSIONS:
        rel = Path(*ext.split("."))
        hits = sorted(Path(dist.locate_file(rel.parent)).glob(rel.name + ".*.so"))
        if not hits:
            return []
        found.append(hits[-1])
    return found


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    build = Path(args[0] if args else ROOT / "build" / "fairseq").resolve()
    requirement = fairseq_requirement()
    done = installed_with_extensions(requirement)
    if done:
        print(f"[setup] {requirement} is installed with {', '.join(p.name for p in done)}: kept")
        return 0
    src = download_source(requirement, build)
    print(f"[setup] {requirement}: installing the Python package, then compiling {', '.join(EXTENSIONS)}")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "uv_pip.py"), "install", "--quiet", "--no-deps",
                    "--no-build-isolation", str(src)], check=True, env=dict(os.environ, READTHEDOCS="1"))
    fairseq_spec = importlib.util.find_spec("fairseq")
    if fairseq_spec is None or not fairseq_spec.submodule_search_locations:
        raise SystemExit(f"{requirement} was installed, but this Python ({sys.executable}) cannot find fairseq")
    package_dir = Path(list(fairseq_spec.submodule_search_locations)[0]).parent
    copied = build_extensions(src, package_dir)
    for path in copied:  # a failed build stops the install here, not at the first fairseq-generate
        load_extension(path)
    print(f"[setup] {requirement} installed with {len(copied)} extensions: {', '.join(p.name for p in copied)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
