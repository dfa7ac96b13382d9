"""Checksums of the raw files: known values where published, else trust-on-first-use.

A file is checked, in this order, against: a checksum from the registry (sha256 or a published md5),
a sha256 from the user's ``--checksums FILE``, and the sha256 recorded on first use. Downloaded
archives are recorded in ``<raw-dir>/SHA256SUMS``; the files of licensed and local corpora, which
belong to the user (and may sit in a read-only folder), are recorded in ``OUT/.done/raw-SHA256SUMS``
instead, and also checked against a ``SHA256SUMS`` the user keeps next to them, if any. When the
record has no line for the file yet, its sha256 is added (trust on first use) and checked on every
later run. A mismatch is a :class:`ChecksumError` naming the file, the expected
and the found hash, where the expectation came from, and how to fix it.

``SHA256SUMS`` and ``--checksums`` files use the ``sha256sum`` format: ``<64 hex digits>  <name>``
per line (a ``*`` before the name is accepted; ``#`` lines are comments). A name is the file's path
relative to ``--raw-dir`` (its base name for the archives); a ``--checksums`` line may also give the
base name alone.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..atomic_write import write_text
from .errors import PrepError

SUMS_NAME = "SHA256SUMS"
_LINE = re.compile(r"^([0-9a-fA-F]{64})\s+\*?(.+)$")


class ChecksumError(PrepError):
    """A raw file whose hash differs from the expected one."""


@dataclass(frozen=True)
class Digest:
    """sha256 and md5 of one file (hex), with the size and mtime they were computed for."""

    sha256: str
    md5: str
    size: int
    mtime_ns: int


def file_digest(path: Path, chunk: int = 1 << 20) -> Digest:
    """Hash a file once for both sha256 and md5."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    st = os.stat(path)
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            if not block:
                break
            sha.update(block)
            md5.update(block)
    return Digest(sha.hexdigest(), md5.hexdigest(), st.st_size, st.st_mtime_ns)


def read_sums(path: Path) -> dict[str, str]:
    """{name: sha256} from a sha256sum-format file (empty when the file does not exist)."""
    if not path.exists():
        return {}
    sums = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise PrepError(f"{path}, line {n}: expected '<64 hex digits>  <file name>' (sha256sum format), "
                            f"found {line[:80]!r}; fix or delete the line")
        sums[m.group(2).strip()] = m.group(1).lower()
    return sums


def record_sum(path: Path, name: str, sha256: str) -> None:
    """Add or replace ``name``'s line in the sums file ``path`` (written atomically)."""
    sums = read_sums(path)
    sums[name] = sha256
    write_text(path, "".join(f"{h}  {n}\n" for n, h in sorted(sums.items())))


def expected_hashes(name: str, known_sha256: str | None, known_md5: str | None,
                    known: list[tuple[dict[str, str], str]], recorded: dict[str, str], record_file: Path
                    ) -> list[tuple[str, str, str, str]]:
    """(algorithm, expected hex, where it came from, how to fix a mismatch) for each expectation of ``name``.

    ``known``: (sums, label) of read-only sums files (``--checksums``, a local corpus's own SHA256SUMS);
    a name is looked up as given, then by its base name.
    """
    out = []
    refetch = "delete it: it is downloaded again on the next run"
    if known_sha256:
        out.append(("sha256", known_sha256.lower(), "the corpus registry", refetch))
    if known_md5:
        out.append(("md5", known_md5.lower(), "the corpus registry (as published with sacreBLEU)", refetch))
    for sums, label in known:
        want = sums.get(name) or sums.get(os.path.basename(name))
        if want:
            out.append(("sha256", want, label, f"replace the file, or correct its sum in {label.split(' ', 1)[-1]}"))
    if name in recorded:
        out.append(("sha256", recorded[name], f"{record_file}, recorded when it was first used",
                    f"delete it (a downloadable file is downloaded again on the next run), or, if you replaced it "
                    f"on purpose, remove its line from {record_file}"))
    return out


def verify_file(path: Path, record_file: Path, name: str | None = None, known_sha256: str | None = None,
                known_md5: str | None = None, known: list[tuple[dict[str, str], str]] = (),
                digest: Digest | None = None) -> Digest:
    """Check ``path`` against every expectation (module docs); record its sha256 in ``record_file`` when new.

    ``name``: the file's name in the sums files (default: its base name). ``digest``: a digest already
    computed for this file; reused when the size and mtime still agree, to skip hashing.
    Returns the file's digest; raises ChecksumError on a mismatch.
    """
    path = Path(path)
    name = name or path.name
    recorded = read_sums(record_file)
    st = os.stat(path)
    if digest is None or (digest.size, digest.mtime_ns) != (st.st_size, st.st_mtime_ns):
        digest = file_digest(path)
    found = {"sha256": digest.sha256, "md5": digest.md5}
    for algo, want, source, fix in expected_hashes(name, known_sha256, known_md5, list(known), recorded, record_file):
        if found[algo] != want:
            raise ChecksumError(f"{path}: {algo} mismatch: expected {want} (from {source}), found {found[algo]}. "
                                f"The file is damaged or not the expected one: {fix}.")
    if name not in recorded:
        try:
            record_sum(record_file, name, digest.sha256)
        except OSError as e:
            raise PrepError(f"{record_file}: cannot record the sha256 of {path} ({e}); make {record_file.parent} "
                            f"writable, or copy the files into a writable --raw-dir") from None
    return digest
