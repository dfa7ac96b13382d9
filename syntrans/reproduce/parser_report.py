"""The parsers' own scores beside a table's results (``syntrans-reproduce --parser-scores FILE``): how well the parser
that made the table's syntax parses held-out treebank text, as a JSON file gives it, printed under the table with the
file named. The run does not measure them: a parser's errors become the syntax the systems are given, so its accuracy
is part of reading the result.

The file: one object per language, each with any of ``uas``, ``las``, ``upos`` (dependency parsing and tagging, in
percent), ``bracket_f1`` (constituency, labelled brackets, in percent), ``test_file`` (what they were scored on) and
``train_files`` (a list, or one name), e.g. ``{"en": {"uas": 80.1, "las": 76.0, "upos": 92.0, "bracket_f1": 70.2,
"test_file": "en_ewt-ud-test.conllu", "train_files": ["en_ewt-ud-dev.conllu"]}, "de": {"uas": 75.3}}``; a key
that is missing is printed as "—". Other keys are ignored. The nested layout ``scripts/train_parsers.py`` writes
(``depparse``: uas, las, upos; ``constituency``: f1; ``train``, ``test``) is read too, where the flat keys are absent.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional

#: (key, column) of the scores, in the table's order
SCORES = (("uas", "UAS"), ("las", "LAS"), ("upos", "UPOS"), ("bracket_f1", "bracket F1"))


class ParserScoresError(ValueError):
    """The --parser-scores file cannot be read as the module docs describe: the message names it and what is wrong."""


def _nested(entry: dict) -> dict:
    """The flat keys of an entry in scripts/train_parsers.py's nested layout (where the flat keys are absent)."""
    out = {}
    dep, const = entry.get("depparse"), entry.get("constituency")
    if isinstance(dep, dict):
        out.update({k: dep[k] for k in ("uas", "las", "upos") if k in dep})
    if isinstance(const, dict) and "f1" in const:
        out["bracket_f1"] = const["f1"]
    if isinstance(entry.get("test"), str):
        out["test_file"] = entry["test"]
    if isinstance(entry.get("train"), (str, list)):
        out["train_files"] = entry["train"]
    return out


def read_parser_scores(path: Path) -> Dict[str, dict]:
    """{language: {key: value}} of the file (module docs), only the keys of :data:`SCORES`, ``test_file`` and
    ``train_files``; :class:`ParserScoresError` naming the file for anything else."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ParserScoresError(f"--parser-scores {path}: cannot read it ({e.strerror or e})") from None
    except ValueError as e:
        raise ParserScoresError(f"--parser-scores {path}: expected JSON, found: {e}") from None
    if not isinstance(data, dict) or not data:
        raise ParserScoresError(f"--parser-scores {path}: expected an object of languages, e.g. {{\"en\": {{\"uas\": "
                                f"80.1}}}}, found {type(data).__name__} {str(data)[:60]!r}")
    out: Dict[str, dict] = {}
    for lang, entry in data.items():
        if not isinstance(entry, dict):
            raise ParserScoresError(f"--parser-scores {path}: language {lang!r}: expected an object of scores, found "
                                    f"{str(entry)[:60]!r}")
        entry = {**_nested(entry), **entry}
        got = {}
        for key, _ in SCORES:
            value = entry.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ParserScoresError(f"--parser-scores {path}: {lang}.{key}: expected a number (percent), found "
                                        f"{value!r}")
            got[key] = float(value)
        test_file, train_files = entry.get("test_file"), entry.get("train_files")
        if test_file is not None:
            if not isinstance(test_file, str):
                raise ParserScoresError(f"--parser-scores {path}: {lang}.test_file: expected a name, found {test_file!r}")
            got["test_file"] = test_file
        if train_files is not None:
            train_files = [train_files] if isinstance(train_files, str) else train_files
            if not isinstance(train_files, list) or not all(isinstance(f, str) for f in train_files):
                raise ParserScoresError(f"--parser-scores {path}: {lang}.train_files: expected a list of names, found "
                                        f"{entry.get('train_files')!r}")
            got["train_files"] = list(train_files)
        out[str(lang)] = got
    return out


def _cell(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.2f}"


def parser_score_lines(path: Path, scores: Dict[str, dict]) -> List[str]:
    """The section under the table: the scores of every language of ``scores`` (:func:`read_parser_scores`), the
    file named."""
    lines = ["## Parser scores", "",
             f"The parsers' own scores, as `{path}` gives them (`--parser-scores`; not measured by this run): attachment "
             "scores and UPOS accuracy of the dependency parser, labelled bracket F1 of the constituency parser, in "
             "percent, each on the test file named; — where the file gives none.", "",
             "| language | " + " | ".join(name for _, name in SCORES) + " | test file | training files |",
             "|" + "---|" * (len(SCORES) + 3)]
    for lang, got in scores.items():
        cells = [lang] + [_cell(got.get(key)) for key, _ in SCORES]
        cells += [got.get("test_file", "—"), ", ".join(got.get("train_files", [])) or "—"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines + [""]


__all__ = ["ParserScoresError", "SCORES", "parser_score_lines", "read_parser_scores"]
