"""Step 2 (extract): the parallel raw text ``OUT/text/{split}.{lang}`` from the corpus's files.

Readers (pure functions over decoded lines; pure Python, no Moses scripts):

* ``plain``: one segment per line.
* ``iwslt-tags`` (IWSLT ``train.tags.*``): lines holding a metadata element (``<url>``, ``<talkid>``,
  ``<keywords>``, ``<speaker>``, ``<reviewer``, ``<translator``, ``<doc``, ``</doc>``) are dropped;
  ``<title>``/``<description>`` lose their tags and keep their text (fairseq's prepare-iwslt14.sh rules).
* ``iwslt-xml`` and ``sgm``: the text of each ``<seg …>…</seg>`` line, whitespace collapsed and stripped
  (sacreBLEU's reading of WMT sgm; entities are kept as written, as sacreBLEU and fairseq keep them);
  ``iwslt-xml`` also turns ’ into ' (as fairseq's script does for the IWSLT dev/test sets).
* ``tmx``: each ``<tu>``'s ``<seg>`` text for the two languages (``xml:lang`` matched on its primary
  subtag, ``en-US`` = ``en``); a ``<tu>`` lacking a language is skipped and counted.
* ``tsv``: tab-separated columns named by the part's ``columns``.
* ``aspec``: ``|||``-separated fields, the last two being the part's two ``columns``.

Every output line is one line: characters that other tools read as line breaks (``\\r``, ``\\v``,
``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, U+2028, U+2029) become spaces, so no tool downstream can
split a line. The sides of every part must have the same number of lines (else a PrepError names both
files and counts).
"""
from __future__ import annotations

import gzip
import re
import shutil
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO
from xml.etree.ElementTree import ParseError, iterparse

from ..atomic_write import atomic_files
from .corpora import ONE_LANGUAGE_FORMATS, SPLITS, PairData, Part
from .errors import PrepError

_LINE_BREAKS = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
IWSLT_DROP = ("<url>", "<talkid>", "<keywords>", "<speaker>", "<reviewer", "<translator", "<doc ", "</doc>")
IWSLT_STRIP = ("<title>", "</title>", "<description>", "</description>")
_SEG = re.compile(r"<seg\b[^>]*>(.*)</seg>", re.S)
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def one_line(text: str) -> str:
    """``text`` without its line end, inner line-break characters replaced by spaces."""
    return _LINE_BREAKS.sub(" ", text.rstrip("\r\n"))


def iwslt_tags(lines: Iterable[str]) -> Iterator[str]:
    """The text lines of an IWSLT ``train.tags`` file (metadata lines dropped, title/description tags stripped)."""
    for line in lines:
        if any(tag in line for tag in IWSLT_DROP):
            continue
        for tag in IWSLT_STRIP:
            line = line.replace(tag, "")
        yield line


def seg_texts(lines: Iterable[str], fix_quotes: bool = False) -> Iterator[str]:
    """The text of each ``<seg>`` line (sgm / IWSLT xml); ValueError naming the 1-based line when malformed."""
    for n, line in enumerate(lines, 1):
        if not line.lstrip().startswith("<seg"):
            continue
        m = _SEG.search(line)
        if m is None:
            raise ValueError(f"line {n}: expected '<seg ...>text</seg>' on one line, found {line.strip()[:80]!r}")
        text = " ".join(m.group(1).split())
        yield text.replace("\u2019", "'") if fix_quotes else text


def _lang_of(code: str | None) -> str:
    return (code or "").lower().replace("_", "-").split("-")[0]


def tmx_pairs(source: BinaryIO, langs: tuple[str, str], skipped: list[int] | None = None) -> Iterator[tuple[str, str]]:
    """(text in langs[0], text in langs[1]) per ``<tu>``; the 1-based numbers of skipped ``<tu>`` go to ``skipped``."""
    n = 0
    for _, elem in iterparse(source, events=("end",)):
        if elem.tag != "tu":
            continue
        n += 1
        texts = {}
        for tuv in elem.iter("tuv"):
            seg = tuv.find("seg")
            lang = _lang_of(tuv.get(_XML_LANG) or tuv.get("lang"))
            if seg is not None and lang:
                texts[lang] = " ".join("".join(seg.itertext()).split())
        if all(lang in texts for lang in langs):
            yield texts[langs[0]], texts[langs[1]]
        elif skipped is not None:
            skipped.append(n)
        elem.clear()


def column_pairs(lines: Iterable[str], columns: tuple[str, ...], langs: tuple[str, str], sep: str = "\t",
                 last: bool = False) -> Iterator[tuple[str, str]]:
    """(langs[0] text, langs[1] text) from ``sep``-separated fields named by ``columns``.

    ``last``: ``columns`` name the last fields of each line (ASPEC: ``id ||| no ||| ja ||| en``).
    ValueError naming the 1-based line when a line has too few fields.
    """
    i, j = columns.index(langs[0]), columns.index(langs[1])
    need = len(columns) + (1 if last else 0)
    for n, line in enumerate(lines, 1):
        fields = line.rstrip("\r\n").split(sep)
        if len(fields) < need:
            raise ValueError(f"line {n}: expected {'at least ' if last else ''}{need} fields separated by {sep!r} "
                             f"({'…, ' if last else ''}{', '.join(columns)}), found {len(fields)}: {line.strip()[:80]!r}")
        if last:
            fields = fields[-len(columns):]
        yield fields[i].strip() if last else fields[i], fields[j].strip() if last else fields[j]


def read_lines(path: Path) -> Iterator[str]:
    """Decoded lines of a UTF-8 file, split on ``\\n`` only; PrepError naming the line on bad bytes."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise PrepError(f"{path}, line {n}: expected UTF-8 text, found the byte 0x{raw[e.start]:02x} at byte "
                                f"{e.start + 1} of the line; convert the file to UTF-8 (e.g. with iconv)") from None


# --------------------------------------------------------------------------------------------
# archives


def matches(member: str, name: str) -> bool:
    """Whether archive member path ``member`` is the file ``name`` (equal, or ``name`` is a path suffix)."""
    while member.startswith("./"):
        member = member[2:]
    return member == name or member.endswith("/" + name)


def _stored_name(name: str) -> str:
    return name.replace("/", "__")


def unpack_members(archive: Path, names: set[str], dest: Path) -> dict[str, Path]:
    """Copy the members of ``archive`` matching any of ``names`` into ``dest`` (one pass); {name: copy}.

    tar (any compression), zip, or a single gzip-compressed file (its one member is the archive's
    name without ``.gz``).
    """
    dest.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}

    def take(member: str, opener: Callable[[], BinaryIO]) -> None:
        for name in names:
            if name not in found and matches(member, name):
                target = dest / _stored_name(name)
                with opener() as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
                found[name] = target

    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    if not info.is_dir():
                        take(info.filename, lambda i=info: zf.open(i))
        elif archive.name.endswith(".gz") and not archive.name.endswith(".tar.gz"):
            take(archive.name[:-3], lambda: gzip.open(archive, "rb"))
        else:
            with tarfile.open(archive, "r:*") as tf:
                for m in tf:
                    if m.isfile():
                        take(m.name, lambda m=m: tf.extractfile(m))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as e:
        raise PrepError(f"{archive}: cannot read the archive ({type(e).__name__}: {e}); it is damaged or "
                        f"incomplete: delete it and run again (it is downloaded again)") from None
    return found


def list_members(archive: Path, limit: int = 12) -> list[str]:
    """Some member names of ``archive`` (for error messages)."""
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                return zf.namelist()[:limit]
        with tarfile.open(archive, "r:*") as tf:
            out = []
            for m in tf:
                out.append(m.name)
                if len(out) >= limit:
                    break
            return out
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError):
        return []


# --------------------------------------------------------------------------------------------
# one split


class _Sources:
    """Resolves a part's candidate names to files: unpacked archive members or files in --raw-dir."""

    def __init__(self, raw_dir: Path, work_dir: Path, parts: Iterable[Part]):
        self.raw_dir = raw_dir
        self.unpacked: dict[tuple[str, str], Path] = {}
        wanted: dict[str, set[str]] = {}
        for p in parts:
            if p.archive is not None:
                for _, names in p.files:
                    wanted.setdefault(p.archive, set()).update(names)
        for archive, names in wanted.items():
            got = unpack_members(raw_dir / archive, names, work_dir / _stored_name(archive))
            for name, path in got.items():
                self.unpacked[(archive, name)] = path

    def resolve(self, part: Part, names: tuple[str, ...]) -> tuple[Path, str]:
        """(file to read, how to name it in messages) for the first candidate that exists."""
        for name in names:
            if part.archive is None:
                if (self.raw_dir / name).is_file():
                    return self.raw_dir / name, str(self.raw_dir / name)
            elif (part.archive, name) in self.unpacked:
                return self.unpacked[(part.archive, name)], f"{self.raw_dir / part.archive}:{name}"
        where = self.raw_dir / part.archive if part.archive else self.raw_dir
        some = list_members(self.raw_dir / part.archive) if part.archive else []
        raise PrepError(f"{where}: expected the file {' or '.join(names)}, found none"
                        + (f" (the archive holds e.g. {', '.join(some)})" if some else "")
                        + "; the file is damaged or its layout differs from the registry's "
                          "(syntrans/prep/corpora.py): check it, or delete it so it is fetched again")


def _read_part_side(fmt: str, path: Path, where: str) -> Iterator[str]:
    lines = read_lines(path)
    try:
        if fmt == "plain":
            yield from lines
        elif fmt == "iwslt-tags":
            yield from iwslt_tags(lines)
        elif fmt in ("iwslt-xml", "sgm"):
            yield from seg_texts(lines, fix_quotes=fmt == "iwslt-xml")
        else:
            raise ValueError(f"unknown one-language format {fmt!r}")
    except ValueError as e:
        raise PrepError(f"{where}, {e}") from None


def _read_part_pairs(part: Part, path: Path, where: str, langs: tuple[str, str],
                     log: Callable[[str], None]) -> Iterator[tuple[str, str]]:
    try:
        if part.fmt == "tmx":
            skipped: list[int] = []
            opener = gzip.open if path.name.endswith(".gz") else open
            with opener(path, "rb") as f:
                yield from tmx_pairs(f, langs, skipped)
            if skipped:
                log(f"{where}: {len(skipped)} <tu> without both {langs[0]} and {langs[1]} skipped "
                    f"(the first: tu {', '.join(map(str, skipped[:10]))})")
        elif part.fmt == "tsv":
            yield from column_pairs(read_lines(path), part.columns, langs, "\t")
        elif part.fmt == "aspec":
            yield from column_pairs(read_lines(path), part.columns, langs, "|||", last=True)
        else:
            raise ValueError(f"unknown two-language format {part.fmt!r}")
    except ParseError as e:
        raise PrepError(f"{where}: not well-formed TMX: {e}; the file is damaged: fetch it again") from None
    except ValueError as e:
        raise PrepError(f"{where}, {e}") from None


def write_split(parts: Iterable[Part], langs: tuple[str, str], sources: _Sources, out: dict[str, Path],
                log: Callable[[str], None] = print) -> int:
    """Concatenate ``parts`` into ``out[lang]`` for both languages; returns the number of lines.

    Each part's two sides must have the same number of lines (PrepError naming both files and counts).
    """
    total = 0
    with atomic_files(out) as files:  # both sides replace their files together, or neither does
        for part in parts:
            if part.fmt in ONE_LANGUAGE_FORMATS:
                counts, wheres = {}, {}
                for lang in langs:
                    path, where = sources.resolve(part, part.candidates(lang))
                    n = 0
                    for text in _read_part_side(part.fmt, path, where):
                        files[lang].write(one_line(text) + "\n")
                        n += 1
                    counts[lang], wheres[lang] = n, where
                a, b = langs
                if counts[a] != counts[b]:
                    raise PrepError(f"{wheres[a]} gives {counts[a]} lines of {a} but {wheres[b]} gives {counts[b]} "
                                    f"lines of {b}; expected the same number (line i of each is one translation "
                                    f"pair): the files are damaged or not parallel: fetch them again")
                total += counts[a]
            else:
                path, where = sources.resolve(part, part.candidates("*"))
                for x, y in _read_part_pairs(part, path, where, langs, log):
                    files[langs[0]].write(one_line(x) + "\n")
                    files[langs[1]].write(one_line(y) + "\n")
                    total += 1
    return total


def extract_text(pair: PairData, direction: str, raw_dir: Path, text_dir: Path,
                 log: Callable[[str], None] = print) -> dict[str, int]:
    """Write ``text_dir/{split}.{lang}`` for every split with parts; returns {split: lines}.

    A split without parts (the valid split of a ``valid_every`` corpus) is not written here.
    """
    text_dir.mkdir(parents=True, exist_ok=True)
    splits = pair.splits[direction]
    work = text_dir / ".members"
    try:
        sources = _Sources(raw_dir, work, [p for s in SPLITS for p in splits[s]])
        sizes = {}
        for split in SPLITS:
            if not splits[split]:
                continue
            out = {lang: text_dir / f"{split}.{lang}" for lang in pair.langs}
            sizes[split] = write_split(splits[split], pair.langs, sources, out, log)
            log(f"extract: {split}: {sizes[split]} lines -> {text_dir}/{split}.{{{','.join(pair.langs)}}}")
        return sizes
    finally:
        shutil.rmtree(work, ignore_errors=True)
