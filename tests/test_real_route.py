"""The road users take, end to end: raw Multi30k captions, tokenized, BPE'd and parsed by stanza's real pipeline (the
tiny GUM-trained models of tests/stanza_models.py), each prepared folder parsed into only the views its systems read,
then every system of the cross-paper table (the Transformer, the ten systems of the five papers and the three
combinations) trained a few updates by fairseq-train and decoded by fairseq-generate through `syntrans-reproduce`.

The synthetic corpus carries gold parses of every view on both sides, so it cannot show a route that cuts the views:
this file is the one that does. Skipped when the shared data (../shared/data: GUM and Multi30k) is absent."""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SHARED_DATA

from syntrans.reproduce.tables import TABLES

pytestmark = pytest.mark.slow  # trains and translates in other processes (conftest)

BIN = Path(sys.executable).parent
MULTI30K = SHARED_DATA / "multi30k"
SIZES = (40, 8, 8)  # train, valid, test captions


@pytest.fixture(scope="module")
def cross(stanza_res, tmp_path_factory, single_threaded_tools):
    if not (MULTI30K / "train.de").is_file():
        pytest.skip(f"{MULTI30K} is absent (the shared real-data folder is optional)")
    root = tmp_path_factory.mktemp("real_route")
    env = {**os.environ, "STANZA_RESOURCES_DIR": str(stanza_res), "PYTHONWARNINGS": "ignore",
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [str(BIN / "syntrans-reproduce"), "cross_paper", "--smoke", "--raw-dir", str(MULTI30K), "--datasets",
           "iwslt14_de_en", "--seeds", "1", "--smoke-updates", "3", "--smoke-sizes", ",".join(map(str, SIZES)),
           "--work-dir", str(root / "work"), "--results-dir", str(root / "results")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=1800)
    return root, done


def _systems():
    (row,) = [r for r in TABLES["cross_paper"].rows if r.dataset.key == "iwslt14_de_en"]
    return [s.name for s in row.systems]


def test_every_system_trains_and_decodes_on_stanza_parsed_captions(cross):
    root, done = cross
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    systems = _systems()
    assert len(systems) == 14  # the Transformer, the ten systems of the papers, three combinations
    runs = root / "work" / "cross_paper" / "iwslt14_de_en"
    for run in sorted(runs.iterdir()):
        log = (run / "seed1" / "train.log").read_text(encoding="utf-8")
        losses = [float(x) for x in re.findall(r"\| train \|.*? loss ([-+0-9.eEnaif]+)", log)]
        assert losses and all(math.isfinite(x) for x in losses), (run.name, log[-2000:])
        hyps = (run / "seed1" / "hyp.checkpoint_best.detok.txt").read_text(encoding="utf-8").split("\n")
        assert len(hyps) == SIZES[2] + 1 and hyps[-1] == "", run.name  # a line (maybe empty) per test caption
    assert len(list(runs.iterdir())) == len(systems)
    md = (root / "results" / "cross_paper.md").read_text(encoding="utf-8")
    for name in systems:
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {name} |"))
        assert "not run" not in line and "FAILED" not in line, line


def test_each_folder_is_parsed_by_stanza_into_only_the_views_its_systems_read(cross):
    """Two folders: the systems' (de→en) and +MULTI-TASK's own copy, whose Transformer reads no view at model level
    and whose data reads the source's constituency tree (the skeleton target): its target side is not parsed at all,
    and its source only into trees."""
    root, done = cross
    assert done.returncode == 0, done.stderr[-3000:]
    folders = {json.loads((p / "prepared.json").read_text())["recipe"] is not None: p
               for p in (root / "work" / "data").iterdir() if (p / "prepared.json").is_file()}
    assert set(folders) == {False, True}, folders
    multitask = json.loads((folders[True] / "prepared.json").read_text())
    assert multitask["recipe"]["multitask"] is True
    assert multitask["views"] == {"de": ["trees"], "en": []} and multitask["parsers"] == {"de": "stanza", "en": "none"}
    assert not (folders[True] / "parse" / "train.en.conllu").exists()
    plain = json.loads((folders[False] / "prepared.json").read_text())
    assert plain["parsers"] == {"de": "stanza", "en": "stanza"}
    for lang, views in plain["views"].items():
        text = (folders[False] / "parse" / f"train.{lang}.conllu").read_text(encoding="utf-8")
        words = [ln.split("\t") for ln in text.splitlines() if ln and not ln.startswith("#")]
        assert ("# constituency = " in text) == ("trees" in views), (lang, views)
        assert all(w[6].isdigit() for w in words) == ("deps" in views), (lang, views)
