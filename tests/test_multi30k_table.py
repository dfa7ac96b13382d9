"""The Multi30k table (ours): its definition (the fourteen systems of the cross-paper table, the first comparison by
default, each system's flags the cross-paper table's IWSLT14 de→en ones with deviations marked where they do not fit
the small model, the recipe's config and data settings), chrF++ and its paired test against sacreBLEU called directly,
the parsers' scores file, the parse views every prepared folder gets, and a --smoke --synthetic run of
scripts/reproduce/multi30k.sh whose results file is recomputed from the written outputs."""
from __future__ import annotations

import json
import os
import subprocess
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from syntrans.prep import CORPORA
from syntrans.prep.recipe import OFF, apply_recipe
from syntrans.reproduce import cross_systems, multi30k_systems
from syntrans.reproduce.config_file import CONFIG_DIR, read_args_file
from syntrans.reproduce.cross_systems import Setting
from syntrans.reproduce.published import protocol, stated
from syntrans.reproduce.published_data import data_settings
from syntrans.reproduce.tables import TABLES

ROOT = Path(__file__).resolve().parents[1]
TABLE = TABLES["multi30k"]
FIRST = ("Transformer", "distance-mask", "PASCAL", "LISA", "DBSA")


# ------------------------------------------------------------------------------------------------ the definition

@pytest.mark.fast
def test_the_table_holds_the_cross_paper_systems_on_multi30k_en_de():
    (row,) = TABLE.rows
    ds = row.dataset
    assert (ds.key, ds.corpus, ds.src, ds.tgt) == ("multi30k_en_de", "multi30k", "en", "de")
    assert [s.name for s in row.systems] == [cs.name for cs in cross_systems.SYSTEMS]
    assert len(row.systems) == 14 and row.systems[0].name == TABLE.reference == "Transformer"
    assert (TABLE.kind, TABLE.split, TABLE.chrf, TABLE.runs_of) == ("cross", "test", True, None)
    assert TABLE.default_systems == FIRST == multi30k_systems.FIRST_COMPARISON
    assert TABLE.source_views == TABLE.target_views == ("deps", "trees")
    for s in row.systems:  # one recipe: the small config, then syntax_transformer and the method flags
        cs = cross_systems.BY_NAME[s.name]
        assert s.config == "multi30k/en_de.baseline.args" and s.extra[:2] == ("--arch", "syntax_transformer")
        assert s.extra == multi30k_systems.system_flags(cs) and (s.data, s.group) == (cs.data, cs.group)
        assert s.published is None and not s.published_more
    assert (ROOT / "scripts" / "reproduce" / "multi30k.sh").read_text(encoding="utf-8").rstrip().endswith(
        'exec syntrans-reproduce multi30k "$@"')
    assert protocol("multi30k", ds.key).seeds == 2 and protocol("multi30k", ds.key).checkpoint == "best"


@pytest.mark.fast
def test_the_recipe_is_a_small_transformer_with_early_stopping_every_flag_ours():
    cfg = read_args_file(CONFIG_DIR / "multi30k" / "en_de.baseline.args")
    want = {"--arch": "syntax_transformer", "--encoder-layers": "2", "--decoder-layers": "2",
            "--encoder-embed-dim": "128", "--decoder-embed-dim": "128", "--encoder-ffn-embed-dim": "512",
            "--decoder-ffn-embed-dim": "512", "--encoder-attention-heads": "4", "--decoder-attention-heads": "4",
            "--dropout": "0.1", "--share-all-embeddings": "", "--optimizer": "adam", "--adam-betas": "(0.9,0.98)",
            "--lr": "0.002", "--lr-scheduler": "inverse_sqrt", "--warmup-updates": "400", "--label-smoothing": "0.1",
            "--max-tokens": "2048", "--patience": "2", "--max-epoch": "8", "--task": "syntax_translation"}
    assert {flag: cfg.value(flag) for flag in want} == want
    assert cfg.value("--max-update") is None  # early stopping (patience) or the epoch cap end a run
    assert cfg.decode == ["--beam", "5", "--lenpen", "1.0"] and cfg.tokens_per_update == 2048
    flags = [f for f in cfg.flags if f.startswith("--") and f not in ("--task", "--criterion")]
    assert flags and all(cfg.notes[f].startswith("ours") for f in flags)
    assert cfg.notes["decode"].startswith("ours") and cfg.notes["tokens-per-update"].startswith("ours")
    assert stated("multi30k/en_de.baseline.args") == {}  # no paper states any of it


@pytest.mark.fast
@pytest.mark.parametrize("name", [cs.name for cs in cross_systems.SYSTEMS])
def test_each_systems_settings_are_the_cross_tables_iwslt14_ones_marked(name):
    """Each flag of a system is the cross-paper table's IWSLT14 de→en one, marked ours with its mark there quoted;
    a changed value is marked a deviation and is one of the changes the small model needs."""
    cs = cross_systems.BY_NAME[name]
    there = cross_systems.method_settings(cs, "iwslt14_de_en")
    here = multi30k_systems.method_settings(cs)
    assert [s.flag for s in here] == [s.flag for s in there]
    for a, b in zip(there, here):
        if b.value == a.value:
            assert b.mark == f"ours: as the cross-paper table's IWSLT14 de→en setting (there: {a.mark})", b
        else:
            assert b.mark.startswith(f"deviates from the cross-paper table's IWSLT14 de→en value {a.value} (there: "
                                     f"{a.mark}): "), b
            assert (b.flag, a.value, b.value) in {("--nsd-embed-dim", "512", "128"),
                                                  ("--gate-warmup-epochs", "80", "6")}, b


@pytest.mark.fast
def test_values_that_do_not_fit_the_small_model_are_changed_and_marked():
    """The 2-layer, 4-head, 128-dimension model with an 8-epoch cap: a layer beyond its layers becomes its last (its
    first for a negative index before the first), more heads than it has become all of them, NSD's e ∈ ℝ^d its
    dimension, the gate's pre-warm-up scaled to the budget; a value that fits is kept."""
    assert (multi30k_systems.MODEL, multi30k_systems.CROSS_MODEL["dim"]) == (
        {"encoder": 2, "decoder": 2, "heads": 4, "dim": 128, "epochs": 8}, 512)

    def adapt(flag, value):
        s = multi30k_systems.adapt(Setting(flag, value, "stated: somewhere"))
        return s.value, s.mark.split(" ", 1)[0]

    assert adapt("--pascal-layers", "5") == ("1", "deviates")
    assert adapt("--distance-layers", "0,4,5") == ("0,1", "deviates")
    assert adapt("--sync-layer", "-3") == ("0", "deviates") and adapt("--sync-layer", "-2") == ("-2", "ours:")
    assert adapt("--dbsa-decoder-layers", "3") == ("1", "deviates")
    assert adapt("--distance-layers", "all") == ("all", "ours:") and adapt("--lisa-layers", "1") == ("1", "ours:")
    assert adapt("--pascal-heads", "8") == ("4", "deviates") and adapt("--pascal-heads", "4") == ("4", "ours:")
    assert adapt("--nsd-embed-dim", "512") == ("128", "deviates") and adapt("--nsd-embed-dim", "64") == ("64", "ours:")
    assert adapt("--gate-warmup-epochs", "80") == ("6", "deviates") and adapt("--gate-warmup-epochs", "0") == \
        ("0", "ours:")
    nsd = {s.flag: s for s in multi30k_systems.method_settings(cross_systems.BY_NAME["NSD"])}
    assert nsd["--nsd-embed-dim"].value == "128" and "Eq. 10" in nsd["--nsd-embed-dim"].mark
    assert "German" in multi30k_systems.describe(cross_systems.BY_NAME["NSD"])


@pytest.mark.fast
def test_the_data_is_syntrans_prepares_multi30k_en_de_without_filters():
    """The table's data settings give the data of `syntrans-prepare multi30k --pair en-de --bpe-ops 4000 --ratio off
    --max-len off`: every caption kept, one joint BPE of 4,000 merges, the corpus' Moses route; cased scoring."""
    from syntrans.cli.prepare import build_parser, recipe_from_args

    s = data_settings("multi30k", "multi30k_en_de")
    r = s.recipe
    assert (r.max_len, r.ratio, r.bpe_ops, r.joint) == (OFF, OFF, 4000, True)
    assert r.lowercase is None and r.langid is None and r.train_limit is None and r.word_vocab is None
    pair = CORPORA["multi30k"].find_pair("en", "de")
    ours = apply_recipe(pair, r)
    assert (ours.clean.max_len, ours.clean.ratio) == (None, None) and ours.merges() == {"de": 4000, "en": 4000}
    assert ours.joint and ours.tokenize and not ours.lowercase and not ours.gold_parses
    args = build_parser().parse_args(["multi30k", "--pair", "en-de", "--out", "x", "--bpe-ops", "4000", "--ratio", "off",
                                      "--max-len", "off"])
    # --bpe-ops is applied by the pipeline, after the recipe flags (syntrans.prep.pipeline)
    command = replace(apply_recipe(pair, recipe_from_args(args)), bpe_ops=args.bpe_ops)
    assert ours == command and ours.merges() == dict.fromkeys(command.langs, args.bpe_ops)
    assert (s.evaluation.tokenize, s.evaluation.lowercase, s.references) == ("13a", False, 1)
    assert all(where.startswith(("not stated: ours", "not applicable")) for _, where in s.sources)


# ------------------------------------------------------------------------------------------------ chrF++

HYPS = ["The cat sat on the mat.", "A dog runs in the park!", "Two men play chess outside."]
REFS = ["The cat is sitting on the mat.", "A dog is running through the park.", "Two men are playing chess outside."]


@pytest.mark.fast
def test_chrf_is_sacrebleus_chrf_plus_plus():
    from sacrebleu.metrics import CHRF

    from syntrans.reproduce.scoring import chrf

    score, signature = chrf(HYPS, REFS, lowercase=False)
    direct = CHRF(word_order=2)
    assert score == pytest.approx(direct.corpus_score(HYPS, [REFS]).score, abs=1e-9)
    assert signature == str(direct.get_signature()) and "nw:2" in signature and "case:mixed" in signature
    assert score != pytest.approx(CHRF().corpus_score(HYPS, [REFS]).score)  # the word bigrams count (chrF2, no ++)
    lower, signature = chrf([h.upper() for h in HYPS], REFS, lowercase=True)
    assert lower == pytest.approx(CHRF(word_order=2, lowercase=True).corpus_score(
        [h.upper() for h in HYPS], [REFS]).score) and "case:lc" in signature


@contextmanager
def _seed(value: str):
    before = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = value
    try:
        yield
    finally:
        os.environ.pop("SACREBLEU_SEED") if before is None else os.environ.__setitem__("SACREBLEU_SEED", before)


@pytest.mark.fast
def test_the_chrf_paired_test_is_sacrebleus_paired_test():
    from sacrebleu.metrics import CHRF
    from sacrebleu.significance import PairedTest

    from syntrans.reproduce.significance import paired_bootstrap

    refs = REFS * 10
    base = ["The cat.", "A dog.", "Two men."] * 10
    system = HYPS * 9 + ["The cat.", "A dog.", "Two men."]
    p, description = paired_bootstrap(base, system, refs, "de", False, metric="chrF++", n_samples=200)
    with _seed("12345"):
        _, results = PairedTest([("b", base), ("s", system)], {"chrF++": CHRF(word_order=2)}, [refs], test_type="bs",
                                n_samples=200)()
    b, s = results["chrF2++"]  # sacreBLEU names its results by the score: chrF2++
    assert p == s.p_value and s.score > b.score and p < 0.05
    assert "|ΔchrF++|" in description and "nw:2" in description and "seed:12345" in description
    assert paired_bootstrap(base, base, refs, "de", False, metric="chrF++")[0] == 1.0  # equal outputs: p = 1
    with pytest.raises(ValueError, match="metric must be one of BLEU, chrF\\+\\+"):
        paired_bootstrap(base, system, refs, "de", False, metric="TER")


def test_the_cross_paper_table_reports_chrf_too(tmp_path):
    """The cross kind's results: chrF++ mean ± sd, Δ, p and Holm's correction over the family of its own, beside
    BLEU's (hand-made outcomes of two systems of the cross-paper table's IWSLT14 row)."""
    from syntrans.reproduce.cross import cross_markdown

    table = TABLES["cross_paper"]
    assert table.chrf and not TABLES["distance_table1"].chrf
    key = table.rows[0].dataset.key
    outcomes = {(key, "Transformer"): {"seeds": [1, 2], "scores": [30.0, 31.0], "chrf": [50.0, 51.0]},
                (key, "distance-mask"): {"seeds": [1, 2], "scores": [30.5, 31.5], "chrf": [52.0, 53.0],
                                         "p_values": [0.5, 0.4], "chrf_p_values": [0.01, 0.02]},
                (key, "gated"): {"seeds": [1, 2], "scores": [29.0, 30.0], "chrf": [49.0, 48.0],
                                 "p_values": [0.3, 0.2], "chrf_p_values": [0.001, 0.002]}}
    md = cross_markdown(table, outcomes, [], [], tmp_path / "c.png")
    header = [c.strip() for c in next(ln for ln in md.splitlines() if ln.startswith("| system |")).strip("|").split("|")]
    at = header.index("chrF++ (mean ± sd)")
    assert header[at:at + 5] == ["chrF++ (mean ± sd)", "Δ chrF++ vs Transformer", "chrF++ p", "chrF++ Holm-adjusted p",
                                 "chrF++ significance"]
    # Holm over the two chrF++ tests: gated 0.002 × 2 = 0.004 (lower in both pairs: ‡), distance-mask 0.02 × 1
    assert _cells(md, "distance-mask")[at:at + 5] == ["52.50 ± 0.71 (n=2)", "+2.00", "0.02", "0.02", "†"]
    assert _cells(md, "gated")[at:at + 5] == ["48.50 ± 0.71 (n=2)", "-2.00", "0.002", "0.004", "‡"]
    # BLEU's own family: gated 0.3 × 2 = 0.6, distance-mask 0.5 × 1 kept at the 0.6 before it
    assert _cells(md, "distance-mask")[4:7] == ["0.5", "0.6", "n.s."]
    assert "chrF++: sacreBLEU's CHRF with word_order=2" in md


# ------------------------------------------------------------------------------------------------ the parsers' scores

@pytest.mark.fast
def test_parser_scores_are_read_flat_or_nested_and_printed_with_the_file(tmp_path):
    from syntrans.reproduce.parser_report import ParserScoresError, parser_score_lines, read_parser_scores

    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"en": {"uas": 80.1, "las": 76, "upos": 92.0, "bracket_f1": 70.2, "test_file": "t.conllu",
                                       "train_files": ["a.conllu", "b"]}, "de": {"las": 70.5, "other": "x"}}))
    got = read_parser_scores(flat)
    assert got == {"en": {"uas": 80.1, "las": 76.0, "upos": 92.0, "bracket_f1": 70.2, "test_file": "t.conllu",
                          "train_files": ["a.conllu", "b"]}, "de": {"las": 70.5}}
    lines = parser_score_lines(flat, got)
    assert f"`{flat}`" in lines[2]
    assert "| en | 80.10 | 76.00 | 92.00 | 70.20 | t.conllu | a.conllu, b |" in lines
    assert "| de | — | 70.50 | — | — | — | — |" in lines
    # scripts/train_parsers.py's layout: depparse and constituency objects, train and test names
    nested = tmp_path / "scores.json"
    nested.write_text(json.dumps({"en": {"depparse": {"uas": 81.0, "las": 77.0, "upos": 93.5}, "constituency": {"f1": 69.9},
                                         "train": "EWT dev + GUM", "test": "EWT test"},
                                  "de": {"depparse": {"uas": 75.0, "las": 70.0, "upos": 90.0},
                                         "constituency": "none: no German treebank"}}))
    got = read_parser_scores(nested)
    assert got["en"] == {"uas": 81.0, "las": 77.0, "upos": 93.5, "bracket_f1": 69.9, "test_file": "EWT test",
                         "train_files": ["EWT dev + GUM"]}
    assert "bracket_f1" not in got["de"] and got["de"]["uas"] == 75.0
    for text, match in (("[1, 2]", "expected an object of languages"), ('{"en": 3}', "language 'en'"),
                        ('{"en": {"uas": "high"}}', "en.uas: expected a number"), ("{nope", "expected JSON")):
        flat.write_text(text)
        with pytest.raises(ParserScoresError, match=match):
            read_parser_scores(flat)
    with pytest.raises(ParserScoresError, match="cannot read it"):
        read_parser_scores(tmp_path / "missing.json")


@pytest.mark.fast
def test_a_bad_parser_scores_file_stops_the_command_before_any_work(tmp_path, capsys):
    from syntrans.cli.reproduce import main

    bad = tmp_path / "scores.json"
    bad.write_text('{"en": {"uas": "high"}}')
    code = main(["multi30k", "--smoke", "--synthetic", "--parser-scores", str(bad), "--work-dir", str(tmp_path / "w"),
                 "--results-dir", str(tmp_path / "r")])
    assert code == 2 and "en.uas: expected a number" in capsys.readouterr().err
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()


@pytest.mark.fast
def test_any_tables_results_file_shows_the_parser_scores_under_its_table(tmp_path):
    """A BLEU table (distance_table1) written with --parser-scores: the section follows the table, before the
    Deviations block (every system skipped: nothing trains)."""
    from syntrans.reproduce.runner import Options, Reproduction

    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({"en": {"uas": 80.1}}))
    rep = Reproduction(Options("distance_table1", work_dir=tmp_path / "w", results_dir=tmp_path / "r", smoke=True,
                               synthetic=True, parser_scores=scores), log=lambda m: None)
    outcomes = {(r.dataset.key, s.name): {"skipped": "stub"} for r in rep.table.rows for s in r.systems}
    md = rep.write(outcomes, 0.0).read_text(encoding="utf-8")
    assert "| en | 80.10 | — | — | — | — | — |" in md and f"`{scores}`" in md
    assert md.index("| IWSLT14 de→en | baseline |") < md.index("## Parser scores") < md.index("## Deviations")


# ------------------------------------------------------------------------------------------------ what a run selects

@pytest.mark.fast
def test_the_first_comparison_runs_by_default_and_all_runs_every_system(tmp_path):
    from syntrans.reproduce.runner import Options, Reproduction

    def chosen(systems, table="multi30k"):
        rep = Reproduction(Options(table, work_dir=tmp_path, smoke=True, synthetic=True, systems=systems),
                           log=lambda m: None)
        return rep.opts.systems, rep.selection

    assert chosen(None) == (list(FIRST), "default")
    assert chosen(["all"]) == ([cs.name for cs in cross_systems.SYSTEMS], "all")
    assert chosen(["ALL"])[0] == chosen(["all"])[0]
    assert chosen(["pascal", "+s&h"]) == (["PASCAL", "+S&H"], "asked")
    assert chosen(None, "cross_paper") == (None, "all")  # a table without a default runs every system


def test_every_prepared_folder_parses_both_sides_fully(tmp_path, monkeypatch):
    """Both sides get dependencies and constituency trees whatever the systems read (one parse serves every selection:
    the Transformer alone, the first comparison, all fourteen)."""
    from syntrans.reproduce.runner import Options, Reproduction

    def views(systems):
        rep = Reproduction(Options("multi30k", work_dir=tmp_path, systems=systems), log=lambda m: None)
        asked = []
        monkeypatch.setattr(rep, "prepare", lambda ds, system=None, views=None: asked.append(views) or
                            SimpleNamespace(tgt=ds.tgt, lowercase=False, ref_test_more=[]))
        units, _ = rep.plan()
        return asked, units

    asked, units = views(["Transformer"])
    assert asked == [{"source": ("deps", "trees"), "target": ("deps", "trees")}] and [u[2] for u in units] == [1, 2]
    asked, units = views(None)
    assert {(tuple(a["source"]), tuple(a["target"])) for a in asked} == {(("deps", "trees"), ("deps", "trees"))}
    assert sorted({u[1] for u in units}) == sorted(FIRST) and len(units) == 10


# ------------------------------------------------------------------------------------------------ a smoke run

@pytest.fixture(scope="module")
def smoke(tmp_path_factory, single_threaded_tools):
    from helpers import BIN

    root = tmp_path_factory.mktemp("multi30k")
    scores = root / "parser_scores.json"
    scores.write_text(json.dumps({"en": {"uas": 80.1, "las": 76.0, "upos": 92.0, "bracket_f1": 70.2,
                                         "test_file": "en_ewt-ud-test.conllu", "train_files": ["en_ewt-ud-dev.conllu"]},
                                  "de": {"uas": 74.5}}), encoding="utf-8")
    cmd = ["bash", str(ROOT / "scripts" / "reproduce" / "multi30k.sh"), "--smoke", "--synthetic", "--smoke-updates",
           "12", "--smoke-sizes", "150,30,30", "--parser-scores", str(scores), "--work-dir", str(root / "work"),
           "--results-dir", str(root / "results")]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONWARNINGS": "ignore"}
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=1200)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    return root, cmd, env, scores


def _cells(md: str, name: str) -> list:
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {name} |"))
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.mark.slow
def test_the_smoke_results_recompute_from_the_written_outputs(smoke):
    """BLEU and chrF++ of each system equal sacreBLEU's on its written hypotheses; the chrF++ p-values equal sacreBLEU's
    PairedTest run here, Holm-corrected over the four systems of the first comparison; the parsers' scores are under
    the table, the file named; the systems outside the first comparison are listed, not run."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    from syntrans.reproduce.runner import _slug
    from syntrans.reproduce.significance import holm

    root, _, _, scores = smoke
    md = (root / "results" / "multi30k.md").read_text(encoding="utf-8")
    header = next(ln for ln in md.splitlines() if ln.startswith("| system |"))
    for column in ("ours (sacreBLEU, mean ± sd)", "Holm-adjusted p", "chrF++ (mean ± sd)", "chrF++ Holm-adjusted p",
                   "epochs (per seed)", "training s (mean ± sd)"):
        assert f"| {column} |" in header, column
    assert "published BLEU" not in header  # no paper reports Multi30k
    runs = root / "work" / "multi30k" / "multi30k_en_de"
    hyps, refs = {}, None
    for name in FIRST:
        score = json.loads((runs / _slug(name) / "seed1" / "score.checkpoint_best.json").read_text())
        refs = Path(score["refs"]).read_text(encoding="utf-8").splitlines()
        hyps[name] = (root / score["hyps"]).read_text(encoding="utf-8").splitlines()
        cells = _cells(md, name)
        assert cells[1] == f"{BLEU().corpus_score(hyps[name], [refs]).score:.2f} (n=1)"
        assert cells[6] == f"{CHRF(word_order=2).corpus_score(hyps[name], [refs]).score:.2f} (n=1)"
        assert cells[11] != "" and int(cells[11]) >= 1  # the epochs the seed ran
    ps = {}
    with _seed("12345"):
        for name in FIRST[1:]:
            _, res = PairedTest([("b", hyps["Transformer"]), ("s", hyps[name])], {"chrF++": CHRF(word_order=2)}, [refs],
                                test_type="bs", n_samples=1000)()
            b, s = res["chrF2++"]
            ps[name] = 1.0 if b.score == s.score else s.p_value
    adjusted = holm(ps)
    for name in FIRST[1:]:
        cells = _cells(md, name)
        assert cells[8:10] == [f"{ps[name]:.2g}", f"{adjusted[name]:.2g}"], (name, cells)
        assert cells[10] in ("†", "‡", "mixed", "n.s.")
        assert cells[4] != "" and cells[5] != ""  # BLEU's Holm-adjusted p and marker
    for name in ("gated", "NSD", "+S&H"):
        assert _cells(md, name)[1].startswith("not run: not selected (not among the table's default systems; --systems all")
    section = md[md.index("## Parser scores"):]
    assert f"`{scores}`" in section.splitlines()[2]
    assert "| en | 80.10 | 76.00 | 92.00 | 70.20 | en_ewt-ud-test.conllu | en_ewt-ud-dev.conllu |" in section
    assert "| de | 74.50 | — | — | — | — | — |" in section
    assert md.index("## Multi30k en→de") < md.index("## Parser scores") < md.index("## Settings")
    assert "chrF++ signature (sacreBLEU CHRF, word_order=2): `nrefs:1|case:mixed|eff:yes|nc:6|nw:2" in md
    assert "Systems: the table's default, Transformer, distance-mask, PASCAL, LISA, DBSA" in md


@pytest.mark.slow
def test_a_rerun_skips_every_finished_step_and_scores_chrf_where_an_earlier_run_lacks_it(smoke):
    """Resuming: a second run trains and decodes nothing; a score file written without chrF++ (as the cross-paper
    table's before chrF++ was added) is scored again from its hypotheses, not decoded again."""
    root, cmd, env, _ = smoke
    old = root / "work" / "multi30k" / "multi30k_en_de" / "pascal" / "seed1" / "score.checkpoint_best.json"
    before = json.loads(old.read_text())
    old.write_text(json.dumps({k: v for k, v in before.items() if not k.startswith("chrf")}))
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    out = again.stdout
    assert out.count("training finished before: skipped") == 5 and "] fairseq-train" not in out
    assert out.count("decoded and scored before: skipped") == 4 and "fairseq-generate" not in out
    assert json.loads(old.read_text())["chrf"] == pytest.approx(before["chrf"])
