"""Input reading, shard splitting and resume bookkeeping for ``syntrans-parse``.

* Lines are separated by ``\\n`` only (a ``\\r`` before it is dropped with it); a
  final line without ``\\n`` counts; the text must be UTF-8. Line numbers are 1-based.
* Shard K of N (0 ≤ K < N) takes the contiguous block of lines ``[K·L//N, (K+1)·L//N)`` of the L
  input lines and writes ``OUTPUT.shard{K}of{N}``; its ``# line`` numbers are those of the full
  input. With N = 1 the output is written to OUTPUT directly.
* Every output is written atomically (a ``.tmp.<host>.<pid>`` file, then ``os.replace``) and then
  gets a ``.done`` marker beside it (``OUTPUT.shard{K}of{N}.done``, or ``OUTPUT.done`` when N = 1):
  JSON with the input's size, the line range, the options, the counts and the failed lines. A shard
  whose output and marker exist and whose marker holds the same input size and options is finished:
  a re-run skips it (``--force`` redoes it); with other options it is redone.
* Merge: when all N shards are finished, their files are concatenated in shard order into OUTPUT
  (atomically), checked to cover lines 1…L exactly once. The shard files and markers are kept.
"""
from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager


class InputError(ValueError):
    """A problem with a user's file, naming the file, the line, what was expected and what was found."""


def count_lines(path: str) -> int:
    """Number of lines (``\\n``-separated; a final line without ``\\n`` counts)."""
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def iter_lines(path: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without the line break) for 0-based lines start ≤ i < stop."""
    with open(path, "rb") as f:
        for i, raw in enumerate(f):
            if stop is not None and i >= stop:
                break
            if i < start:
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(
                    f"{path}, line {i + 1}: expected UTF-8 text, found the byte 0x{raw[e.start]:02x} at byte "
                    f"{e.start + 1} of the line; convert the file to UTF-8 (e.g. with iconv)") from None
            yield i + 1, text.rstrip("\r\n")


def shard_range(n_lines: int, num_shards: int, shard_id: int) -> tuple[int, int]:
    """0-based [start, stop) of shard ``shard_id`` of ``num_shards`` contiguous, balanced blocks."""
    if num_shards < 1:
        raise ValueError(f"--num-shards must be at least 1, found {num_shards}")
    if not 0 <= shard_id < num_shards:
        raise ValueError(f"--shard-id must lie in 0..{num_shards - 1} for --num-shards {num_shards}, found {shard_id}")
    return shard_id * n_lines // num_shards, (shard_id + 1) * n_lines // num_shards


def shard_path(output: str, shard_id: int, num_shards: int) -> str:
    """The file shard K of N writes: OUTPUT itself when N = 1, else ``OUTPUT.shard{K}of{N}``."""
    return output if num_shards == 1 else f"{output}.shard{shard_id}of{num_shards}"


def marker_path(path: str) -> str:
    return f"{path}.done"


@contextmanager
def atomic_writer(path: str):
    """Open ``path.tmp.<host>.<pid>`` for writing; on success it replaces ``path``, on error it is removed."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise InputError(f"{path}: the output directory {d} does not exist; create it first")
    tmp = f"{path}.tmp.{socket.gethostname()}.{os.getpid()}"  # unique across cluster nodes
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_marker(path: str, info: dict) -> None:
    with atomic_writer(marker_path(path)) as f:
        json.dump(info, f, indent=1, sort_keys=True)
        f.write("\n")


def read_marker(path: str) -> dict | None:
    """The marker of a finished output, or None when it (or the output) is missing or unreadable."""
    m = marker_path(path)
    if not (os.path.exists(path) and os.path.exists(m)):
        return None
    try:
        with open(m, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


#: marker fields that must agree for a finished shard to be reused
SETTINGS = ("input_bytes", "num_shards", "shard_id", "parser", "lang", "raw", "split_sentences")


def is_finished(path: str, settings: dict) -> tuple[bool, str | None]:
    """(finished, why not) for the output ``path`` of a run with ``settings``."""
    info = read_marker(path)
    if info is None:
        return False, None
    diff = [k for k in SETTINGS if k in settings and info.get(k) != settings[k]]
    if diff:
        what = ", ".join(f"{k} was {info.get(k)!r}, now {settings[k]!r}" for k in diff)
        return False, f"{path} was made with other settings ({what})"
    return True, None


def missing_shards(output: str, num_shards: int) -> list[str]:
    return [shard_path(output, k, num_shards) for k in range(num_shards)
            if read_marker(shard_path(output, k, num_shards)) is None]


def merge_shards(output: str, num_shards: int) -> dict:
    """Concatenate the finished shards of ``output`` into ``output``; returns summed counts.

    Raises InputError naming the unfinished shards, or shards that disagree (input, options) or do
    not cover the input's lines exactly once.
    """
    missing = missing_shards(output, num_shards)
    if missing:
        raise InputError(f"cannot merge into {output}: {len(missing)} of {num_shards} shards are not finished "
                         f"(no output or no .done marker): {', '.join(missing)}; run those shards first")
    infos = [read_marker(shard_path(output, k, num_shards)) for k in range(num_shards)]
    first = infos[0]
    expect = 0
    for k, info in enumerate(infos):
        p = shard_path(output, k, num_shards)
        for key in ("input_bytes", "n_lines", "parser", "lang", "raw", "split_sentences"):
            if info.get(key) != first.get(key):
                raise InputError(f"cannot merge into {output}: {p} has {key} = {info.get(key)!r} but "
                                 f"{shard_path(output, 0, num_shards)} has {first.get(key)!r}; redo it with --force")
        if info.get("num_shards") != num_shards or info.get("shard_id") != k:
            raise InputError(f"cannot merge into {output}: {p}.done says shard {info.get('shard_id')} of "
                             f"{info.get('num_shards')}, expected shard {k} of {num_shards}")
        if info.get("first_line") != expect + 1:
            raise InputError(f"cannot merge into {output}: {p} starts at line {info.get('first_line')}, "
                             f"expected line {expect + 1}")
        expect = info.get("last_line", expect)
    if expect != first.get("n_lines"):
        raise InputError(f"cannot merge into {output}: the shards cover lines 1..{expect}, expected 1..{first.get('n_lines')}")
    with atomic_writer(output) as out:
        for k in range(num_shards):
            with open(shard_path(output, k, num_shards), encoding="utf-8", newline="\n") as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    out.write(chunk)
    totals = {key: sum(int(i.get(key, 0)) for i in infos) for key in ("lines", "sentences", "words", "n_failures")}
    return totals
