"""Step 1 (fetch): download a corpus's archives into ``--raw-dir``, or check that local files are there.

Downloads resume: bytes go to ``NAME.part``; a later run asks for the rest with an HTTP ``Range``
request (a server that ignores it sends the whole file again) and renames the file when complete.
Every file is verified (:mod:`syntrans.prep.checksums`); a file already present and verified is
skipped. Offline, or on any network error, the step stops with a :class:`~syntrans.prep.errors.PrepError`
listing exactly which files to put where (names and URLs). Licensed and local corpora are never
downloaded: missing files give the same kind of message, with the corpus's documented layout.

``urlopen`` is looked up in this module at call time, so tests can replace it.
"""
from __future__ import annotations

import http.client
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

from tqdm import tqdm

from .checksums import SUMS_NAME, Digest, read_sums, verify_file
from .corpora import Corpus, Download, Part
from .errors import PrepError

urlopen = urllib.request.urlopen

#: what a failed transfer raises (DNS, refused connection, timeout, HTTP error, truncated stream)
NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, OSError)
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class IncompleteDownload(OSError):
    """The server closed the stream before the announced size; the ``.part`` file is kept for a resume."""


def part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def download(url: str, dest: Path, timeout: float = 60.0, log: Callable[[str], None] = print,
             progress: bool = True) -> None:
    """Fetch ``url`` into ``dest`` via ``dest.part``, continuing an existing ``.part`` with a Range request.

    Raises one of NETWORK_ERRORS on failure (the ``.part`` file stays for the next attempt).
    """
    dest = Path(dest)
    part = part_path(dest)
    have = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": "syntrans-prepare"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        resp = urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing left after byte `have`: complete only if the sizes agree
            m = re.match(r"bytes \*/(\d+)", e.headers.get("Content-Range", "") if e.headers else "")
            if m and int(m.group(1)) == have:
                os.replace(part, dest)
                return
            part.unlink()
            raise IncompleteDownload(f"the server refused to continue {dest.name} at byte {have} (HTTP 416"
                                     + (f", the file has {m.group(1)} bytes" if m else "")
                                     + "); the partial file was deleted: run again to download it afresh") from None
        raise
    with resp:
        status = getattr(resp, "status", None) or resp.getcode()
        total = None
        if have and status == 206:
            m = _CONTENT_RANGE.match(resp.headers.get("Content-Range", ""))
            if not m or int(m.group(1)) != have:
                raise IncompleteDownload(f"the server answered the resume of {dest.name} at byte {have} with "
                                         f"Content-Range {resp.headers.get('Content-Range')!r}; delete {part} to "
                                         f"start over")
            total = None if m.group(3) == "*" else int(m.group(3))
            mode = "ab"
            log(f"{dest.name}: continuing the partial download at byte {have}")
        else:
            if have:
                log(f"{dest.name}: the server ignored the Range request; downloading from the start")
            have, mode = 0, "wb"
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        with open(part, mode) as f, tqdm(total=total, initial=have, unit="B", unit_scale=True, unit_divisor=1024,
                                         desc=dest.name, file=sys.stderr, disable=not progress,
                                         mininterval=1.0 if sys.stderr.isatty() else 30.0) as bar:
            while True:
                block = resp.read(1 << 16)
                if not block:
                    break
                f.write(block)
                bar.update(len(block))
    size = part.stat().st_size
    if total is not None and size != total:
        raise IncompleteDownload(f"the connection closed after {size} of {total} bytes of {dest.name}")
    os.replace(part, dest)


def offline_message(corpus: Corpus, raw_dir: Path, missing: Iterable[Download], error: BaseException | None,
                    url: str | None) -> str:
    """What to put where when the archives cannot be downloaded (network error or offline)."""
    missing = list(missing)
    width = max(len(str(raw_dir / d.name)) for d in missing)
    lines = [f"syntrans-prepare: cannot download corpus {corpus.name}"
             + (f": {type(error).__name__}: {' '.join(str(error).split())} (while fetching {url})" if error else "")
             + ".",
             f"Without network access, download these {len(missing)} file(s) elsewhere and put them into "
             f"{raw_dir} (the --raw-dir) under exactly these names, then run the same command again "
             f"with --raw-dir {raw_dir}:"]
    lines += [f"  {str(raw_dir / d.name):<{width}}  <- {d.url}" for d in missing]
    lines.append("A partly downloaded file is kept as NAME.part and continued on the next run; files already in "
                 "--raw-dir are verified and never downloaded again.")
    return "\n".join(lines)


def fetch_downloads(corpus: Corpus, downloads: Iterable[Download], raw_dir: Path, known: list,
                    cache: dict[str, Digest], log: Callable[[str], None] = print,
                    progress: bool = True) -> dict[str, Digest]:
    """Download what is missing, verify everything (recorded in ``raw_dir/SHA256SUMS``); {file name: digest}.

    ``known``: [(sums, label)] of user-supplied sums (``--checksums``). ``cache``: digests from an
    earlier run ({name: Digest}); a file with the same size and mtime is not hashed again (its
    expected hashes are still compared).
    """
    raw_dir.mkdir(parents=True, exist_ok=True)
    downloads = list(downloads)
    digests: dict[str, Digest] = {}
    missing = []
    for d in downloads:
        path = raw_dir / d.name
        if path.exists():
            digests[d.name] = verify_file(path, raw_dir / SUMS_NAME, d.name, d.sha256, d.md5, known, cache.get(d.name))
            log(f"{d.name}: already downloaded, skipped")
        else:
            missing.append(d)
    for k, d in enumerate(missing):
        path = raw_dir / d.name
        log(f"downloading {d.url} -> {path}")
        try:
            download(d.url, path, log=log, progress=progress)
        except NETWORK_ERRORS as e:
            raise PrepError(offline_message(corpus, raw_dir, missing[k:], e, d.url)) from None
        digests[d.name] = verify_file(path, raw_dir / SUMS_NAME, d.name, d.sha256, d.md5, known)
    return digests


def local_files(parts: Iterable[Part]) -> list[tuple[str, ...]]:
    """Candidate name tuples of the parts read directly from --raw-dir (no archive), in order, deduplicated."""
    out: list[tuple[str, ...]] = []
    for p in parts:
        if p.archive is None:
            for _, names in p.files:
                if names not in out:
                    out.append(names)
    return out


def check_local_files(corpus: Corpus, parts: Iterable[Part], raw_dir: Path, record_file: Path, known: list,
                      cache: dict[str, Digest], log: Callable[[str], None] = print) -> dict[str, Digest]:
    """Licensed and local corpora: every file must be in --raw-dir (else PrepError with the layout); verify them.

    Nothing is written into --raw-dir: first-use sums go to ``record_file``; a ``SHA256SUMS`` in
    --raw-dir, if any, is checked too.
    """
    found, missing = {}, []
    for names in local_files(parts):
        hit = next((raw_dir / n for n in names if (raw_dir / n).is_file()), None)
        if hit is None:
            missing.append(names)
        else:
            found[hit.relative_to(raw_dir).as_posix()] = hit
    if missing:
        what = "is licensed and never downloaded" if corpus.kind == "licensed" else "is a local corpus"
        lines = [f"syntrans-prepare: corpus {corpus.name} {what}; these files are missing from {raw_dir} "
                 f"(the --raw-dir):"]
        lines += [f"  {raw_dir / names[0]}" + (f"   (or {', '.join(names[1:])})" if len(names) > 1 else "")
                  for names in missing]
        lines += [corpus.layout, f"Then run the same command again with --raw-dir {raw_dir}."]
        raise PrepError("\n".join(lines))
    own = raw_dir / SUMS_NAME
    known = list(known) + ([(read_sums(own), str(own))] if own.is_file() else [])
    record_file.parent.mkdir(parents=True, exist_ok=True)
    digests = {}
    for rel, path in found.items():
        digests[rel] = verify_file(path, record_file, rel, None, None, known, cache.get(rel))
        log(f"{rel}: present, verified")
    return digests
