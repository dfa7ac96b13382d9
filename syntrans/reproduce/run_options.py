"""What a reproduction is asked (:class:`Options`), how it names what it runs (tables' systems and datasets as the
command line spells them, a run folder's slug) and how it fails (:class:`RunError`)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from .config_file import CONFIG_DIR


class RunError(RuntimeError):
    """A step failed: the message names the step, its command and the end of its log."""


@dataclass
class Options:
    table: str
    work_dir: Path = Path("work")
    results_dir: Path = Path("results")
    data_root: Optional[Path] = None  # default: <work_dir>/data
    raw_dir: Optional[Path] = None  # downloads per corpus (<raw_dir>/<corpus>); with --smoke: a multi30k-style folder
    aspec_dir: Optional[Path] = None
    ldc_dir: Optional[Path] = None
    smoke: bool = False
    synthetic: bool = False  # with --smoke: the built-in synthetic corpus instead of --raw-dir text
    smoke_updates: int = 300
    smoke_sizes: Optional[Dict[str, int]] = None
    seeds: Optional[List[int]] = None  # default: 1…n, n the paper's number of runs for the row (published.protocol)
    average_last: Optional[int] = None  # average the last N epoch checkpoints; default: the paper's selection
    datasets: Optional[List[str]] = None  # only these dataset keys
    systems: Optional[List[str]] = None  # only these system names
    parser: str = "auto"
    train_args: List[str] = field(default_factory=list)
    generate_args: List[str] = field(default_factory=list)
    config_dir: Path = CONFIG_DIR
    workers: int = 1
    command: str = ""  # the command line, quoted in the results file
    launch: Any = None  # a launcher.LaunchOptions; None: every unit in this process, one after another
    parse_shards: int = 1  # each parse file in this many shards (jobs of ``launch`` where it is a cluster's)
    #: a JSON file of the parsers' own scores (UAS, LAS, UPOS, bracket F1 per language), printed under the table
    parser_scores: Optional[Path] = None


class TableIncomplete(RunError):
    """Some systems failed: the results file was written with their rows saying why; the command exits non-zero."""


def _plain(name: str) -> str:
    """A name as the docs and the command line may spell it: without a leading "+" (the papers write the baselines
    +MULTI-TASK, +S&H), case and surrounding spaces ignored."""
    return name.strip().lstrip("+").strip().casefold()


def resolve_names(requested: Optional[List[str]], known: List[str], flag: str, what: str) -> Optional[List[str]]:
    """The names of ``known`` that ``requested`` (``flag``'s values; None: all) selects: each one exactly, or spelt as
    :func:`_plain` reads it when that matches one name only. RunError naming every unknown or ambiguous name and
    listing ``known``."""
    if requested is None:
        return None
    known = list(dict.fromkeys(known))
    out, bad = [], []
    for name in requested:
        if name in known:
            out.append(name)
            continue
        matches = [k for k in known if _plain(k) == _plain(name)]
        if len(matches) == 1:
            out.append(matches[0])
        else:
            bad.append(name)
    if bad:
        raise RunError(f"{flag} {','.join(bad)}: " + ("ambiguous or " if len(bad) == 1 else "")
                       + f"not among {what}; expected some of: {', '.join(known)}")
    return list(dict.fromkeys(out))


#: ``--systems all``: every system of the selected rows, whatever the table runs by default
ALL_SYSTEMS = "all"


def failure_summary(message: str) -> str:
    """The first line of a failure's message, fit for a table cell (its pipes escaped)."""
    first = next((line.strip() for line in str(message).splitlines() if line.strip()), "an unnamed error")
    return "FAILED: " + first.replace("|", "\\|")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", name).strip("_").lower()


#: the kinds of table whose units decode and score (the others read the training logs only)
DECODED_KINDS = ("bleu", "curve", "length", "cross")
