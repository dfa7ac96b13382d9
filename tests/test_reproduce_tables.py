"""The reproduction tables: every table has its script, every system's config exists and decodes with the paper's flags,
every system's extra flags build the model the paper's label names (layers, heads, τ, σ², the gate's tricks), a table
drawn from another's runs names that table's systems; the published numbers are those of an independent
transcription of the papers' tables, or of the papers' own text (when the shared notes are present); the scoring and
report helpers."""
import dataclasses
import functools
import math
import os
import re
from pathlib import Path

import pytest
from helpers import SHARED_DATA, SMALL, build_task_and_model

from syntrans.prep.recipe import Recipe
from syntrans.reproduce.config_file import CONFIG_DIR, ConfigError, read_args_file
from syntrans.reproduce.published import PASCAL_T7, protocol
from syntrans.reproduce.published_data import data_settings
from syntrans.reproduce.results_tables import _delta, mean_sd
from syntrans.reproduce.runner import _slug
from syntrans.reproduce.scoring import bleu, detokenize, generate_hypotheses
from syntrans.reproduce.tables import TABLES

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = [(t, r, s) for t in TABLES.values() for r in t.rows for s in r.systems]
#: the configs of the stock Transformer: the baselines, Ma et al.'s row 1, and +MULTI-TASK (a Transformer on other data)
STOCK = (".baseline.args", ".row01.args", ".multitask.args")
PAPER_OF_PREFIX = {"distance": "Hou et al. 2022", "gated": "Hou et al. (gated", "pascal": "Bugliarello & Okazaki 2020",
                   "syncattn": "Deguchi et al. 2021", "nsd": "Ma et al. 2019", "cross": "Hou et al. 2022's IWSLT14 recipe",
                   "multi30k": "Ours: no paper reports this table"}


@functools.lru_cache(maxsize=None)
def _reads_nothing(config: str) -> bool:
    from syntrans.reproduce.config_views import side_views_of_config

    return side_views_of_config(CONFIG_DIR / config) == {"source": (), "target": ()}


@pytest.mark.parametrize("table,row,system", SYSTEMS, ids=lambda x: getattr(x, "key", None) or getattr(x, "name", None))
def test_every_system_has_a_config_with_decoding_flags(table, row, system):
    cfg = read_args_file(CONFIG_DIR / system.config)
    assert "--arch" in cfg.flags and cfg.value("--task") == "syntax_translation"
    assert cfg.value("--max-update") or cfg.value("--max-epoch"), f"{system.config}: no training length"
    assert "--beam" in cfg.decode, f"{system.config}: no '# decode:' line with --beam"
    # the baselines are the stock Transformer (a stock preset, or our Multi30k recipe's syntax_transformer with no
    # method on: it reads no parse); every other system switches a syntax method on
    arch = cfg.value("--arch")
    stock = arch.startswith("transformer_") or (arch == "syntax_transformer" and _reads_nothing(system.config))
    assert stock == system.config.endswith(STOCK), (system.config, arch)


def test_first_system_of_every_row_is_the_reference():
    for t in TABLES.values():
        for r in t.rows:
            assert r.systems[0].name == t.reference, (t.key, r.dataset.key)
            assert len({s.name for s in r.systems}) == len(r.systems)
            # every system has its own work folder
            assert len({_slug(s.name) for s in r.systems}) == len(r.systems), (t.key, [s.name for s in r.systems])


def test_every_table_has_its_script_and_every_script_a_table():
    assert len(TABLES) == 24  # the papers' 22 tables and figures, the cross-paper table and the Multi30k table
    scripts = {p.stem: p for p in (ROOT / "scripts" / "reproduce").glob("*.sh")}
    assert set(scripts) == set(TABLES)
    for key, path in scripts.items():
        assert os.access(path, os.X_OK), path
        assert path.read_text(encoding="utf-8").rstrip().endswith(f'exec syntrans-reproduce {key} "$@"'), path
        prefix = key.split("_")[0]
        assert TABLES[key].paper.startswith(PAPER_OF_PREFIX[prefix]), (key, TABLES[key].paper)


def test_every_table_is_listed_in_the_docs():
    docs = (ROOT / "docs" / "reproduce.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(\w+)\.sh` \|", docs, flags=re.M)
    assert sorted(listed) == sorted(TABLES)


def test_kinds_splits_and_units():
    for t in TABLES.values():
        assert t.kind in ("bleu", "time", "curve", "gates", "length", "cross"), t.key
        assert t.split in ("test", "valid"), t.key
        assert (t.unit in ("seconds", "minutes", "hours", "GPU-hours")) == (t.kind == "time"), t.key
        assert (t.runs_of is not None) or t.kind in ("bleu", "curve", "cross"), f"{t.key}: a {t.kind} table reads other runs"
        level, where = t.significance
        assert 0 < level <= 0.05 and where, t.key


def test_papers_significance_levels():
    # Hou et al. 2022 §4.2, the gated paper's Table 3 caption, Bugliarello & Okazaki's Table 1 caption: p < 0.01
    assert {k: TABLES[k].significance[0] for k in ("distance_table1", "gated_table3", "pascal_table1")} == \
        {"distance_table1": 0.01, "gated_table3": 0.01, "pascal_table1": 0.01}
    assert TABLES["pascal_table1"].ribes and not TABLES["gated_table3"].ribes


def test_a_curve_has_an_x_for_every_system_but_its_reference():
    curves = [t for t in TABLES.values() if t.kind == "curve"]
    assert {t.key for t in curves} == {"distance_figure2", "gated_figure2a", "gated_figure2b"}
    for t in curves:
        assert t.x_label
        for r in t.rows:
            xs = [s.x for s in r.systems if s.name != t.reference]
            assert xs and None not in xs and len(set(xs)) == len(xs), (t.key, xs)
    assert [s.x for s in TABLES["distance_figure2"].rows[0].systems] == [None, 1, 2, 3, 4, 5, 6]
    assert [s.x for s in TABLES["gated_figure2a"].rows[0].systems] == [1, 2, 3, 4, 5, 6]
    # the τ values (ours) include the paper's best (10) and the one it calls the hard margin (1)
    assert {1, 10} <= {s.x for s in TABLES["gated_figure2b"].rows[0].systems}
    for t in TABLES.values():
        if t.kind != "curve":
            assert all(s.x is None for r in t.rows for s in r.systems), t.key


def _same_run(a, b) -> bool:
    """Whether two systems train the same run: everything but the published numbers and the figure's x."""
    return (a.name, a.config, a.extra, a.data) == (b.name, b.config, b.extra, b.data)


def test_a_table_drawn_from_another_tables_runs_names_its_datasets_and_systems():
    drawn = {k: t.runs_of for k, t in TABLES.items() if t.runs_of}
    assert drawn == {"distance_table4": "distance_table1", "gated_figure3": "gated_table7", "gated_figure2a": "gated_table4",
                     "gated_table8": "gated_table3", "pascal_table6": "pascal_table1", "pascal_figure2": "pascal_table1"}
    for key, source_key in drawn.items():
        t, source = TABLES[key], TABLES[source_key]
        assert source.runs_of is None, key
        rows = {r.dataset.key: r for r in source.rows}
        assert [r.dataset.key for r in t.rows] == [r.dataset.key for r in source.rows], key
        for r in t.rows:
            assert r.dataset == rows[r.dataset.key].dataset
            for s in r.systems:
                assert any(_same_run(s, o) for o in rows[r.dataset.key].systems), (key, r.dataset.key, s.name)
            # the same seeds and checkpoint, and the same data, as the runs it reads
            assert protocol(key, r.dataset.key) == protocol(source_key, r.dataset.key)
            assert data_settings(key, r.dataset.key) == data_settings(source_key, r.dataset.key)
    # the figure of a table's runs shows all of them
    assert [s.name for s in TABLES["gated_figure3"].rows[0].systems] == ["All", "BatchNorm + Pre-warmup", "BatchNorm",
                                                                         "Nothing"]


def test_every_system_data_override_is_a_recipe_field():
    fields = {f.name for f in dataclasses.fields(Recipe)}
    overridden = 0
    for t, r, s in SYSTEMS:
        for name, value in s.data:
            assert name in fields, (t.key, s.name, name)
            dataclasses.replace(data_settings(t.key, r.dataset.key).recipe, **{name: value})  # a valid value
            overridden += 1
    assert overridden >= 6 + 2 * 2  # +MULTI-TASK per dataset; Table 5's Transformer and + data filtering on NC11


def test_pascal_table5_leaves_out_what_the_best_models_do_not_use():
    """App. B: components are added "whenever they were used by the models reported in Table 1": parent ignoring
    where Table 7's q > 0, the language filter where App. A applies it (NC11, WMT16)."""
    for r in TABLES["pascal_table5"].rows:
        ds = r.dataset.key
        names = [s.name for s in r.systems]
        assert ("+ parent ignoring" in names) == (PASCAL_T7[ds][1] > 0), ds
        filtered = data_settings("pascal_table1", ds).recipe.langid is True
        assert ("+ data filtering" in names) == filtered, ds
        transformer = r.systems[0]
        assert transformer.name == "Transformer" and dict(transformer.data).get("langid", None) in (
            (False,) if filtered else (None,))
    names = {r.dataset.key: [s.name for s in r.systems] for r in TABLES["pascal_table5"].rows}
    assert names["nc11_en_de"] == ["Transformer", "+ data filtering", "+ PASCAL", "+ parent ignoring"]
    assert names["aspec_en_ja"] == ["Transformer", "+ PASCAL"]


def test_pascal_table1_ribes_and_multitask_data():
    rows = {r.dataset.key: {s.name: s for s in r.systems} for r in TABLES["pascal_table1"].rows}
    # Table 1, En-Ja [R]
    assert {n: s.more("RIBES") for n, s in rows["aspec_en_ja"].items()} == {
        "baseline": 83.46, "PASCAL": 85.21, "LISA": 83.51, "MULTI-TASK": 84.18, "S&H": 83.88}
    assert all(s.more("RIBES") is None for ds, systems in rows.items() if ds != "aspec_en_ja" for s in systems.values())
    assert all(systems["MULTI-TASK"].data == (("multitask", True),) for systems in rows.values())
    # Table 4: WAT En-Ja trains on 3,008,500 pairs, all three ASPEC-JE training files
    parts = data_settings("pascal_table1", "aspec_en_ja").recipe.train_parts
    assert [f for p in parts for _, names in p.files for f in names[:1]] == [
        "ASPEC-JE/train/train-1.txt", "ASPEC-JE/train/train-2.txt", "ASPEC-JE/train/train-3.txt"]


# ---------------------------------------------------------------- the model each system's flags build

def _layers_of_label(name: str):
    """The 0-based layers a system's label names: "layer 3" → [2], "layers 1-4" → [0, 1, 2, 3],
    "constituency 2" / "dependency 2" → [1]."""
    m = re.fullmatch(r"layers (\d)-(\d)", name)
    if m:
        return list(range(int(m.group(1)) - 1, int(m.group(2))))
    m = re.fullmatch(r"(?:layer|constituency|dependency) (\d)", name)
    return [int(m.group(1)) - 1] if m else None


#: the mechanism and heads per layer each layer-wise system must have (stated: Hou 2022 §4.3 "only 3 attention heads";
#: gated §5.3 "the first two heads"; Bugliarello Table 7's h_P; the gated paper's PASCAL baseline: its config's heads)
LAYERWISE = {"distance_figure2": ("distance", lambda ds: 3), "gated_table4": (None, lambda ds: 2),
             "gated_table5": ("distance", lambda ds: 2), "pascal_table3a": ("pascal", lambda ds: PASCAL_T7[ds][0])}
#: gated paper Table 7 (§5.4): (BatchNorm, pre-warm-up K, syntax ignoring p) per configuration; IWSLT de→en: K 80, p 0.4
GATE_TRICKS = {"All": (True, 80, 0.4), "BatchNorm + Pre-warmup": (True, 80, 0.0), "BatchNorm": (True, 0, 0.0),
               "Nothing": (False, 0, 0.0)}
BUILT = ["distance_figure2", "gated_table4", "gated_table5", "gated_table7", "gated_figure2b", "pascal_table3a",
         "pascal_table3b", "pascal_table5", "pascal_appendixb"]


def _build(tiny_data, system):
    argv = read_args_file(CONFIG_DIR / system.config).flags + list(system.extra)
    arch = argv[len(argv) - 1 - argv[::-1].index("--arch") + 1]
    rest = [a for i, a in enumerate(argv) if a != "--arch" and (i == 0 or argv[i - 1] != "--arch")]
    # the tiny size after the system's flags: 6 encoder layers (the papers' layer numbers), 8 heads of 4 dims
    _, model = build_task_and_model(tiny_data, arch, *rest, *SMALL, "--encoder-layers", "6",
                                    "--encoder-attention-heads", "8", "--decoder-attention-heads", "8")
    return model


def _mechanism(model, key):
    return next(m for m in model.plan.mechanisms if m.key == key)


@pytest.mark.parametrize("key", BUILT)
def test_each_systems_flags_build_what_its_label_names(key, tiny_data):
    from syntrans.mechanisms.gate import SyntaxGate

    t = TABLES[key]
    built = 0
    for r in t.rows:
        for s in r.systems:
            if s.config.endswith(STOCK):
                continue
            model = _build(tiny_data, s)
            heads = {i: [(m.key, n) for m, n in model.plan.heads["encoder", i]] for i in range(6)}
            gates = [g for g in model.modules() if isinstance(g, SyntaxGate)]
            if key in LAYERWISE:
                mech, count = LAYERWISE[key]
                mech = mech or ("distance" if s.name.startswith("constituency") else "pascal")
                layers = _layers_of_label(s.name)
                assert {i: h for i, h in heads.items() if h} == {i: [(mech, count(r.dataset.key))] for i in layers}, \
                    (key, s.name, heads)
                if key.startswith("gated") and mech == "distance":
                    assert gates == [], f"{key} {s.name}: 'without any gating' (§5.3), found gates"
            if key == "gated_table7":
                assert len(gates) == 6 and {(g.bn is not None, g.warmup_epochs, g.syntax_dropout) for g in gates} == \
                    {GATE_TRICKS[s.name]}, s.name
            if key == "gated_figure2b":
                assert len(gates) == 6  # the full gated model
                want = None if s.name == "hard mask" else float(s.name.split()[1])
                assert _mechanism(model, "distance").tau == want and (want is None or want == s.x), s.name
            if key == "pascal_table3b":
                cfg = _mechanism(model, "pascal").cfg
                if s.name == "parent-only":
                    assert cfg.weights == "parent-only"
                else:
                    assert cfg.weights == "gaussian" and math.isclose(cfg.sigma ** 2, float(s.name.split()[1]))
            if key == "pascal_table5":
                q = _mechanism(model, "pascal").cfg.ignore
                assert q == (0.0 if s.name == "+ PASCAL" else PASCAL_T7[r.dataset.key][1]), (r.dataset.key, s.name)
            if key == "pascal_appendixb":
                assert _mechanism(model, "pascal").cfg.op == ("add" if "addition" in s.name else "multiply")
            built += 1
    assert built >= 4


NOTES = SHARED_DATA.parent / "PUBLISHED_SETTINGS.md"
PAPERS = SHARED_DATA.parent / "papers"
#: tables whose published numbers are checked against the paper's own text below (the notes give other units)
FROM_THE_PAPER = ("distance_table4",)


def _numbers(text: str) -> set:
    """Every number written in ``text``, thousands separators read ("4,134.1" → 4134.1)."""
    return {float(n.replace(",", "")) for n in re.findall(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", text)}


@pytest.mark.skipif(not NOTES.exists(), reason=f"{NOTES} absent (the shared transcription is not in the clone)")
def test_published_numbers_match_an_independent_transcription():
    """Every published number of a table (and its other published numbers: RIBES, parameters) appears in the
    transcription's section for that paper."""
    sections = {"distance": "## 0.", "gated": "## 3.", "pascal": "## 4.", "syncattn": "## 2.", "nsd": "## 1."}
    text = NOTES.read_text(encoding="utf-8")
    checked = 0
    for t in TABLES.values():
        if t.key in FROM_THE_PAPER or all(s.published is None and not s.published_more for r in t.rows
                                          for s in r.systems):
            continue  # the paper's own text is checked below; ours (the Multi30k table) publishes nothing
        heads = sections.values() if t.key == "cross_paper" else [sections[t.key.split("_")[0]]]  # every paper's
        numbers = set().union(*(_numbers(text.split(head, 1)[1].split("\n## ", 1)[0]) for head in heads))
        for r in t.rows:
            for s in r.systems:
                for value in ([s.published] if s.published is not None else []) + [v for _, v in s.published_more]:
                    assert float(value) in numbers, (t.key, r.dataset.key, s.name, value)
                    checked += 1
    assert checked >= 270


def _paper(name: str) -> str:
    path = PAPERS / name
    if not path.exists():
        pytest.skip(f"{path} absent (the papers' text is not in the clone)")
    return path.read_text(encoding="utf-8")


def test_hou2022_table4_minutes_match_the_paper():
    """Hou et al. 2022, Table 4 ("datasets  Ours  Transformer", "80min", "12h"), read from the paper's text."""
    text = _paper("hou2022_distance_mask.txt")
    assert "datasets\tOurs\tTransformer" in text
    names = {"IWSLT14-De2En": "iwslt14_de_en", "IWSLT14-En2De": "iwslt14_en_de", "NC11-De2En": "nc11_de_en",
             "NC11-En2De": "nc11_en_de", "ASPEC-Ch2Ja": "aspec_zh_ja", "WMT14-En2De": "wmt14_en_de"}

    def minutes(value, unit):
        return float(value) * (60 if unit == "h" else 1)

    paper = {}
    for m in re.finditer(r"^([\w-]+)\t([\d.]+)(min|h)\t([\d.]+)(min|h)$", text, flags=re.M):
        paper[names[m.group(1)]] = {"distance-mask": minutes(m.group(2), m.group(3)),
                                    "baseline": minutes(m.group(4), m.group(5))}
    assert len(paper) == 6
    ours = {r.dataset.key: {s.name: s.published for s in r.systems} for r in TABLES["distance_table4"].rows}
    assert ours == paper
    assert TABLES["distance_table4"].unit == "minutes"


def test_gated_table8_matches_the_paper():
    """Hou et al. (gated), Table 8 ("Datasets  Parameter  GPU-Hours"), read from the paper's text."""
    text = _paper("hou_gated.txt")
    assert "Datasets\tParameter\tGPU-Hours" in text
    names = {"IWSLT-De-En": "iwslt14_de_en", "IWSLT-En-De": "iwslt14_en_de", "NC11-De-En": "nc11_de_en",
             "NC11-En-De": "nc11_en_de", "WMT18-En-Tr": "wmt18_en_tr"}
    paper = {names[m.group(1)]: (float(m.group(2)), float(m.group(3)))
             for m in re.finditer(r"^([\w-]+)\t(\d{6,})\t(\d+\.\d+)$", text, flags=re.M)}
    assert len(paper) == 5
    [gated] = {s.name for r in TABLES["gated_table8"].rows for s in r.systems}
    ours = {r.dataset.key: (float(r.systems[0].more("parameters")), r.systems[0].published)
            for r in TABLES["gated_table8"].rows}
    assert gated == "gated" and ours == paper and TABLES["gated_table8"].unit == "GPU-hours"


def test_args_file_reading(tmp_path):
    p = tmp_path / "x.args"
    p.write_text("# title\n# decode: --beam 4 --lenpen 0.6   (the paper)\n# tokens per update: 4000   (stated: §1)\n"
                 "--arch a   # ours: why\n\n--adam-betas (0.9,0.98)\n--lr 1\n--lr 2  # stated: Table 7\n--share-all\n")
    cfg = read_args_file(p)
    assert cfg.flags == ["--arch", "a", "--adam-betas", "(0.9,0.98)", "--lr", "1", "--lr", "2", "--share-all"]
    assert cfg.decode == ["--beam", "4", "--lenpen", "0.6"]
    assert cfg.tokens_per_update == 4000
    assert cfg.notes == {"decode": "the paper", "tokens-per-update": "stated: §1", "--arch": "ours: why",
                         "--lr": "stated: Table 7"}
    assert cfg.value("--lr") == "2" and cfg.value("--nope") is None and cfg.value("--share-all") == ""
    p.write_text("--arch a\nbeam 4\n")
    with pytest.raises(ConfigError, match=r"x.args, line 2: expected a flag"):
        read_args_file(p)
    with pytest.raises(ConfigError, match="does not exist"):
        read_args_file(tmp_path / "missing.args")


def test_generate_hypotheses_in_sentence_order(tmp_path):
    out = tmp_path / "gen.txt"
    out.write_text("S-1\tb\nH-1\t-0.5\tsecond one\nD-1\t-0.5\tsecond one\nH-0\t-0.1\tfirst\nH-2\t-1\t\n")
    assert generate_hypotheses(out, 3) == ["first", "second one", ""]
    with pytest.raises(ValueError, match="expected hypotheses for sentences 0…3, found 3 \\(first missing: 3\\)"):
        generate_hypotheses(out, 4)
    out.write_text("H-0\t-0.1\ta\nH-0\t-0.1\tb\n")
    with pytest.raises(ValueError, match="line 2: a second hypothesis for sentence 0"):
        generate_hypotheses(out, 1)


def test_detokenize_and_bleu():
    assert detokenize(["Tom &apos;s cat , &quot; Rex &quot; &amp; co ."], "en") == ['Tom\'s cat, "Rex" & co.']
    refs = ["the cat sat on the mat .", "a dog barked loudly today"]
    score, sig = bleu(refs, refs, "en", lowercase=False)
    assert score == pytest.approx(100.0) and "tok:13a" in sig and "case:mixed" in sig
    score_lc, sig_lc = bleu([r.upper() for r in refs], refs, "en", lowercase=True)
    assert score_lc == pytest.approx(100.0) and "case:lc" in sig_lc
    assert bleu([r.upper() for r in refs], refs, "en", lowercase=False)[0] < 10.0  # only the punctuation matches


def test_mean_sd():
    assert mean_sd([1.0, 2.0, 3.0]) == "2.00 ± 1.00 (n=3)"
    assert mean_sd([27.5]) == "27.50 (n=1)"
    assert mean_sd([]) == "—"
    assert (_delta(2.42, 2.4249), _delta(35.74, 34.56), _delta(None, 1.0)) == ("+0.00", "+1.18", "—")


@pytest.mark.fast
def test_the_significance_marker_pairs_seeds_like_the_p_values():
    """A system run on seeds 2 and 3 against a reference run on 1-3: the marker compares seed k with seed k, as the
    runner's paired bootstrap does, not the lists by position."""
    from syntrans.reproduce.results_tables import results_markdown, seed_pairs

    ref = {"seeds": [1, 2, 3], "scores": [35.0, 30.0, 31.0]}
    got = {"seeds": [2, 3], "scores": [31.0, 32.0], "p_values": [0.001, 0.001]}
    assert seed_pairs(got, ref) == [(31.0, 30.0), (32.0, 31.0)]
    assert seed_pairs({"scores": [1.0, 2.0]}, {"scores": [3.0, 4.0]}) == [(1.0, 3.0), (2.0, 4.0)]  # no seeds: position
    table = TABLES["distance_table1"]
    row = table.rows[0]
    md = results_markdown(table, {(row.dataset.key, "baseline"): ref, (row.dataset.key, "distance-mask"): got}, [], [])
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {row.dataset.title} | distance-mask |"))
    assert "† (p ≤ 0.001)" in line
