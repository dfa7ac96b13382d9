"""The results of the tables that are not one BLEU per cell: training-time tables (read from fairseq's logs), curve
figures, ΔBLEU by source length and the gate heat maps; and the runner's plumbing for them (another table's runs,
per-system data). Run folders are written by hand here, so every expected number is known without training."""
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from syntrans.reproduce.figures import LENGTH_BUCKETS, bucket_of, curve_figure, curve_points, gates_markdown, length_deltas
from syntrans.reproduce.runner import Options, Reproduction, RunError
from syntrans.reproduce.scoring import bleu
from syntrans.reproduce.tables import TABLES, Dataset, Row, System, Table
from syntrans.reproduce.timing import read_training_log, time_markdown

DS = Dataset("iwslt14_de_en", "iwslt14", "de", "en", "IWSLT14 de→en")


def _epoch_line(epoch: int, updates: int, train_wall: float, wall: float) -> str:
    return (f"2026-01-01 00:00:0{epoch} | INFO | train | epoch {epoch:03d} | loss 7.1 | nll_loss 7.0 | ppl 128 | wps 900 | "
            f"ups 1.2 | wpb 975.8 | bsz 75 | num_updates {updates} | lr 0.001 | gnorm 1.4 | train_wall {train_wall:g} | "
            f"wall {wall:g}")


def _run_dir(root: Path, name: str, seconds: float, epochs, params: int = 180224, device: str = "CPU (x86_64, 2 cores)"):
    d = root / name
    d.mkdir(parents=True)
    lines = [f"2026-01-01 00:00:00 | INFO | fairseq_cli.train | num. shared model params: {params:,} (num. trained: {params:,})",
             "2026-01-01 00:00:00 | INFO | fairseq_cli.train | num. expert model params: 0 (num. trained: 0)"]
    lines += [_epoch_line(*e) for e in epochs]
    (d / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / "train.done").write_text(json.dumps({"seconds": seconds, "device": device}), encoding="utf-8")
    return {"run_dir": str(d), "train": {"seconds": seconds, "device": device}}


def test_training_log_sums_train_wall_over_epochs_and_reads_the_size(tmp_path):
    r = _run_dir(tmp_path, "a", 50.0, [(1, 4, 9, 10), (2, 8, 4, 15), (3, 12, 2, 17)])
    log = read_training_log(Path(r["run_dir"]) / "train.log")
    assert (log.epochs, log.updates, log.train_wall, log.parameters) == (3, 12, 15.0, 180224)
    assert log.per_update == pytest.approx(15 / 12) and log.per_epoch == pytest.approx(5.0)


def test_a_resumed_run_counts_each_epoch_once(tmp_path):
    r = _run_dir(tmp_path, "a", 50.0, [(1, 4, 9, 10), (2, 8, 4, 15)])
    # the resumed process logs epoch 2 again (it was interrupted before its checkpoint) and epoch 3
    (Path(r["run_dir"]) / "train.resumed.log").write_text(_epoch_line(2, 8, 5, 6) + "\n" + _epoch_line(3, 12, 3, 9) + "\n")
    log = read_training_log(Path(r["run_dir"]) / "train.log", Path(r["run_dir"]) / "train.resumed.log")
    assert (log.epochs, log.updates, log.train_wall) == (3, 12, 9 + 5 + 3)


def test_a_log_without_epochs_is_an_error_naming_it(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("nothing here\n")
    with pytest.raises(ValueError, match=r"train\.log: no end-of-epoch line"):
        read_training_log(path)


def _time_table(unit: str) -> Table:
    return Table("t", "times", "Paper X, Table 9", (Row(DS, (
        System("baseline", "distance_mask/iwslt14_de_en.baseline.args", 70.0, published_more=(("parameters", 36933680),)),
        System("ours", "distance_mask/iwslt14_de_en.args", 80.0))),), kind="time", unit=unit)


def _cells(md: str, system: str) -> list:
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| IWSLT14 de→en | {system} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_time_table_converts_to_the_papers_unit_and_averages_seeds(tmp_path):
    a = _run_dir(tmp_path, "b1", 600.0, [(1, 10, 20, 25), (2, 20, 30, 60)])
    b = _run_dir(tmp_path, "b2", 900.0, [(1, 10, 40, 45), (2, 20, 40, 90)])
    md = time_markdown(_time_table("minutes"), {(DS.key, "baseline"): {"results": [a, b]},
                                                (DS.key, "ours"): {"skipped": "not selected (--systems)"}}, [], [])
    cells = _cells(md, "baseline")
    # published 70 min; ours (600 s, 900 s) → 10 and 15 min: mean 12.50, sample sd 3.54
    assert cells[2] == "70" and cells[3] == "12.50 ± 3.54"
    # s/update: (20+30)/20 = 2.5 and 80/20 = 4.0 → 3.250 ± 1.061; s/epoch: 25 and 40 → 32.5 ± 10.6
    assert cells[4] == "3.250 ± 1.061" and cells[5] == "32.5 ± 10.6" and cells[6] == "20, 20"
    assert cells[7] == "36,933,680 / 180,224" and cells[8] == "CPU (x86_64, 2 cores)"
    assert "not run: not selected (--systems)" in _cells(md, "ours")[3]


def test_gpu_hours_count_every_device(tmp_path):
    a = _run_dir(tmp_path, "g", 1800.0, [(1, 10, 20, 25)], device="2× NVIDIA H100 80GB HBM3")
    md = time_markdown(_time_table("GPU-hours"), {(DS.key, "baseline"): {"results": [a]}}, [], [])
    assert _cells(md, "baseline")[3] == "1.00"  # half an hour on two GPUs


def test_length_buckets_and_deltas_equal_sacrebleu_per_bucket():
    assert [bucket_of(n) for n in (1, 10, 11, 20, 21, 50, 51, 400)] == [0, 0, 1, 1, 2, 4, 5, 5]
    assert LENGTH_BUCKETS[-1] == (51, None)
    sources = ["a b c", "a " * 14 + "b", "x y", "w " * 25]
    refs = ["the cat sat on the mat", "a dog ran in the park today", "hello there my friend", "one two three four five"]
    base = ["the cat sat on a mat", "a dog ran in a park", "hello my friend", "one two three"]
    hyps = ["the cat sat on the mat", "a dog ran in the park", "hello there friend", "one two three four"]
    got = length_deltas(sources, refs, base, hyps, "en", False, None)
    assert sorted(got) == [0, 1, 2]
    short = [0, 2]  # 3 and 2 words
    expect = (bleu([hyps[i] for i in short], [refs[i] for i in short], "en", False)[0]
              - bleu([base[i] for i in short], [refs[i] for i in short], "en", False)[0])
    assert got[0] == (2, pytest.approx(expect))
    assert got[1][0] == 1 and got[2][0] == 1
    with pytest.raises(ValueError, match="expected one of each per sentence"):
        length_deltas(sources[:3], refs, base, hyps, "en", False, None)


def test_curve_points_and_png(tmp_path):
    table = Table("c", "layers", "Paper X, Figure 2", (Row(DS, (
        System("baseline", "distance_mask/iwslt14_de_en.baseline.args", 34.56),
        System("layer 2", "distance_mask/iwslt14_de_en.args", None, x=2),
        System("layer 1", "distance_mask/iwslt14_de_en.args", 35.63, x=1))),), kind="curve", x_label="layer")
    outcomes = {(DS.key, "baseline"): {"scores": [30.0, 32.0]}, (DS.key, "layer 1"): {"scores": [33.0]},
                (DS.key, "layer 2"): {"skipped": "x"}}
    [(title, points, reference)] = curve_points(table, outcomes)
    assert title == "IWSLT14 de→en" and reference == ("baseline", 31.0, 34.56)
    assert points == [(1, 33.0, None, 35.63), (2, None, None, None)]  # sorted by x; a system not run has no point
    md = curve_figure(table, outcomes, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "![layers](c.png)" in md


def test_a_curve_with_nothing_to_draw_warns_nothing(tmp_path):
    """A smoke table whose systems were all skipped and that publishes nothing draws an empty figure without
    matplotlib's "no artists with labels" warning (it was the one warning of ours in `make test`)."""
    import warnings
    table = Table("c", "layers", "Paper X, Figure 2", (Row(DS, (
        System("baseline", "distance_mask/iwslt14_de_en.baseline.args", None),
        System("layer 1", "distance_mask/iwslt14_de_en.args", None, x=1))),), kind="curve", x_label="layer")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        curve_figure(table, {}, tmp_path / "c.png")
    assert (tmp_path / "c.png").exists()


def test_gate_maps_average_the_seeds_last_validation(tmp_path):
    runs = []
    for seed, (g00, g01) in enumerate(((0.2, 0.6), (0.4, 0.8)), 1):
        d = tmp_path / f"seed{seed}"
        d.mkdir()
        lines = ["x | INFO | valid | epoch 001 | valid on 'valid' subset | loss 5 | gate_l0h0 0.9 | gate_l0h1 0.9 | "
                 "num_updates 10",
                 f"x | INFO | valid | epoch 002 | valid on 'valid' subset | loss 4 | gate_l0h0 {g00} | gate_l0h1 {g01} | "
                 "num_updates 20"]
        (d / "train.log").write_text("\n".join(lines) + "\n")
        runs.append({"run_dir": str(d)})
    table = Table("g", "gates", "Paper X, Figure 3", (Row(DS, (System("All", "gated/iwslt14_de_en.args", None),)),),
                  kind="gates")
    md = gates_markdown(table, {(DS.key, "All"): {"results": runs}}, [], [], tmp_path / "g.png")
    assert "| 0 | 0.30 | 0.70 |" in md  # the means of the last validation: (0.2+0.4)/2, (0.6+0.8)/2
    assert (tmp_path / "g.iwslt14_de_en.all.png").exists() and (tmp_path / "g.iwslt14_de_en.all.tsv").exists()


def test_a_table_drawn_from_another_tables_runs_uses_its_folders(tmp_path):
    key = next(k for k, t in TABLES.items() if t.runs_of)
    rep = Reproduction(Options(key, work_dir=tmp_path), log=lambda m: None)
    source = TABLES[TABLES[key].runs_of]
    row = source.rows[0]
    assert rep.runs is source
    assert rep.run_dir(row.dataset, row.systems[0], 3).parts[-4:-2] == (source.key, row.dataset.key)


def test_per_system_data_overrides_are_recipe_fields(tmp_path):
    rep = Reproduction(Options("distance_table1", work_dir=tmp_path), log=lambda m: None)
    paper = rep.recipe(DS)
    changed = rep.recipe(DS, System("x", "c.args", None, data=(("langid", True),)))
    assert changed.langid is True and paper.langid is not True
    assert changed.digest() != paper.digest()  # its own data folder
    with pytest.raises(RunError, match=r"data overrides \['nope'\] are not recipe fields"):
        rep.recipe(DS, System("x", "c.args", None, data=(("nope", 1),)))
    # a smoke run on real text keeps a system's setting (the synthetic stand-in: test_a_synthetic_smoke_leaves_out_…)
    smoke = Reproduction(Options("distance_table1", work_dir=tmp_path, smoke=True, raw_dir=tmp_path), log=lambda m: None)
    assert smoke.recipe(DS) is None and smoke.recipe(DS, System("x", "c", None, data=(("langid", True),))).langid is True


def test_unit_done_needs_the_score_of_the_tables_split(tmp_path):
    rep = Reproduction(Options("distance_table1", work_dir=tmp_path), log=lambda m: None)
    row = rep.table.rows[0]
    d = rep.run_dir(row.dataset, row.systems[0], 1)
    assert not rep.unit_done(row.dataset.key, row.systems[0].name, 1)
    d.mkdir(parents=True)
    (d / "train.done").write_text("{}")
    assert not rep.unit_done(row.dataset.key, row.systems[0].name, 1)  # trained, not yet scored
    (d / "score.checkpoint_best.json").write_text("{}")
    assert rep.unit_done(row.dataset.key, row.systems[0].name, 1)
    valid = SimpleNamespace(**{**rep.table.__dict__, "split": "valid"})
    rep.table = valid
    assert not rep.unit_done(row.dataset.key, row.systems[0].name, 1)  # a validation table wants score.valid.*


def test_a_smoke_model_is_as_deep_as_the_layers_a_system_names():
    from syntrans.reproduce.runner import smoke_layers

    assert smoke_layers(["--distance-layers", "0", "--distance-heads", "3"]) == 2
    assert smoke_layers(["--pascal-layers", "5"]) == 6  # Table 3a's layer 6
    assert smoke_layers(["--distance-layers", "0,3", "--encoder-layers", "9"]) == 4  # the model's own size is not a layer
    assert smoke_layers(["--gate-layers", "all", "--lisa-layers", "-1"]) == 2


def test_prepared_data_keeps_the_validation_references(tmp_path):
    """ref/valid.<lang> is the validation text the binarized valid split was made from, one line per pair, so that
    validation BLEU (Bugliarello & Okazaki 2020, Tables 3 and 5) scores against the right sentences."""
    from syntrans.prep import prepare_corpus

    p = prepare_corpus("synthetic", "src", "tgt", tmp_path / "d", smoke=True, smoke_sizes={"train": 60, "valid": 7,
                                                                                            "test": 5}, log=lambda m: None)
    rep = Reproduction(Options("pascal_table3a", work_dir=tmp_path, smoke=True, synthetic=True), log=lambda m: None)
    valid = rep.references(p, "valid")
    assert valid == p.out_dir / "ref" / "valid.tgt" and rep.references(p, "test") == p.ref_test
    lines = valid.read_text(encoding="utf-8").splitlines()
    text = (p.out_dir / "text" / "valid.tgt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 7 and lines == text[:7]
    # the binarized valid split has as many sentences, in the same order (fairseq's dataset of the target side)
    from fairseq.data import Dictionary, data_utils

    d = Dictionary.load(str(p.data_bin / "dict.tgt.txt"))
    ds = data_utils.load_indexed_dataset(str(p.data_bin / "valid.src-tgt.tgt"), d)
    assert len(ds) == 7
    # ... made from the BPE text whose pieces join into the reference lines (the synthetic words need no tokenization)
    bpe = (p.out_dir / "bpe" / "valid.tgt").read_text(encoding="utf-8").splitlines()
    assert [line.replace("@@ ", "") for line in bpe] == lines


def test_the_gated_paper_scores_case_sensitively_even_on_lowercased_data(tmp_path):
    """Hou et al. (gated) §5.1: "case-sensitive 4-gram BLEU"; the prepared corpora are lowercased ("uncased")."""
    prepared = SimpleNamespace(lowercase=True)
    ds = TABLES["gated_table3"].rows[0].dataset
    rep = Reproduction(Options("gated_table3", work_dir=tmp_path), log=lambda m: None)
    assert rep.evaluation(prepared, ds) == (False, "13a") or rep.evaluation(prepared, ds)[0] is False
    nsd = Reproduction(Options("nsd_table1", work_dir=tmp_path), log=lambda m: None)
    en = next(r.dataset for r in TABLES["nsd_table1"].rows if r.dataset.tgt == "en")
    assert nsd.evaluation(SimpleNamespace(lowercase=False), en)[0] is True  # Ma et al. §4.1: case-insensitive
    smoke = Reproduction(Options("gated_table3", work_dir=tmp_path, smoke=True, synthetic=True), log=lambda m: None)
    assert smoke.evaluation(prepared, ds) == (True, None)  # a smoke run scores its lowercased stand-in as such


def test_a_smoke_run_shortens_the_gate_warm_up_but_keeps_an_ablations_zero(tmp_path):
    from syntrans.reproduce.config_file import CONFIG_DIR, read_args_file
    from syntrans.reproduce.runner import _last_value, smoke_flags

    cfg = read_args_file(CONFIG_DIR / "gated" / "iwslt14_de_en.args")  # K = 80 (the gated paper's Table 2)
    assert _last_value(smoke_flags(cfg, 30), "--gate-warmup-epochs") == "1"
    # Table 7's "BatchNorm" system drops the pre-warm-up: its K = 0 must survive the smoke flags
    flags = list(cfg.flags) + ["--gate-warmup-epochs", "0"]
    assert _last_value(flags + smoke_flags(cfg, 30, ("--gate-warmup-epochs", "0")), "--gate-warmup-epochs") == "0"


def test_summary_pairs_seed_k_with_seed_k_and_keeps_ribes(tmp_path):
    """Reproduction.summarise: BLEU and RIBES per seed in seed order, and sacreBLEU's paired bootstrap of each seed
    against the reference system's same seed (a seed the reference lacks is not tested)."""
    from syntrans.reproduce.significance import paired_bootstrap

    rep = Reproduction(Options("pascal_table1", work_dir=tmp_path, smoke=True, synthetic=True), log=lambda m: None)
    row = rep.table.rows[0]
    refs = [f"the cat number {i} sat on the mat today" for i in range(30)]
    (tmp_path / "refs.txt").write_text("\n".join(refs) + "\n")

    def result(name, seed, good):
        hyps = [r if i < good else "a dog" for i, r in enumerate(refs)]
        path = tmp_path / f"{name}.{seed}.txt"
        path.write_text("\n".join(hyps) + "\n")
        return {"bleu": float(good), "ribes": 50.0 + good, "hyps": str(path), "refs": str(tmp_path / "refs.txt")}

    prepared = SimpleNamespace(lowercase=False, tgt="de")
    base, pascal = row.systems[0].name, row.systems[2].name
    outcomes = {(row.dataset.key, base): {"results": [result("b", 1, 10), result("b", 2, 12)], "seeds": [1, 2],
                                          "prepared": prepared},
                (row.dataset.key, pascal): {"results": [result("p", 2, 28), result("p", 1, 25), result("p", 3, 29)],
                                            "seeds": [2, 1, 3], "prepared": prepared}}
    rep.summarise(outcomes)
    got = outcomes[(row.dataset.key, pascal)]
    assert got["scores"] == [28.0, 25.0, 29.0] and got["ribes"] == [78.0, 75.0, 79.0]
    read = lambda p: p.read_text().splitlines()  # noqa: E731
    expect = [paired_bootstrap(read(tmp_path / f"b.{k}.txt"), read(tmp_path / f"p.{k}.txt"), refs, "de", False)[0]
              for k in (2, 1)]
    assert got["p_values"] == expect and max(expect) < 0.01  # seed 3 has no baseline run: not tested
    assert "p_values" not in outcomes[(row.dataset.key, base)]


def test_a_synthetic_smoke_leaves_out_the_data_filters_the_stand_in_corpus_refuses(tmp_path):
    """pascal_table5's "+ data filtering" system adds the language filter (Bugliarello & Okazaki 2020, Table 5). The
    synthetic stand-in has a gold parse per line, which a filter would misalign (apply_recipe refuses it), so a
    --smoke --synthetic run leaves the filter out and says so; other data settings (+MULTI-TASK's) stay, and a smoke
    run on real text keeps the filter."""
    from syntrans.prep.corpora import CORPORA
    from syntrans.prep.recipe import Recipe, apply_recipe, refused_for

    table = TABLES["pascal_table5"]
    row = next(r for r in table.rows if any(s.name == "+ data filtering" for s in r.systems))
    filtering = next(s for s in row.systems if s.name == "+ data filtering")
    assert dict(filtering.data) == {"langid": True}
    rep = Reproduction(Options("pascal_table5", work_dir=tmp_path, smoke=True, synthetic=True), log=lambda m: None)
    assert rep.recipe(row.dataset, filtering) is None
    assert any("+ data filtering's data setting langid=True left out" in n for n in rep.notes), rep.notes
    synthetic = CORPORA["synthetic"].find_pair("src", "tgt")
    with pytest.raises(Exception, match="gold parse for every line"):  # what the runner now avoids
        apply_recipe(synthetic, Recipe(langid=True))
    settings = {"langid": True, "max_len": 50, "lowercase": True, "multitask": True, "ratio": None}
    assert refused_for(synthetic, settings) == ["langid", "max_len", "lowercase"]
    multitask = next(s for r in TABLES["pascal_table1"].rows for s in r.systems if s.name == "MULTI-TASK")
    assert rep.recipe(row.dataset, multitask) == Recipe(multitask=True)
    real = Reproduction(Options("pascal_table5", work_dir=tmp_path, smoke=True, raw_dir=tmp_path), log=lambda m: None)
    assert real.recipe(row.dataset, filtering) == Recipe(langid=True) and not real.notes


def test_a_missing_japanese_tokenizer_stops_the_run_before_any_training(tmp_path, monkeypatch):
    """pascal_table1's WAT en→ja row scores with ja-mecab (the paper's KyTea is not in sacreBLEU): without MeCab the
    plan stops with the packages to install, before a unit is trained; an English-target row plans as before."""
    import sys

    monkeypatch.setitem(sys.modules, "MeCab", None)
    rep = Reproduction(Options("pascal_table1", work_dir=tmp_path, datasets=["aspec_en_ja"]), log=lambda m: None)
    monkeypatch.setattr(rep, "prepare", lambda ds, system=None, views=None: SimpleNamespace(tgt=ds.tgt, lowercase=False))
    with pytest.raises(RunError, match=r"pascal_table1 WAT en→ja \(ASPEC\): Japanese BLEU .* pip install "
                                       r"'syntrans\[reproduce\]'"):
        rep.plan()
    rep = Reproduction(Options("pascal_table1", work_dir=tmp_path, datasets=["nc11_de_en"]), log=lambda m: None)
    monkeypatch.setattr(rep, "prepare", lambda ds, system=None, views=None: SimpleNamespace(tgt=ds.tgt, lowercase=False))
    units, _ = rep.plan()
    assert len(units) == 5 and {u[1] for u in units} == {"baseline", "LISA", "PASCAL", "MULTI-TASK", "S&H"}


def test_every_part_of_a_resumed_run_is_timed_from_its_log(tmp_path):
    from syntrans.reproduce.timing import RESUME_HEADER, earlier_parts

    def line(t):
        return f"2026-12-02 {t} | INFO | fairseq_cli.train | something"

    (tmp_path / "train.log").write_text("\n".join([line("10:00:00"), "no stamp here", line("10:20:30")]) + "\n")
    assert earlier_parts(tmp_path) == [1230.0]
    # a resumed log of the layout before headers: one part; then two parts after headers, the last killed at once
    (tmp_path / "train.resumed.log").write_text("\n".join([
        line("11:00:00"), line("11:05:00"),
        f"{RESUME_HEADER} 2026-12-02 12:00:00", line("12:00:01"), line("12:10:01"),
        f"{RESUME_HEADER} 2026-12-02 13:00:00"]) + "\n")
    assert earlier_parts(tmp_path) == [1230.0, 300.0, 600.0, 0.0]


def test_a_resumed_part_is_appended_after_its_header(tmp_path):
    import sys

    from syntrans.reproduce.run_commands import _run

    log = tmp_path / "train.resumed.log"
    _run([sys.executable, "-c", "print('first part')"], log, "first", header="== header 1")
    _run([sys.executable, "-c", "print('second part')"], log, "second", header="== header 2")
    assert log.read_text().splitlines() == ["== header 1", "first part", "== header 2", "second part"]
    _run([sys.executable, "-c", "print('new')"], log, "no header: a new log")
    assert log.read_text().splitlines() == ["new"]


def test_a_training_resumed_after_a_stop_keeps_both_logs_and_sums_their_times(tmp_path, monkeypatch):
    """The runner's training part (reproduce/run_training.py) on a run stopped once: the first part's log stays, the
    resumed part is appended after a header, and train.done's seconds are both parts' (the first from its log)."""
    from types import SimpleNamespace

    from syntrans.reproduce import run_training
    from syntrans.reproduce.config_file import ArgsFile
    from syntrans.reproduce.tables import System
    from syntrans.reproduce.timing import RESUME_HEADER

    def fake_run(cmd, log_path, what, header=""):  # the first part: a 10-minute run, killed; the second: its end
        with open(log_path, "a" if header else "w") as f:
            f.write((header + "\n" if header else "") + "2026-12-02 10:00:00 | INFO | part\n"
                    "2026-12-02 10:10:00 | INFO | part\n")
        return None

    monkeypatch.setattr(run_training, "_run", fake_run)
    part = run_training.Training()
    part.opts = SimpleNamespace(smoke=False, train_args=[])
    part.runs = SimpleNamespace(kind="paper")
    part.user_dir = "syntrans"
    part.log = lambda message: None
    cfg = ArgsFile(tmp_path / "x.args", [], [])
    run_dir = tmp_path / "run"
    part.train(SimpleNamespace(data_bin=tmp_path), cfg, System("x", "x.args", None), 1, run_dir, "x")
    first = json.loads((run_dir / "train.done").read_text())
    assert (first["parts"], first["resumed"]) == (1, False)
    (run_dir / "train.done").unlink()  # as if the first part had been killed before its end
    (run_dir / "checkpoint_last.pt").write_bytes(b"")
    part.train(SimpleNamespace(data_bin=tmp_path), cfg, System("x", "x.args", None), 1, run_dir, "x")
    done = json.loads((run_dir / "train.done").read_text())
    assert (done["parts"], done["resumed"]) == (2, True)
    assert done["seconds"] == pytest.approx(600.0 + done["last_part_seconds"], abs=0.11)
    assert (run_dir / "train.log").exists()
    assert (run_dir / "train.resumed.log").read_text().startswith(RESUME_HEADER)
