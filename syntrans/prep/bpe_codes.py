"""A subword-nmt codes file checked before subword-nmt reads it.

subword-nmt's ``BPE`` writes "Error: invalid line N in BPE codes file" and a second line to stderr and exits the
process (``sys.exit(1)``) for a file it cannot read, naming neither the file nor the command, and takes a file with
no merges (an empty one, its ``#version`` line alone) the same way. :func:`codes_fault` says what is wrong in the
words of our errors; :func:`read_bpe` builds the ``BPE`` of a checked file.
"""
from __future__ import annotations

from typing import Optional


def codes_fault(path: str) -> Optional[str]:
    """What keeps ``path`` from being subword-nmt codes (learn-bpe's output: an optional ``#version: …`` line, then one
    merge per line, two subword units separated by a space), or None. The message names the file and the line."""
    expected = "expected subword-nmt codes (learn-bpe's output: a '#version' line, then one merge per line)"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        return f"{path}: not UTF-8 text (byte {e.start}): {expected}"
    lines = text.rstrip("\n").split("\n")
    first = 1
    if lines and lines[0].startswith("#version:"):
        lines, first = lines[1:], 2
    if not any(line.strip() for line in lines):
        return f"{path}: no merges: {expected}"
    for n, line in enumerate(lines, first):
        units = line.strip("\r\n ").split(" ")
        if len(units) != 2:
            return (f"{path}, line {n}: expected a merge, two subword units separated by a space, found {line!r} "
                    f"({expected})")
    return None


def read_bpe(path: str, separator: str = "@@"):
    """subword-nmt's ``BPE`` of the codes file ``path``, checked first (ValueError: :func:`codes_fault`)."""
    from subword_nmt.apply_bpe import BPE

    fault = codes_fault(path)
    if fault:
        raise ValueError(fault)
    with open(path, encoding="utf-8") as f:
        try:
            return BPE(f, separator=separator)
        except SystemExit:  # subword-nmt's own refusal, in case it refuses more than codes_fault does
            raise ValueError(f"{path}: subword-nmt cannot read it as BPE codes") from None


__all__ = ["codes_fault", "read_bpe"]
