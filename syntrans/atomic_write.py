"""Writing a file atomically: into a temporary sibling that replaces the file only once it is whole, so that a
failed or interrupted write leaves the old file (or none), never a half-written one. The one helper of every
such write in the package (markers, sums, summaries, parses, BPE text, checkpoints); standard library only."""
from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from typing import IO, Dict, Hashable, Iterator, Mapping, TypeVar, Union

PathLike = Union[str, "os.PathLike[str]"]
K = TypeVar("K", bound=Hashable)


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


@contextmanager
def atomic_files(paths: Mapping[K, PathLike], suffix: str = ".tmp") -> Iterator[Dict[K, IO]]:
    """Several text files written together ({key: open file}): each into its temporary sibling; when the block ends
    without an error every one replaces its path, else every one is removed (e.g. the two sides of a parallel
    corpus, never one side new and the other old)."""
    with ExitStack() as stack:
        yield {key: stack.enter_context(atomic_file(path, suffix=suffix)) for key, path in paths.items()}


def write_text(path: PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_file(path) as f:
        f.write(text)
