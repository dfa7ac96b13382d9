"""Input reading, shard splitting and resume bookkeeping for ``syntrans-parse``.

* Lines are separated by ``\\n`` only (a ``\\r`` before it is dropped with it); a
  final line without ``\\n`` counts; the text must be UTF-8. Line numbers are 1-based.
* Shard K of N (0 ≤ K < N) takes the contiguous block of lines ``[K·L//N, (K+1)·L//N)`` of the L
  input lines and writes ``OUTPUT.shard{K}of{N}``; its ``# line`` numbers are those of the full
  input. With N = 1 the output is written to OUTPUT directly.
* Every output is written atomically and then gets a ``.done`` marker beside it
  (``OUTPUT.shard{K}of{N}.done``, or ``OUTPUT.done``): JSON with the input's sha256 and size, the line range,
  the options, the views it holds, the counts and the failed lines. A finished output is reused only when the
  input's *content* is unchanged (its sha256, not its size or time) and the settings that decide the parse
  (:data:`CONTENT`) are the same; then the views it lacks, if any, are parsed and merged into it. Otherwise it is
  parsed again, and the log says why (``--force`` redoes it anyway).
* While a shard is parsed, its text goes to ``PATH.partial`` and, at least every minute, ``PATH.partial.json``
  records how many input lines are in it (flushed to disk first): a shard that dies mid-way resumes from there
  when run again with the same input and settings.
* Merge: when all N shards are finished, their files are concatenated in shard order into OUTPUT
  (atomically), checked to cover lines 1…L exactly once and to hold the same views of the same input; OUTPUT then
  gets its own ``.done`` marker (``merged_from`` N shards). The shard files and markers are kept.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from ..atomic_write import atomic_file


class InputError(ValueError):
    """A problem with a user's file, naming the file, the line, what was expected and what was found."""


def count_lines(path: str) -> int:
    """Number of lines (``\n``-separated; a final line without ``\n`` counts)."""
    return _scan(path, None)


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


def scan_input(path: str) -> tuple[int, str]:
    """(number of lines as :func:`count_lines` counts them, sha256 of the bytes) in one read of the file."""
    h = hashlib.sha256()
    return _scan(path, h), h.hexdigest()


def _scan(path: str, h) -> int:
    """The lines of ``path`` counted in chunks of 1 MiB, each chunk also fed to the hash ``h`` where given."""
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            if h is not None:
                h.update(chunk)
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def file_sha256(path: str) -> str:
    """The sha256 of a file's bytes (hex), read in 1 MiB pieces."""
    return scan_input(path)[1]


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
    suffix = f".tmp.{socket.gethostname()}.{os.getpid()}"  # unique across cluster nodes
    with atomic_file(path, suffix=suffix, fsync=True) as f:
        yield f


def write_marker(path: str, info: dict) -> None:
    with atomic_writer(marker_path(path)) as f:
        json.dump(info, f, indent=1, sort_keys=True)
        f.write("\n")


def read_marker(path: str) -> dict | None:
    """The marker of a finished output, or None when it (or the output) is missing or unreadable."""
    return _json_beside(marker_path(path), path)


def _json_beside(json_file: str, other: str) -> dict | None:
    """The JSON object in ``json_file`` when both it and ``other`` exist; None when either is missing or the JSON is
    unreadable or not an object."""
    if not (os.path.exists(other) and os.path.exists(json_file)):
        return None
    try:
        with open(json_file, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


#: the settings that decide what a parse holds: a finished output is reused only when its marker has the same
CONTENT = ("input_sha256", "parser", "lang", "raw", "split_sentences")


def content_difference(info: dict, settings: dict) -> str | None:
    """Why a finished output (its marker ``info``) is not a parse of the input and settings ``settings``, or None."""
    if "input_sha256" not in info:
        return "its .done marker holds no content hash of the input (it was made by an earlier syntrans)"
    if info.get("input_sha256") != settings["input_sha256"]:
        return (f"the input's content changed since it was parsed (sha256 {settings['input_sha256'][:12]}…, "
                f"{settings.get('input_bytes')} bytes; the parse is of sha256 {str(info.get('input_sha256'))[:12]}…, "
                f"{info.get('input_bytes')} bytes)")
    diff = [k for k in CONTENT if info.get(k) != settings[k]]
    if diff:
        return "it was made with other settings (" + ", ".join(f"{k} was {info.get(k)!r}, now {settings[k]!r}"
                                                              for k in diff) + ")"
    return None


def finished_views(path: str, settings: dict, first_line: int, last_line: int) -> tuple[dict | None, str | None]:
    """(marker, None) when ``path`` is a finished parse of input lines ``first_line..last_line`` under ``settings``
    (the views it holds: ``marker["views"]``); (None, why not) when it exists but is not; (None, None) when it is
    not there (or not finished)."""
    info = read_marker(path)
    if info is None:
        return None, None
    why = content_difference(info, settings)
    if why is None and (info.get("first_line"), info.get("last_line")) != (first_line, last_line):
        why = (f"it holds lines {info.get('first_line')}-{info.get('last_line')}, this run lines "
               f"{first_line}-{last_line}")
    if why is None and not isinstance(info.get("views"), list):
        why = "its .done marker does not say which views it holds"
    return (None, f"{path}: {why}") if why else (info, None)


def partial_path(path: str) -> str:
    """Where the text of an unfinished output grows."""
    return f"{path}.partial"


def progress_path(path: str) -> str:
    """The JSON beside ``partial_path(path)``: how much of it is complete (``lines_done``, ``bytes``, the counts)."""
    return f"{path}.partial.json"


def read_progress(path: str, key: dict) -> dict | None:
    """The progress of an unfinished output of ``path`` made under ``key`` (content, range, views), or None when
    there is none, it was made under another key, or its partial file is shorter than it says."""
    part = partial_path(path)
    info = _json_beside(progress_path(path), part)
    if info is None or info.get("key") != key or os.path.getsize(part) < int(info.get("bytes", -1)):
        return None
    return info


def write_progress(path: str, info: dict) -> None:
    with atomic_writer(progress_path(path)) as f:
        json.dump(info, f, sort_keys=True)
        f.write("\n")


def clear_progress(path: str) -> None:
    for p in (partial_path(path), progress_path(path)):
        try:
            os.remove(p)
        except FileNotFoundError:
            pass


def missing_shards(output: str, num_shards: int) -> list[str]:
    return [shard_path(output, k, num_shards) for k in range(num_shards)
            if read_marker(shard_path(output, k, num_shards)) is None]


def merge_shards(output: str, num_shards: int) -> dict:
    """Concatenate the finished shards of ``output`` into ``output`` and write its marker; returns summed counts.

    Raises InputError naming the unfinished shards, or shards that disagree (input, options, views) or do
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
        for key in ("input_sha256", "input_bytes", "n_lines", "parser", "lang", "raw", "split_sentences", "views"):
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
    try:
        os.remove(marker_path(output))  # the old merge's marker must not outlive it
    except FileNotFoundError:
        pass
    with atomic_writer(output) as out:
        for k in range(num_shards):
            with open(shard_path(output, k, num_shards), encoding="utf-8", newline="\n") as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    out.write(chunk)
    totals = {key: sum(int(i.get(key, 0)) for i in infos)
              for key in ("lines", "empty_lines", "sentences", "words", "n_failures")}
    merged = {k: first.get(k) for k in ("input", "input_bytes", "input_sha256", "n_lines", "parser", "lang", "raw",
                                        "split_sentences", "views")}
    merged.update(totals, first_line=1, last_line=first.get("n_lines"), num_shards=num_shards, shard_id=None,
                  merged_from=num_shards, failures=[f for i in infos for f in i.get("failures", [])],
                  seconds=round(sum(float(i.get("seconds", 0)) for i in infos), 3))
    write_marker(output, merged)
    return totals
