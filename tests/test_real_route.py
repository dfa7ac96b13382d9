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
from pathlib import Path

import pytest
from helpers import BIN, SHARED_DATA

from syntrans.reproduce.tables import TABLES

pytestmark = pytest.mark.slow  # trains and translates in other processes (conftest)

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


def _folders(root):
    """{"plain": the systems' prepared folder, "multitask": +MULTI-TASK's own copy}."""
    found = {}
    for p in (root / "work" / "data").iterdir():
        if (p / "prepared.json").is_file():
            recipe = json.loads((p / "prepared.json").read_text())["recipe"]
            found["multitask" if recipe and recipe.get("multitask") else "plain"] = p
    return found


def test_sla_and_sh_read_stanzas_parse_of_the_source(cross):
    """SLA (the gated paper's Table 3 baseline) and +S&H (Bugliarello & Okazaki 2020, Table 1) on real captions: the
    sidecars they read hold stanza's parse of the source (heads for SLA's tree distances, UD relation ids for +S&H's
    label embedding), and SLA's unregularised gate is logged at validation."""
    from syntrans.data.sidecars import load_side
    from syntrans.syntax import read_parsed
    from syntrans.syntax.deprels import OTHER_LABEL, label_ids

    root, done = cross
    assert done.returncode == 0, done.stderr[-3000:]
    prep = _folders(root)["plain"]
    for split in ("train", "test"):
        parsed = read_parsed(str(prep / "parse" / f"{split}.de.conllu"))
        side = load_side(str(prep / "data-bin"), split, "de", "en", "de")
        by_line = {}
        for s in parsed:
            by_line.setdefault(s.line, []).append(s)
        assert len(side["label"]) == len(side["head"]) == len(by_line)
        for i, line in enumerate(sorted(by_line)):  # the word-level sidecars: each line's sentences one after another
            heads, offset = [], 0
            for s in by_line[line]:
                heads += [h + offset if h else 0 for h in s.heads]
                offset += len(s.heads)
            assert side["label"][i].tolist() == [x for s in by_line[line] for x in label_ids(s.deprels)]
            if len(by_line[line]) == 1:
                assert side["head"][i].tolist() == heads
    labels = load_side(str(prep / "data-bin"), "train", "de", "en", "de")["label"]
    train_labels = {x for i in range(len(labels)) for x in labels[i].tolist()}
    # stanza's relations (the tiny models know few), not the right-branching fallback's root/dep only
    assert train_labels - set(label_ids(["root", "dep"])) - {OTHER_LABEL}
    sla = (root / "work" / "cross_paper" / "iwslt14_de_en" / "sla" / "seed1" / "train.log").read_text(encoding="utf-8")
    assert re.search(r"\| valid \|.*gate_l0h0 [0-9.]+", sla), sla[-2000:]


def test_multitask_targets_are_the_skeletons_of_stanzas_trees(cross):
    """+MULTI-TASK on real captions: every training caption appears once with its translation and once with the
    constituency skeleton of stanza's tree (the default target: a bracket per phrase node, in the tree's order, no word
    of the caption); the test captions are decoded with the translation tag."""
    from syntrans.prep.multitask import PARSE_TAG, TRANSLATE_TAG
    from syntrans.syntax import read_parsed

    root, done = cross
    assert done.returncode == 0, done.stderr[-3000:]
    prep = _folders(root)["multitask"]
    bpe = (prep / "bpe" / "train.de").read_text(encoding="utf-8").splitlines()
    src = (prep / "multitask" / "train.de").read_text(encoding="utf-8").splitlines()
    tgt = (prep / "multitask" / "train.en").read_text(encoding="utf-8").splitlines()
    assert len(src) == len(tgt) == 2 * len(bpe) > 0
    parsed = {}
    for s in read_parsed(str(prep / "parse" / "train.de.conllu")):
        parsed.setdefault(s.line, []).append(s)
    by_source = {s: t for s, t in zip(src, tgt) if s.startswith(PARSE_TAG)}
    checked = 0
    for k, line in enumerate(bpe, 1):
        target = by_source[f"{PARSE_TAG} {line} {PARSE_TAG}"].split()
        if len(parsed[k]) == 1:  # one sentence on the line: its tree's phrase nodes, in order
            tree = str(parsed[k][0].tree)
            assert [x[1:] for x in target if x.startswith("(")] == re.findall(r"\(([^\s()]+)\s+(?=\()", tree)
            checked += 1
        assert target.count(")") == sum(x.startswith("(") for x in target) and len(target) == 2 * target.count(")")
        assert not set(target) & set(line.split())
    assert checked > len(bpe) // 2
    gen = (root / "work" / "cross_paper" / "iwslt14_de_en" / "multi_task" / "seed1" / "generate.checkpoint_best.txt")
    sources = [line.split("\t", 1)[1].split() for line in gen.read_text(encoding="utf-8").splitlines()
               if line.startswith("S-")]
    assert len(sources) == SIZES[2] and all(s[0] == s[-1] == TRANSLATE_TAG for s in sources)


def test_p_values_holm_time_memory_and_figure_from_the_written_outputs(cross):
    """The results file's p and Holm-adjusted p are sacreBLEU's PairedTest of the written outputs against the
    Transformer and Holm's correction of them, each family (the papers' systems, the combinations) apart; every system
    has its training time and peak memory; the figure is written."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    from syntrans.reproduce.runner import _slug
    from syntrans.reproduce.significance import holm

    root, done = cross
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = [r for r in TABLES["cross_paper"].rows if r.dataset.key == "iwslt14_de_en"]
    runs = root / "work" / "cross_paper" / "iwslt14_de_en"
    hyps, refs = {}, None
    for s in row.systems:
        score = json.loads((runs / _slug(s.name) / "seed1" / "score.checkpoint_best.json").read_text())
        refs = Path(score["refs"]).read_text(encoding="utf-8").splitlines()
        hyps[s.name] = (root / score["hyps"]).read_text(encoding="utf-8").splitlines()
        assert json.loads((runs / _slug(s.name) / "seed1" / "train.done").read_text())["peak_rss_mb"] > 50
    ps = {}
    before = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = "12345"  # the seed our results file names
    try:
        for s in row.systems[1:]:
            _, res = PairedTest([("b", hyps[row.systems[0].name]), ("s", hyps[s.name])], {"BLEU": BLEU()}, [refs],
                                test_type="bs", n_samples=1000)()
            base, system = res["BLEU"]
            ps[s.name] = 1.0 if base.score == system.score else system.p_value
    finally:
        os.environ.pop("SACREBLEU_SEED") if before is None else os.environ.__setitem__("SACREBLEU_SEED", before)
    md = (root / "results" / "cross_paper.md").read_text(encoding="utf-8")
    section = md[:md.index("| NC11")] if "| NC11" in md else md
    for group in ("", "combination"):
        family = {s.name: ps[s.name] for s in row.systems[1:] if s.group == group}
        adjusted = holm(family)
        for name in family:
            line = next(ln for ln in section.splitlines() if ln.startswith(f"| {name} |"))
            cells = [c.strip() for c in line.strip("|").split("|")]
            p_col = 5 if group else 4
            assert cells[p_col] == f"{family[name]:.2g}" and cells[p_col + 1] == f"{adjusted[name]:.2g}", cells
            assert cells[-3] and cells[-1].startswith("RSS "), cells
    assert (root / "results" / "cross_paper.png").stat().st_size > 10_000
