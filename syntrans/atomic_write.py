"""Writing a file atomically: into a temporary sibling that replaces the file only once it is whole, so that a
failed or interrupted write leaves the old file (or none), never a half-written one. The one helper of every
such write in the package (markers, sums, summaries, parses, BPE text, checkpoints); standard library only."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import IO, Iterator, Union

PathLike = Union[str, "os.PathLike[str]"]


@contextmanager
def atomic_path(path: PathLike, suffix: str = ".tmp") -> Iterator[str]:
    """The temporary path ``{path}{suffix}`` to write; when the block ends without an error it replaces ``path``
    (``os.replace``), else it is removed."""
    tmp = f"{os.fspath(path)}{suffix}"
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextmanager
def atomic_file(path: PathLike, mode: str = "w", suffix: str = ".tmp", fsync: bool = False) -> Iterator[IO]:
    """:func:`atomic_path` opened (text modes: UTF-8, ``\\n`` line ends); ``fsync``: the data reach the disk before
    the file replaces ``path``."""
    text = "b" not in mode
    with atomic_path(path, suffix) as tmp:
        with open(tmp, mode, encoding="utf-8" if text else None, newline="\n" if text else None) as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())


def write_text(path: PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_file(path) as f:
        f.write(text)
