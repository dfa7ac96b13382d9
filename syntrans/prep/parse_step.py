"""Step 5 (parse): the tokenized (pre-BPE) text of every split and side → ``OUT/parse/{split}.{lang}.conllu``.

The parsing code is :mod:`syntrans.parsing.driver`'s (:func:`~syntrans.parsing.driver.parse_job` per file, its
``.done`` markers, content hashes, views and resumption), each file in ``shards`` shards run by the launcher
(:mod:`syntrans.parsing.cluster`): here one after another (``local``, with ``workers`` parser processes on CPU), or
as SLURM or local jobs. Only the ``views`` asked for are parsed (:mod:`syntrans.data.parse_views`): a file parsed before
from the same text keeps what it holds and gets the views it lacks; with no view at all (a baseline) nothing is
parsed. :mod:`syntrans.parsing` is imported only when this step runs (it imports stanza and torch), so that
``syntrans.prep`` stays light.

Parser choice per language (:func:`resolve_parsers`): ``auto`` is stanza when its models for the
language are installed (``resources.json`` in stanza's resources directory lists the language and its
folder exists; building the pipeline is the final check), else, in smoke runs, the right-branching
parser (said in the log), else an error with the ``stanza.download`` command. ``stanza``,
``right-branching``, ``left-branching`` and ``flat`` force one. Corpora with gold parses (synthetic)
copy them (parser ``gold``, both views). ``imported`` reads another parser's output for each tokenized file from
``OUT/parse-import/`` (:mod:`syntrans.parsing.imported`), and stops naming the files it lacks and the command that
makes them.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from ..atomic_write import write_text
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


class PrepPending(PrepError):
    """Parse jobs were submitted and are still running (``--no-wait``): run the same command again to go on."""


def _check_models(name: str, lang: str, requested: str, smoke: bool, views, log: Callable[[str], None],
                  char_spans: bool = False) -> str:
    """The parser name to use for ``lang``: ``name``, or right-branching under auto+smoke when the stanza pipeline
    cannot load (said in the log); a PrepError naming the models otherwise. Loads the pipeline once, so that a
    missing model stops the run before any job starts."""
    if name != "stanza":
        return name
    from ..parsing.driver import make_parser  # lazy: syntrans.parsing imports stanza and torch
    from ..parsing.stanza_parser import MissingModelsError  # lazy: as above

    try:
        make_parser(name, lang, views=views, device="cpu", char_spans=char_spans)
        return name
    except MissingModelsError as e:
        if requested == AUTO and smoke:
            log(f"no stanza model for {lang} installed: using the {FALLBACK} parser (smoke run)")
            return FALLBACK
        raise PrepError(str(e)) from None


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
    write_text(out, "".join(kept))


def run_parse(tok_dir: Path, parse_dir: Path, langs: tuple[str, str], parsers: dict[str, str], requested: str,
              smoke: bool, shards: int = 1, workers: int = 1, gold_dir: Path | None = None, views=None,
              launch=None, log: Callable[[str], None] = print, char_spans: bool = False) -> dict[str, str]:
    """Parse every split of both sides into ``views`` (None: both; a list: those on both sides; {lang: views}: each
    side's; a side with none is not parsed, parser ``none``) with the launcher options ``launch`` (None: here);
    returns the parser actually used per language. PrepPending when jobs are left running (``launch.wait`` off).
    ``char_spans``: the raw-text route (``tok_dir`` holds raw text, which the parser tokenizes itself, each word's
    character span kept: :mod:`syntrans.parsing.driver`)."""
    from ..data.parse_views import VIEWS, format_views, parse_views
    from ..jobs.launcher import LaunchError, LaunchOptions
    from ..parsing.cluster import parse_sharded  # lazy: syntrans.parsing imports stanza and torch
    from ..parsing.driver import ParseJob
    from ..parsing.shards import InputError, count_lines, file_sha256, read_marker

    if not isinstance(views, dict):
        views = dict.fromkeys(langs, VIEWS if views is None else (parse_views(list(views)) if views else ()))
    parse_dir.mkdir(parents=True, exist_ok=True)
    used = dict(parsers)
    jobs = []
    # imported parses are asked for only where a view of that side is read (a side no system reads is not parsed)
    imported = tuple(lang for lang in langs if parsers[lang] == IMPORTED and views.get(lang))
    if imported:
        import_parses_of(tok_dir, parse_dir, imported, log)
    for lang in langs:
        name = parsers[lang]
        if lang in imported:
            continue
        lang_views = tuple(views.get(lang, ()))
        if name == "gold":
            for split in SPLITS:
                copy_gold(gold_dir / f"{split}.{lang}.conllu", parse_dir / f"{split}.{lang}.conllu",
                          count_lines(str(tok_dir / f"{split}.{lang}")))
            log(f"parse: {lang}: gold parses copied for {', '.join(SPLITS)}")
            continue
        if not lang_views:
            for split in SPLITS:  # a parse of this text is kept (binarized too); one of other text must go
                kept = parse_dir / f"{split}.{lang}.conllu"
                info = read_marker(str(kept))
                if kept.exists() and (info is None or info.get("input_sha256")
                                      != file_sha256(str(tok_dir / f"{split}.{lang}"))):
                    kept.unlink()
            used[lang] = "none"
            log(f"parse: {lang}: no view asked for (the systems read none of this side's parse): nothing parsed")
            continue
        used[lang] = name = _check_models(name, lang, requested, smoke, lang_views, log, char_spans)
        for split in SPLITS:
            jobs.append(ParseJob(input=str(tok_dir / f"{split}.{lang}"), output=str(parse_dir / f"{split}.{lang}.conllu"),
                                 lang=lang, parser=name, num_shards=shards, workers=workers, views=lang_views,
                                 device="cpu" if workers > 1 else None, char_spans=char_spans))
        log(f"parse: {lang}: views {format_views(lang_views)} of {len(SPLITS)} files in {shards} shard(s) each"
            + (f", as {launch.launcher} jobs" if launch is not None and launch.launcher != "local" else ""))
    if jobs:
        try:
            finished = parse_sharded(jobs, launch or LaunchOptions(), log=log)
        except (InputError, LaunchError) as e:
            raise PrepError(f"parse: {e}") from None
        if not finished:
            raise PrepPending("parse jobs are still running; run the same command again to collect them and go on")
        for job in jobs:
            log(f"parse: {Path(job.input).name} with {job.parser} ({format_views(job.views)}) in {job.output}")
    return used
