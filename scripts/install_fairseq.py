"""Install fairseq into the running interpreter's environment with only the compiled parts syntrans runs (`make install`).

fairseq is published as a source distribution only, and building it compiles six extensions. syntrans runs three:
the BLEU scorer of fairseq-generate (``fairseq.libbleu``), batching by size (``fairseq.data.data_utils_fast``) and
token blocks (``fairseq.data.token_block_utils_fast``). The other three are fairseq's BASE layers (``libbase``), its
non-autoregressive models' edit distance (``libnat``) and an example's alignment operator; each includes torch's C++
headers, and together they took about four minutes of a fresh install on a 2-core machine. So:

1. the source distribution of the fairseq that setup.py asks for on this Python is downloaded: its file is looked up
   in pip's wheel folders and package indexes (``pip config list``, as ``scripts/uv_pip.py`` reads it; an index's
   page in either of the simple API's forms, HTML or JSON) and checked against the index's sha256. Where that
   finds nothing, ``pip download`` fetches it (which also builds fairseq's metadata: about 20 s more);
2. its Python package is installed with fairseq's own switch for builds without extensions (``READTHEDOCS``), by
   uv where the venv has it (``scripts/uv_pip.py``);
3. meanwhile, the three extensions are compiled from a copy of the same sources, with Cython and numpy as fairseq's
   setup.py uses them, and then placed in the installed package;
4. the three are imported, so a failed build stops the install here.

``make install FAIRSEQ_FULL=1`` leaves the whole build to pip instead (every extension).
Run with the venv's Python, after the build requirements (torch pinned, numpy, cython) are installed:
``python scripts/install_fairseq.py BUILD_DIR``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import tarfile
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urljoin, urlparse

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


PYPI = "https://pypi.org/simple"


class _Links(HTMLParser):
    """The (file name, URL) of each link of a simple-API HTML page."""

    def __init__(self):
        super().__init__()
        self.links: List[Tuple[str, str]] = []
        self._href: Optional[str] = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data):
        if self._href is not None and data.strip():
            self.links.append((data.strip(), self._href))
            self._href = None


def index_files(page: bytes, base: str) -> Dict[str, Tuple[str, Optional[str]]]:
    """file name → (absolute URL, sha256 or None) of a project's simple-API page (PEP 691 JSON or PEP 503 HTML)."""
    text = page.decode("utf-8")
    if text.lstrip().startswith("{"):
        return {f["filename"]: (urljoin(base, f["url"]), f.get("hashes", {}).get("sha256"))
                for f in json.loads(text).get("files", [])}
    parser = _Links()
    parser.feed(text)
    found = {}
    for name, href in parser.links:
        url, _, fragment = urljoin(base, href).partition("#")
        found[name] = (url, fragment[len("sha256="):] if fragment.startswith("sha256=") else None)
    return found


def _read(url: str, context, accept: str = "*/*") -> bytes:
    parsed = urlparse(url)
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path))
        return (path / "index.html" if path.is_dir() else path).read_bytes()
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=60, context=context) as response:
        return response.read()


def fetch_source(requirement: str, build: Path, config: Dict[str, str]) -> Optional[Path]:
    """The source archive of ``requirement`` copied from pip's wheel folders or downloaded from its indexes into
    ``build`` (``config``: pip's configuration, as :func:`uv_pip.pip_config` reads it); None where none has it or
    a download fails or does not match the index's sha256 (said on stderr)."""
    name, version = requirement.split("==")
    wanted = {f"{n}-{version}.tar.gz".lower() for n in (name, name.replace("-", "_"))}
    for folder in shlex.split(config.get("find-links", "")):
        if Path(folder).is_dir():
            for p in Path(folder).iterdir():
                if p.name.lower() in wanted:
                    shutil.copy2(p, build / p.name)
                    return build / p.name
    context = ssl.create_default_context(cafile=config.get("cert") or None)
    indexes = [config.get("index-url", PYPI)] + shlex.split(config.get("extra-index-url", ""))
    project = re.sub(r"[-_.]+", "-", name).lower()
    for index in indexes:
        page_url = index.rstrip("/") + f"/{project}/"
        try:
            page = _read(page_url, context, "application/vnd.pypi.simple.v1+json, text/html;q=0.1")
            files = {k.lower(): v for k, v in index_files(page, page_url).items()}
        except (OSError, ValueError) as e:  # no such project on this index, or it is unreachable
            print(f"[setup] {page_url}: {e}", file=sys.stderr)
            continue
        hit = next((files[w] for w in wanted if w in files), None)
        if hit is None:
            continue
        url, sha256 = hit
        try:
            data = _read(url, context)
        except (OSError, ValueError) as e:
            print(f"[setup] {url}: {e}", file=sys.stderr)
            return None
        if sha256 and hashlib.sha256(data).hexdigest() != sha256:
            print(f"[setup] {url}: its sha256 is not the index's {sha256}", file=sys.stderr)
            return None
        path = build / Path(urlparse(url).path).name
        path.write_bytes(data)
        return path
    return None


def download_source(requirement: str, build: Path) -> Path:
    """The unpacked source distribution of ``requirement`` under ``build`` (downloaded once)."""
    name, version = requirement.split("==")
    stem = f"{name.replace('-', '_')}-{version}"
    src = build / stem
    if (src / "setup.py").exists():
        return src
    build.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "scripts"))
    from uv_pip import pip_config

    if fetch_source(requirement, build, pip_config()) is None:
        print(f"[setup] {requirement}: no source archive found directly; pip download", file=sys.stderr)
        _pip("download", "--quiet", "--no-deps", "--no-binary", ":all:", "--no-build-isolation", "-d", str(build),
             requirement)
    archives = [p for p in build.iterdir() if p.name.lower().startswith(stem.lower()) and p.name.endswith(".tar.gz")]
    if len(archives) != 1:
        raise SystemExit(f"{build}: expected one source archive {stem}*.tar.gz after the download, found "
                         f"{[p.name for p in build.iterdir()]}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(build, filter="data")
    if not (src / "setup.py").exists():
        raise SystemExit(f"{archives[0]}: unpacked, but {src / 'setup.py'} is not there")
    return src


def extension_sources(src: Path, dest: Path) -> Path:
    """Copy the folders holding :data:`EXTENSIONS`' sources (with their headers) from the unpacked ``src`` into
    ``dest``, so that they compile there while the package is built from ``src`` (two builds in one tree would share
    its ``build/`` folder); returns ``dest``."""
    for folder in sorted({Path(f).parent for sources in EXTENSIONS.values() for f in sources}):
        shutil.rmtree(dest / folder, ignore_errors=True)
        shutil.copytree(src / folder, dest / folder)
    return dest


def compile_extensions(tree: Path) -> list[Path]:
    """Compile :data:`EXTENSIONS` in place in ``tree`` (as fairseq's setup.py would: Cython, numpy's headers, its
    flags); returns the built files, in :data:`EXTENSIONS`' order."""
    import numpy
    from setuptools import Extension, setup

    exts = [Extension(name, sources=sources, language="c++", extra_compile_args=COMPILE_ARGS,
                      include_dirs=[numpy.get_include()] if name in NUMPY_EXTENSIONS else [])
            for name, sources in EXTENSIONS.items()]
    here = os.getcwd()
    os.chdir(tree)
    try:
        jobs = str(max(1, min(len(exts), os.cpu_count() or 1)))  # the three compile side by side on several cores
        setup(name="fairseq-extensions", ext_modules=exts, script_args=["--quiet", "build_ext", "--inplace", "-j", jobs])
    finally:
        os.chdir(here)
    built = []
    for name in EXTENSIONS:
        rel = Path(*name.split("."))
        found = sorted((tree / rel.parent).glob(rel.name + ".*.so")) + sorted((tree / rel.parent).glob(rel.name + ".*.pyd"))
        if not found:
            raise SystemExit(f"{tree}: compiling {name} left no {rel}.*.so")
        built.append(found[-1])
    return built


def place_extensions(built: list[Path], package_dir: Path) -> list[Path]:
    """Copy the built extensions into the installed package (``package_dir`` = the folder holding ``fairseq/``)."""
    copied = []
    for name, path in zip(EXTENSIONS, built):
        dest = package_dir / Path(*name.split(".")).parent / path.name
        shutil.copy2(path, dest)
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
    print(f"[setup] {requirement}: installing the Python package while {', '.join(EXTENSIONS)} compile")
    package = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "uv_pip.py"), "install", "--quiet", "--no-deps",
                                "--no-build-isolation", str(src)], env=dict(os.environ, READTHEDOCS="1"))
    try:
        built = compile_extensions(extension_sources(src, build / "extensions"))
    finally:
        if package.wait() != 0:
            raise SystemExit(f"installing {src} failed (exit status {package.returncode})")
    importlib.invalidate_caches()
    fairseq_spec = importlib.util.find_spec("fairseq")
    if fairseq_spec is None or not fairseq_spec.submodule_search_locations:
        raise SystemExit(f"{requirement} was installed, but this Python ({sys.executable}) cannot find fairseq")
    package_dir = Path(list(fairseq_spec.submodule_search_locations)[0]).parent
    copied = place_extensions(built, package_dir)
    for path in copied:  # a failed build stops the install here, not at the first fairseq-generate
        load_extension(path)
    print(f"[setup] {requirement} installed with {len(copied)} extensions: {', '.join(p.name for p in copied)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
