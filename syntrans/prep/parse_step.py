"""Step 5 (parse): the tokenized (pre-BPE) text of every split and side → ``OUT/parse/{split}.{lang}.conllu``.

The parsing code is :mod:`syntrans.parsing.driver`'s: in-process with its ``make_parser`` and
``parse_lines`` (one parser per language, built once), or, with ``shards`` > 1, ``syntrans-parse``'s own
sharding as subprocesses (``python -m syntrans.cli.parse … --num-shards N --shard-id K``, ``workers`` at a
time, then ``--merge``). :mod:`syntrans.parsing` is imported only when this step runs (it imports stanza
and torch), so that ``syntrans.prep`` stays light.

Parser choice per language (:func:`resolve_parsers`): ``auto`` is stanza when its models for the
language are installed (``resources.json`` in stanza's resources directory lists the language and its
folder exists; building the pipeline is the final check), else, in smoke runs, the right-branching
parser (said in the log), else an error with the ``stanza.download`` command. ``stanza``,
``right-branching``, ``left-branching`` and ``flat`` force one. Corpora with gold parses (synthetic)
copy them (parser ``gold``). ``imported`` reads another parser's output for each tokenized file from
``OUT/parse-import/`` (:mod:`syntrans.parsing.imported`), and stops naming the files it lacks and the command that
makes them.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from .corpora import SPLITS
from .errors import PrepError

AUTO = "auto"
FALLBACK = "right-branching"
IMPORTED = "imported"  # syntrans.parsing.imported.IMPORTED (named here: that module imports stanza)
IMPORT_DIR = "parse-import"  # syntrans.parsing.imported.IMPORT_DIR


def imported_files(folder: Path) -> dict:
    """{file name: [size, mtime in ns]} of the files to import (the parse step's settings: a changed file redoes it)."""
    if not folder.is_dir():
        return {}
    return {p.name: [p.stat().st_size, p.stat().st_mtime_ns] for p in sorted(folder.iterdir()) if p.is_file()}


def import_parses_of(tok_dir: Path, parse_dir: Path, langs: tuple[str, str], log: Callable[[str], None]) -> None:
    """``--parser imported``: every split and side from ``OUT/parse-import/`` (:mod:`syntrans.parsing.imported`);
    PrepError naming every missing file (and how to make it) or a parse that does not fit its text."""
    from ..parsing.imported import import_file, import_files, missing_message  # lazy: imports stanza's tree reader

    folder = parse_dir.parent / IMPORT_DIR
    wanted = [(split, lang) for lang in langs for split in SPLITS]
    found = {key: import_files(folder, *key) for key in wanted}
    missing = [key for key, files in found.items() if files == (None, None)]
    if missing:
        raise PrepError(missing_message(folder, tok_dir, missing))
    for (split, lang), (trees, deps) in found.items():
        try:
            lines, sentences = import_file(str(tok_dir / f"{split}.{lang}"), str(parse_dir / f"{split}.{lang}.conllu"),
                                           str(trees) if trees else None, str(deps) if deps else None)
        except (ValueError, OSError) as e:
            raise PrepError(f"--parser {IMPORTED}: {e}") from None
        what = " and ".join(f.name for f in (trees, deps) if f)
        log(f"parse: {split}.{lang} imported from {what}: {lines} lines, {sentences} sentences")


def stanza_installed(lang: str) -> bool:
    """A cheap check that stanza's models for ``lang`` are installed (resources.json lists it, its folder exists)."""
    from ..parsing.stanza_parser import resources_dir  # lazy: syntrans.parsing imports stanza and torch

    model_dir = resources_dir()
    if not os.path.isfile(os.path.join(model_dir, "resources.json")):
        return False
    try:
        from stanza.resources.common import load_resources_json  # lazy: imports stanza

        resources = load_resources_json(model_dir)
    except (OSError, ValueError):
        return False
    entry = resources.get(lang)
    if isinstance(entry, dict) and "alias" in entry:
        lang = entry["alias"]
        entry = resources.get(lang)
    return isinstance(entry, dict) and os.path.isdir(os.path.join(model_dir, lang))


def no_models_message(lang: str) -> str:
    from ..parsing.stanza_parser import download_command, resources_dir  # lazy: imports stanza and torch

    return (f"syntrans-prepare: no stanza models for language {lang!r} are installed in {resources_dir()} "
            f"(set STANZA_RESOURCES_DIR to use another directory). Install them (needs internet access) with:\n"
            f"    {download_command(lang)}\n"
            f"  or choose a model-free parser: --parser right-branching (or left-branching, flat), "
            f"or use --smoke, which falls back to right-branching by itself.")


def resolve_parsers(requested: str, langs: tuple[str, str], smoke: bool, gold: bool,
                    installed: Callable[[str], bool] = stanza_installed) -> tuple[dict[str, str], list[str]]:
    """({lang: parser name}, notes to print). PrepError for ``auto`` without models outside smoke runs."""
    if gold:
        return {lang: "gold" for lang in langs}, []
    out, notes = {}, []
    for lang in langs:
        if requested != AUTO:
            out[lang] = requested
        elif installed(lang):
            out[lang] = "stanza"
        elif smoke:
            out[lang] = FALLBACK
            notes.append(f"no stanza model for {lang} installed: using the {FALLBACK} parser (smoke run)")
        else:
            raise PrepError(no_models_message(lang))
    return out, notes


def _build(name: str, lang: str, requested: str, smoke: bool, batch_size: int, log: Callable[[str], None]):
    """(parser object, actual name); falls back under auto+smoke when the stanza pipeline cannot load."""
    from ..parsing.driver import make_parser  # lazy: syntrans.parsing imports stanza and torch
    from ..parsing.stanza_parser import MissingModelsError  # lazy: as above

    try:
        return make_parser(name, lang, batch_size, raw=False), name
    except MissingModelsError as e:
        if requested == AUTO and smoke:
            log(f"no stanza model for {lang} installed: using the {FALLBACK} parser (smoke run)")
            return make_parser(FALLBACK, lang, batch_size, raw=False), FALLBACK
        raise PrepError(str(e)) from None


def parse_file(inp: Path, out: Path, parser, batch_size: int = 64) -> tuple[int, int, list[tuple[int, str]]]:
    """Parse the tokenized file ``inp`` into CoNLL-U ``out`` (atomically); (lines, sentences, failures)."""
    from ..parsing.driver import Stats, parse_lines  # lazy: syntrans.parsing imports stanza and torch
    from ..parsing.shards import atomic_writer, count_lines, iter_lines  # lazy: as above
    from ..syntax.parsed import format_conllu  # lazy: syntrans.syntax imports stanza and torch

    stats = Stats()
    numbered = ((n, text.split()) for n, text in iter_lines(str(inp)))
    with tqdm(total=count_lines(str(inp)), unit="line", desc=f"parse {inp.name}", file=sys.stderr,
              mininterval=1.0 if sys.stderr.isatty() else 30.0) as bar, atomic_writer(str(out)) as f:
        for sentences in parse_lines(numbered, parser, batch_size, False, False, stats, where=str(inp),
                                     progress=bar.update):
            f.write(format_conllu(sentences))
    return stats.lines, stats.sentences, stats.failures


def _drop_stale_shards(inp: Path, out: Path, shards: int) -> None:
    """Remove shard files of ``out`` older than their input (left by an earlier run on other text)."""
    from ..parsing.shards import marker_path, shard_path  # lazy: syntrans.parsing imports stanza and torch

    for k in range(shards):
        shard = Path(shard_path(str(out), k, shards))
        marker = Path(marker_path(str(shard)))
        if marker.exists() and marker.stat().st_mtime_ns < inp.stat().st_mtime_ns:
            marker.unlink()
            shard.unlink(missing_ok=True)


def parse_sharded(jobs: list[tuple[Path, Path, str, str]], shards: int, workers: int,
                  log: Callable[[str], None] = print) -> None:
    """syntrans-parse's own sharding for (input, output, lang, parser) jobs.

    Every shard of every job is a subprocess (``workers`` at a time), its messages in
    ``OUT.shard{K}of{N}.log``; syntrans-parse skips shards finished by an interrupted earlier run and
    merges a file when its last shard finishes (``--merge`` is run for any file left unmerged).
    """
    for inp, out, _, _ in jobs:
        out.unlink(missing_ok=True)  # a stale merge must not count as done
        _drop_stale_shards(inp, out, shards)
    tasks = [(inp, out, lang, name, k) for inp, out, lang, name in jobs for k in range(shards)]
    running: list[tuple[tuple, subprocess.Popen, Path]] = []

    def tail(path: Path) -> str:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines() if path.exists() else []
        return "\n  ".join(lines[-5:])

    while tasks or running:
        while tasks and len(running) < max(1, workers):
            inp, out, lang, name, k = task = tasks.pop(0)
            cmd = [sys.executable, "-m", "syntrans.cli.parse", str(inp), "-o", str(out), "--lang", lang,
                   "--parser", name, "--num-shards", str(shards), "--shard-id", str(k)]
            log_file = out.with_name(f"{out.name}.shard{k}of{shards}.log")
            with open(log_file, "w", encoding="utf-8") as err:
                running.append((task, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err), log_file))
        finished = [item for item in running if item[1].poll() is not None]
        if not finished:
            time.sleep(0.05)
            continue
        for item in finished:
            running.remove(item)
            task, proc, log_file = item
            if proc.returncode != 0:
                for _, other, _ in running:
                    other.kill()
                    other.wait()
                raise PrepError(f"syntrans-parse failed on shard {task[4]} of {shards} of {task[0]} "
                                f"(exit status {proc.returncode}; log {log_file}):\n  {tail(log_file)}")
    for inp, out, lang, name in jobs:
        if not out.exists():
            proc = subprocess.run([sys.executable, "-m", "syntrans.cli.parse", str(inp), "-o", str(out),
                                   "--num-shards", str(shards), "--merge"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            if proc.returncode != 0:
                lines = "\n  ".join(proc.stderr.strip().splitlines()[-5:])
                raise PrepError(f"syntrans-parse --merge failed for {out}:\n  {lines}")
        log(f"parse: {inp.name} with {name}: {shards} shards merged into {out}")


_LINE_COMMENT = re.compile(r"^# line = (\d+)$", re.M)


def copy_gold(src: Path, out: Path, n_lines: int) -> None:
    """Copy a CoNLL-U file keeping the sentences of text lines 1..n_lines (the smoke slice)."""
    text = src.read_text(encoding="utf-8")
    blocks = [b for b in text.split("\n\n") if b.strip()]
    kept = []
    for k, block in enumerate(blocks, 1):
        m = _LINE_COMMENT.search(block)
        line = int(m.group(1)) if m else k
        if line <= n_lines:
            kept.append(block.strip("\n") + "\n\n")
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(kept), encoding="utf-8")
    tmp.replace(out)


def run_parse(tok_dir: Path, parse_dir: Path, langs: tuple[str, str], parsers: dict[str, str], requested: str,
              smoke: bool, shards: int = 1, workers: int = 1, gold_dir: Path | None = None, batch_size: int = 64,
              log: Callable[[str], None] = print) -> dict[str, str]:
    """Parse every split of both sides; returns the parser actually used per language."""
    from ..parsing.shards import count_lines  # lazy: syntrans.parsing imports stanza and torch

    parse_dir.mkdir(parents=True, exist_ok=True)
    used = dict(parsers)
    sharded = []
    imported = tuple(lang for lang in langs if parsers[lang] == IMPORTED)
    if imported:
        import_parses_of(tok_dir, parse_dir, imported, log)
    for lang in langs:
        name = parsers[lang]
        if name == IMPORTED:
            continue
        if name == "gold":
            for split in SPLITS:
                copy_gold(gold_dir / f"{split}.{lang}.conllu", parse_dir / f"{split}.{lang}.conllu",
                          count_lines(str(tok_dir / f"{split}.{lang}")))
            log(f"parse: {lang}: gold parses copied for {', '.join(SPLITS)}")
            continue
        if shards > 1:
            if name == "stanza":  # fail (or fall back) before any shard runs
                _, name = _build(name, lang, requested, smoke, batch_size, log)
                used[lang] = name
            for split in SPLITS:
                sharded.append((tok_dir / f"{split}.{lang}", parse_dir / f"{split}.{lang}.conllu", lang, name))
            continue
        parser, used[lang] = _build(name, lang, requested, smoke, batch_size, log)
        for split in SPLITS:
            lines, sentences, failures = parse_file(tok_dir / f"{split}.{lang}", parse_dir / f"{split}.{lang}.conllu",
                                                    parser, batch_size)
            log(f"parse: {split}.{lang} with {used[lang]}: {lines} lines, {sentences} sentences, "
                f"{len(failures)} failed (fallback parse)"
                + (f", first at line {failures[0][0]}: {failures[0][1]}" if failures else ""))
    if sharded:
        parse_sharded(sharded, shards, workers, log)
    return used
