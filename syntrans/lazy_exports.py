"""Lazy package exports (PEP 562): a package names what it offers without importing the modules that hold it.

``syntrans.syntax`` and ``syntrans.parsing`` export functions whose modules import torch or stanza (seconds);
a command that only needs one light module of the package (``syntrans-parse --help``) should not pay for the rest.
"""
from __future__ import annotations

import importlib
from typing import Callable, Dict, Iterable, List, Tuple

Exports = Tuple[Callable[[str], object], Callable[[], List[str]], List[str]]


def lazy_exports(package: str, where: Dict[str, Iterable[str]]) -> Exports:
    """``(__getattr__, __dir__, __all__)`` for ``package``, exporting each name of ``where[module]`` from
    ``package.module``, imported on first access (and then cached in the package's namespace)."""
    home = {name: module for module, names in where.items() for name in names}
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str):
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home[name]}"), name)
        namespace[name] = value
        return value

    def __dir__() -> List[str]:
        return sorted(set(namespace) | set(home))

    return __getattr__, __dir__, sorted(home)
