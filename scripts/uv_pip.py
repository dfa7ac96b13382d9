"""``pip install ARGS`` done by uv, with pip's own configuration of this machine (`make install`).

uv installs the same packages several times faster than pip (measured on a 2-core machine: torch and the build
requirements 22 s instead of 102 s; it downloads and unpacks in parallel and does not byte-compile). But uv does not
read pip's configuration files, and a machine's package indexes, local wheel folders and constraints are set there
(``pip config list``: on these machines a local index, a folder holding the CPU build of torch, and a cap on torch's
release). So this script reads pip's effective configuration through pip itself and passes it to uv:

=====================  ==============================================================================
pip option             uv
=====================  ==============================================================================
``index-url``          ``--index-url``
``extra-index-url``    ``--extra-index-url`` each (a ``file://`` index that does not exist is left out,
                       as pip ignores it)
``find-links``         ``--find-links`` each (a local folder that does not exist is left out)
``constraint``         ``--constraint`` each (``PIP_CONSTRAINT`` included: the Makefile's torch pin)
``cert``               ``SSL_CERT_FILE``
``timeout``            ``UV_HTTP_TIMEOUT``
=====================  ==============================================================================

``--compile-bytecode`` (pip byte-compiles what it installs, uv does not by default; where ``PYTHONDONTWRITEBYTECODE``
is set, as on these machines, nothing would write the ``.pyc`` files later, and every process would compile torch and
fairseq again: measured 34 s instead of 19 s to import both), and ``--index-strategy unsafe-best-match``: like pip,
the best version over every index (uv's default stops at the
first index that has the package). Each option is taken as ``pip install`` takes it: its environment variable
(``PIP_FIND_LINKS``…) first, then the ``[install]`` section of pip's configuration files, then ``[global]`` (``pip
config list`` gives each with the files' own precedence applied). The interpreter installed into is the one running
this script.

Without uv next to this Python, or when uv fails, the same arguments go to ``python -m pip install`` (said on
stderr): uv is a speed-up, never a requirement. ``SYNTRANS_NO_UV=1`` uses pip from the start.

Usage: ``python scripts/uv_pip.py install ARGS…`` (the arguments of ``pip install``).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List
from urllib.parse import unquote, urlparse

#: where ``pip install`` reads an option, strongest first (``pip config list`` prefixes each key with it: the
#: environment variables' ``:env:``, else the configuration files' section)
SECTIONS = (":env:", "install", "global")


def pip_config(python: str = sys.executable) -> Dict[str, str]:
    """pip's effective configuration of ``python`` for ``pip install``: option → value, from the strongest of
    :data:`SECTIONS` that sets it (other commands' sections are not read)."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=120,
                            check=True).stdout
    found: Dict[str, Dict[str, str]] = {}
    for line in listed.splitlines():
        key, sep, value = line.partition("=")
        section, dot, name = key.rpartition(".")
        if sep and dot and section in SECTIONS:
            found.setdefault(name, {})[section] = value.strip().strip("'\"")
    return {name: next(by_section[s] for s in SECTIONS if s in by_section) for name, by_section in found.items()}


def _exists(location: str) -> bool:
    """A local folder or ``file://`` URL that exists; any other URL counts as existing."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).exists()
    if parsed.scheme in ("", None) or len(parsed.scheme) == 1:  # a path (a drive letter is no scheme)
        return Path(location).exists()
    return True


def uv_command(uv: str, args: List[str], config: Dict[str, str], python: str = sys.executable):
    """(argv, environment additions) of ``uv pip install`` for pip's ``args`` under pip's ``config``."""
    argv = [uv, "pip", "install", "--python", python, "--index-strategy", "unsafe-best-match"]
    if "--no-compile" in args:  # pip's flag; uv's default
        args = [a for a in args if a != "--no-compile"]
    else:  # pip's default (see the module docstring: PYTHONDONTWRITEBYTECODE)
        argv.append("--compile-bytecode")
    if "index-url" in config:
        argv += ["--index-url", config["index-url"]]
    flags = {"extra-index-url": "--extra-index-url", "find-links": "--find-links", "constraint": "--constraint"}
    for name, flag in flags.items():
        for value in shlex.split(config.get(name, "")):
            if name == "constraint" or _exists(value):
                argv += [flag, value]
    env = {}
    if config.get("cert"):
        env["SSL_CERT_FILE"] = config["cert"]
    timeout = config.get("default-timeout") or config.get("timeout")  # PIP_DEFAULT_TIMEOUT; `timeout` in a file
    if timeout:
        env["UV_HTTP_TIMEOUT"] = timeout.split(".")[0]
    return argv + list(args), env


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] != "install":
        print("usage: python scripts/uv_pip.py install ARGS… (the arguments of pip install)", file=sys.stderr)
        return 2
    args = args[1:]
    uv = Path(sys.executable).parent / "uv"
    if os.environ.get("SYNTRANS_NO_UV", "") not in ("", "0") or not uv.is_file():
        why = "SYNTRANS_NO_UV is set" if uv.is_file() else f"no uv next to {sys.executable}"
        print(f"[setup] pip install ({why})", file=sys.stderr)
    else:
        command, extra_env = uv_command(str(uv), args, pip_config())
        done = subprocess.run(command, env={**os.environ, **extra_env})
        if done.returncode == 0:
            return 0
        print(f"[setup] uv pip install failed (exit status {done.returncode}): the same install with pip",
              file=sys.stderr)
    return subprocess.run([sys.executable, "-m", "pip", "install", *args]).returncode


if __name__ == "__main__":
    sys.exit(main())
