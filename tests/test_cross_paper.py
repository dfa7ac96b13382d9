"""The cross-paper table (ours): its systems and their marked settings (each paper's own config where it has one for
the data), Holm's correction by hand, the results file from hand-made runs (families, markers, Δ against the best
component, published numbers with their sources, time and memory, the figure), and the peak-memory recorder."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from syntrans.reproduce.config_file import CONFIG_DIR, read_args_file
from syntrans.reproduce.cross_systems import BASE_CONFIG, BY_NAME, MODEL_HEADS, SYSTEMS, method_settings, system_flags
from syntrans.reproduce.significance import holm
from syntrans.reproduce.tables import TABLES

TABLE = TABLES["cross_paper"]
PAPERS_TEN = ("distance-mask", "gated", "PASCAL", "LISA", "DBSA", "SyncAttn", "NSD", "SLA", "+MULTI-TASK", "+S&H")


@pytest.mark.fast
def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 (m = 4): ×4 = 0.02, ×3 = 0.03, ×2 = 0.06, ×1 = 0.04 → kept at 0.06 (monotone)
    assert holm({"a": 0.04, "b": 0.01, "c": 0.03, "d": 0.005}) == pytest.approx(
        {"d": 0.02, "b": 0.03, "c": 0.06, "a": 0.06})
    assert holm({"x": 0.6, "y": 0.5}) == {"y": 1.0, "x": 1.0}  # capped at 1
    assert holm({"only": 0.02}) == {"only": 0.02} and holm({}) == {}


@pytest.mark.fast
def test_the_table_holds_the_transformer_the_ten_systems_and_three_combinations():
    assert [r.dataset.key for r in TABLE.rows] == ["iwslt14_de_en", "nc11_de_en"]
    for row in TABLE.rows:
        names = [s.name for s in row.systems]
        assert names[0] == "Transformer" and tuple(n for n in names[1:] if not BY_NAME[n].group) == PAPERS_TEN
        assert [s.name for s in row.systems if s.group == "combination"] == \
            ["distance-mask + PASCAL", "DBSA + NSD (source)", "gated + LISA"]
        for s in row.systems:  # one recipe: the same config, then syntax_transformer and the method's flags
            assert s.config == BASE_CONFIG and s.extra[:2] == ("--arch", "syntax_transformer")
    assert read_args_file(CONFIG_DIR / BASE_CONFIG).value("--encoder-attention-heads") == str(MODEL_HEADS)
    assert BY_NAME["+MULTI-TASK"].data == (("multitask", True),) and len(system_flags(BY_NAME["+MULTI-TASK"], "nc11_de_en")) == 2


@pytest.mark.fast
@pytest.mark.parametrize("name", [s.name for s in SYSTEMS if not s.group and s.takes])
@pytest.mark.parametrize("dataset", ["iwslt14_de_en", "nc11_de_en"])
def test_each_method_keeps_its_papers_settings_with_their_marks(name, dataset):
    """Where the method's paper has a config for the dataset, its method flags and their 'stated' marks are the
    config's (heads beyond the recipe's 4 excepted, marked a deviation); elsewhere every flag is marked ours."""
    cs = BY_NAME[name]
    settings = method_settings(cs, dataset)
    assert settings
    for take in cs.takes:
        mine = [s for s in settings if s.flag.startswith(take.prefixes)]
        if dataset not in take.configs:
            assert all(s.mark.startswith("ours: as ") for s in mine), mine
            continue
        cfg = read_args_file(CONFIG_DIR / take.configs[dataset])
        for s in mine:
            note = cfg.notes[s.flag]
            if s.mark.startswith("deviates"):
                assert s.flag.endswith("-heads") and int(cfg.value(s.flag)) > MODEL_HEADS == int(s.value)
                continue
            assert s.value == cfg.value(s.flag), s
            assert s.mark.startswith("stated: ") == note.startswith("stated: "), (s, note)
            if note.startswith("stated: "):
                assert s.mark == f"stated: {take.paper}, {note[len('stated: '):]}"


@pytest.mark.fast
def test_pascal_on_nc11_takes_all_four_heads_and_says_why():
    """Table 7's h_P = 8 for NC11 de→en is every head of layer 1 of the paper's 8-head model."""
    (heads,) = [s for s in method_settings(BY_NAME["PASCAL"], "nc11_de_en") if s.flag == "--pascal-heads"]
    assert heads.value == "4" and heads.mark.startswith("deviates: Bugliarello & Okazaki 2020 give 8 heads (stated: "
                                                        "Table 7)")
    ignore = [s for s in method_settings(BY_NAME["PASCAL"], "nc11_de_en") if s.flag == "--pascal-ignore"][0]
    assert (ignore.value, ignore.mark) == ("0.0", "stated: Bugliarello & Okazaki 2020, Table 7")


@pytest.mark.fast
def test_the_combinations_share_heads_and_move_nsd_to_the_source():
    def flags(name, ds="iwslt14_de_en"):
        return {s.flag: (s.value, s.mark) for s in method_settings(BY_NAME[name], ds)}

    dp = flags("distance-mask + PASCAL")
    assert dp["--distance-heads"][0] == dp["--pascal-heads"][0] == "2" and dp["--pascal-layers"][0] == "0"
    assert dp["--distance-layers"] == ("0", "stated: Hou et al. 2022, §4.1")
    dn = flags("DBSA + NSD (source)")
    assert {"--nsd-src-input", "--nsd-src-spe", "--nsd-src-output"} <= set(dn) and not any("-tgt-" in f for f in dn)
    assert dn["--nsd-src-input"][0] == "linear" and dn["--nsd-src-input"][1].startswith("ours: ")
    gl = flags("gated + LISA", "nc11_de_en")
    assert gl["--distance-heads"][0] == "3" and gl["--lisa-layers"][0] == "0"
    assert gl["--gate-warmup-epochs"] == ("60", "stated: Hou et al. (gated), Table 2")


def test_every_systems_flags_build_a_plan_with_its_mechanisms():
    """Each system's flags after the recipe's, parsed by fairseq's own command line (the user dir's model and task),
    build the model's syntax plan with the mechanisms its name says are switched on (and no other)."""
    import os

    from fairseq import options

    import syntrans
    from syntrans.mechanisms.plan import SyntaxPlan
    from syntrans.models.config import model_config
    from syntrans.models.syntax_transformer import model_shape

    recipe = read_args_file(CONFIG_DIR / BASE_CONFIG).flags
    RANGE = [f"--nsd-{side}-{end}" if k == 0 else v for side in ("src", "tgt") for end, v in (("min", "-9"), ("max", "9"))
             for k in (0, 1)]
    want = {"Transformer": set(), "distance-mask": {"distance"}, "gated": {"distance", "gate"}, "PASCAL": {"pascal"},
            "LISA": {"lisa"}, "DBSA": {"dbsa"}, "SyncAttn": {"dbsa", "sync"}, "NSD": {"nsd"}, "SLA": {"sla", "gate"},
            "+MULTI-TASK": set(), "+S&H": {"labels"}, "distance-mask + PASCAL": {"distance", "pascal"},
            "DBSA + NSD (source)": {"dbsa", "nsd"}, "gated + LISA": {"distance", "gate", "lisa"}}
    for cs in SYSTEMS:
        argv = ["data-bin", "--user-dir", os.path.dirname(syntrans.__file__), *recipe, *system_flags(cs, "nc11_de_en"),
                *RANGE]  # NSD's value range, which the task reads from the data
        args = options.parse_args_and_arch(options.get_training_parser(), argv)
        assert args.arch == "syntax_transformer" and args.encoder_attention_heads == MODEL_HEADS
        cfg = model_config(args)
        plan = SyntaxPlan(cfg, model_shape(cfg))  # the mechanisms' checks of their options run here
        assert {m.key for m in plan.active} == want[cs.name], cs.name


# ------------------------------------------------------------------------------------------------ the results file

def _run(root: Path, name: str, seed: int, bleu: float, seconds: float, rss: float, gpu=None) -> dict:
    d = root / name / f"seed{seed}"
    d.mkdir(parents=True)
    (d / "train.log").write_text(
        f"x | INFO | train | epoch 001 | loss 7 | num_updates 40 | train_wall {seconds / 2:g} | wall {seconds:g}\n",
        encoding="utf-8")
    hyps = d / "hyp.txt"
    hyps.write_text("the cat sat on the mat\n" * 4, encoding="utf-8")
    train = {"seconds": seconds, "device": "CPU", "peak_rss_mb": rss, "peak_gpu_mb": gpu}
    return {"run_dir": str(d), "train": train, "bleu": bleu, "hyps": str(hyps), "refs": str(root / "ref.txt"),
            "split": "test", "lowercase": False, "tokenize": None}


def test_results_file_by_hand(tmp_path):
    """Hand-made runs of IWSLT14 de→en (2 seeds each), p-values chosen so that Holm changes the verdicts: the ten
    systems are one family (m = 10), the three combinations another (m = 3)."""
    from syntrans.reproduce.cross import cross_markdown

    (tmp_path / "ref.txt").write_text("the cat sat on the mat\n" * 4, encoding="utf-8")
    (tmp_path / "src.txt").write_text("die katze sass auf der matte\n" * 4, encoding="utf-8")
    prepared = SimpleNamespace(src_test_raw=tmp_path / "src.txt", out_dir=tmp_path, tgt="en", src="de")
    row = TABLE.rows[0]
    # ten systems: distance-mask p 0.001 (×10 = 0.01 → †), gated 0.004 (×9 = 0.036 → †), PASCAL 0.01 (×8 = 0.08: n.s.
    # although 0.01 < 0.05), the others 0.2 … 0.9; combinations: 0.01 (×3 = 0.03 †), 0.02 (×2 = 0.04, kept ≥ 0.03: ‡),
    # 0.5 (n.s.)
    ps = {"distance-mask": [0.0005, 0.001], "gated": [0.004, 0.002], "PASCAL": [0.01, 0.003], "LISA": [0.2, 0.1],
          "DBSA": [0.3, 0.3], "SyncAttn": [0.4, 0.2], "NSD": [0.5, 0.5], "SLA": [0.6, 0.1], "+MULTI-TASK": [0.7, 0.7],
          "+S&H": [0.9, 0.8], "distance-mask + PASCAL": [0.01, 0.005], "DBSA + NSD (source)": [0.02, 0.01],
          "gated + LISA": [0.5, 0.4]}
    scores = {"Transformer": [30.0, 31.0], "distance-mask": [31.0, 32.5], "gated": [32.0, 33.0], "PASCAL": [31.0, 31.5],
              "DBSA + NSD (source)": [29.0, 30.0], "distance-mask + PASCAL": [33.0, 34.0]}
    outcomes = {}
    for s in row.systems:
        sc = scores.get(s.name, [30.5, 30.5])
        results = [_run(tmp_path, s.name.replace(" ", "_").replace("+", "p"), k + 1, sc[k], 100.0 + 10 * k, 900.0 + k,
                        2048.0 if s.name == "gated" else None) for k in range(2)]
        outcomes[(row.dataset.key, s.name)] = {"results": results, "seeds": [1, 2], "scores": sc, "prepared": prepared,
                                               **({"p_values": ps[s.name]} if s.name in ps else {})}
    outcomes[("nc11_de_en", "Transformer")] = {"skipped": "not selected (--datasets)"}
    md = cross_markdown(TABLE, outcomes, ["header line"], ["footer line"], tmp_path / "out" / "cross_paper.png")

    def cells(name):
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {name} |"))
        return [c.strip() for c in line.strip("|").split("|")]

    assert cells("distance-mask")[4:7] == ["0.001", "0.01", "†"]
    assert cells("gated")[4:7] == ["0.004", "0.036", "†"]
    assert cells("PASCAL")[4:7] == ["0.01", "0.08", "n.s."]  # significant alone, not after Holm
    assert cells("LISA")[6] == "n.s." and cells("Transformer")[3:7] == ["", "", "", ""]
    # combinations: Δ against the best component, their own family of three
    dp = cells("distance-mask + PASCAL")
    assert dp[3] == "+3.00" and dp[4] == "+1.75" and dp[5:8] == ["0.01", "0.03", "†"]  # best component: distance 31.75
    dn = cells("DBSA + NSD (source)")
    assert dn[5:8] == ["0.02", "0.04", "‡"]
    assert cells("gated + LISA")[7] == "n.s."
    # the published numbers with their sources; time and memory
    assert cells("Transformer")[1] == "34.56 (Hou et al. 2022, Table 1); 34.58 (Hou et al. (gated), Table 3)"
    assert cells("DBSA")[1] == "—"
    assert cells("gated")[-3:] == ["105 ± 7", "1.312", "GPU 2,048 MB; RSS 901 MB"]
    assert cells("LISA")[-1] == "RSS 901 MB"
    assert "| Transformer | 26.83 (Hou et al. 2022, Table 1); 27.06 (Hou et al. (gated), Table 3); 26.60 " \
           "(Bugliarello & Okazaki 2020, Table 1) | not run: not selected (--datasets) |" in md
    # the settings with their marks, the figure
    assert "- IWSLT14 de→en, distance-mask: Hou et al. 2022: the soft syntactic-distance mask in heads of encoder layer " \
           "1. `--distance-layers 0` (stated: Hou et al. 2022, §4.1)" in md
    assert "Holm's (1979) step-down correction over the ten comparisons" in md
    assert (tmp_path / "out" / "cross_paper.png").stat().st_size > 10_000 and "![" in md


# ------------------------------------------------------------------------------------------------ peak GPU memory

@pytest.mark.fast
def test_the_peak_survives_fairseqs_reset_after_every_update():
    """fairseq resets torch's peak counter after every update; the watched reset keeps the maximum first (a fake
    torch.cuda whose peak we set by hand)."""
    from syntrans.reproduce import peak_memory

    state = {"peak": 0}
    cuda = SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,
                           max_memory_allocated=lambda d=0: state["peak"],
                           reset_peak_memory_stats=lambda *a, **k: state.update(peak=0))
    torch = SimpleNamespace(cuda=cuda)
    peak_memory._peak.clear()
    peak_memory.watch(torch)
    for used in (300, 900, 500):  # three updates, the reset after each (as fairseq's trainer does)
        state["peak"] = used
        torch.cuda.reset_peak_memory_stats()
    assert state["peak"] == 0 and peak_memory.peak_bytes(torch) == 900
    peak_memory.watch(torch)  # watching twice does not wrap twice
    assert torch.cuda.reset_peak_memory_stats._syntrans_watched


def test_the_peak_files_of_every_process_are_collected(tmp_path):
    from syntrans.reproduce.peak_memory import _write, collect

    out = tmp_path / "peak_memory.json"
    _write(str(out), "main", 10)
    _write(str(out), "rank1", 30)
    assert collect(str(out)) == {"main": 10, "rank1": 30} and not list(tmp_path.glob("peak_memory.json.*"))
    json.dumps(collect(str(out)))


@pytest.mark.fast
def test_the_direction_pairs_seeds_like_the_p_values():
    """The Transformer ran seeds 1-3, the system seeds 2 and 3 (its p-values: seed 2 against seed 2, 3 against 3). By
    seed the system is higher in both pairs (†); by list position (31 against 35) it would read "mixed"."""
    from syntrans.reproduce.cross import family_markers

    row = TABLE.rows[0]
    outcomes = {(row.dataset.key, "Transformer"): {"seeds": [1, 2, 3], "scores": [35.0, 30.0, 31.0]},
                (row.dataset.key, "distance-mask"): {"seeds": [2, 3], "scores": [31.0, 32.0],
                                                     "p_values": [0.0001, 0.0001]}}
    assert family_markers(row, outcomes, 0.05)["distance-mask"][2] == "†"
    outcomes[(row.dataset.key, "distance-mask")]["p_values"] = [0.0001]  # one p for two seed pairs: refused
    with pytest.raises(ValueError, match="1 p-values for 2 seed pairs"):
        family_markers(row, outcomes, 0.05)
