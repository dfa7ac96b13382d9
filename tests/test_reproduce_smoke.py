"""One --smoke reproduction end to end on the synthetic corpus (CI): data preparation, two systems × two seeds of
fairseq-train, each a job of submitit's local executor, checkpoint averaging, fairseq-generate with the config's beam,
sacreBLEU, the paired bootstrap, results/<table>.md with the published column and ours; then a re-run in this process
(--launcher local) that skips every finished step."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers import BIN

from syntrans.reproduce.scoring import bleu

pytestmark = pytest.mark.slow  # trains, translates or installs in other processes (conftest)

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "reproduce" / "distance_table1.sh"
ARGV = ["--smoke", "--synthetic", "--datasets", "iwslt14_de_en", "--seeds", "1,2", "--smoke-updates", "24",
        "--smoke-sizes", "300,40,40", "--average-last", "2"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, single_threaded_tools):
    root = tmp_path_factory.mktemp("smoke")
    # the table's script, as a user runs it (it finds syntrans-reproduce on PATH)
    cmd = ["bash", str(SCRIPT), *ARGV, "--work-dir", str(root / "work"), "--results-dir", str(root / "results")]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    # the first run dispatches each (dataset, system, seed) as its own process through submitit's local executor
    first = subprocess.run(cmd + ["--launcher", "submitit-local"], capture_output=True, text=True, cwd=root, env=env,
                           timeout=900)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    return root, cmd, env


def test_each_run_was_its_own_job(smoke):
    """--launcher submitit-local: four jobs in the ledger, each trained in its own process (not the command's)."""
    root, _, _ = smoke
    ledger = json.loads((root / "work" / "jobs" / "ledger.json").read_text(encoding="utf-8"))
    labels = sorted(entry["label"] for entry in ledger.values())
    assert labels == [f"distance_table1/smoke/iwslt14_de_en/{s}/seed{k}" for s in ("baseline", "distance_mask")
                      for k in (1, 2)], labels
    logs = sorted((root / "work" / "jobs").rglob("*_log.out"))
    assert len(logs) >= 4 and all(log.stat().st_size > 0 for log in logs[:4])


def _row(md: str, system: str) -> list:
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| IWSLT14 de→en | {system} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_results_table_has_published_and_our_columns(smoke):
    root, _, _ = smoke
    md = (root / "results" / "distance_table1.md").read_text(encoding="utf-8")
    assert "Smoke run" in md and "sacreBLEU signature: `nrefs:1|case:mixed|eff:no|tok:13a" in md
    base, dist = _row(md, "baseline"), _row(md, "distance-mask")
    assert base[2] == "34.56" and dist[2] == "35.74" and dist[4] == "+1.18"
    for cells in (base, dist):
        assert re.fullmatch(r"\d+\.\d\d ± \d+\.\d\d \(n=2\)", cells[3]), cells
    # datasets not selected are listed, not dropped
    assert "| NC11 de→en | baseline | 26.83 | not run: not selected (--datasets) |" in md
    # the parsers: ours (the synthetic corpus' gold parses) and the paper's, with its words
    parsers = md[md.index("Parsers (ours and the paper's"):].splitlines()[1]
    assert parsers.startswith("- IWSLT14 de→en: ours: src: gold, tgt: gold") and "the paper's: Stanford CoreNLP" in parsers
    assert "§4.1" in parsers
    # every label of the data record reaches the reader: the selected dataset's Deviations, e.g. Hou et al.'s
    # "randomly select 5%" validation split, which ours replaces by every 23rd pair
    from syntrans.reproduce.published_data import SETTINGS, data_settings

    block = md[md.index("## Deviations"):]
    record = data_settings("distance_table1", "iwslt14_de_en")
    assert "This is a smoke run" in block and all(record.source(name) in block for name in SETTINGS)
    assert "- IWSLT14 de→en, IWSLT14 en→de" not in block  # only the dataset run (--datasets)
    assert "`valid_split` = every 23rd pair" in block and "randomly select 5%" in block


def test_scores_are_sacrebleu_of_the_written_hypotheses(smoke):
    """Each run's BLEU equals sacreBLEU recomputed from its detokenized hypotheses and the prepared reference, and the
    table's mean is the mean of the two seeds."""
    root, _, _ = smoke
    runs = sorted((root / "work" / "distance_table1" / "iwslt14_de_en").glob("*/seed*"))
    assert [p.parent.name + "/" + p.name for p in runs] == ["baseline/seed1", "baseline/seed2", "distance_mask/seed1",
                                                          "distance_mask/seed2"]
    ref = next((root / "work" / "data").glob("synthetic.src-tgt.smoke")) / "ref" / "test.tgt"
    refs = ref.read_text(encoding="utf-8").splitlines()
    assert len(refs) == 40
    means = {}
    for run in runs:
        score = json.loads((run / "score.checkpoint_avg_last2.json").read_text())
        hyps = (run / "hyp.checkpoint_avg_last2.detok.txt").read_text(encoding="utf-8").splitlines()
        assert len(hyps) == 40
        assert score["bleu"] == pytest.approx(bleu(hyps, refs, "tgt", lowercase=False)[0])
        means.setdefault(run.parent.name, []).append(score["bleu"])
    md = (root / "results" / "distance_table1.md").read_text(encoding="utf-8")
    assert _row(md, "baseline")[3].startswith(f"{sum(means['baseline']) / 2:.2f} ± ")


def test_each_system_trained_with_its_config_and_the_smoke_size(smoke):
    root, _, _ = smoke
    runs = root / "work" / "distance_table1" / "iwslt14_de_en"
    base = json.loads((runs / "baseline" / "seed1" / "train.done").read_text())["command"]
    dist = json.loads((runs / "distance_mask" / "seed2" / "train.done").read_text())["command"]
    assert base[base.index("--arch") + 1] == "transformer_iwslt_de_en" and "--distance-heads" not in base
    assert dist[dist.index("--arch") + 1] == "distance_transformer_iwslt_de_en"
    assert dist[dist.index("--distance-heads") + 1] == "4" and dist[dist.index("--seed") + 1] == "2"
    assert dist[len(dist) - 1 - dist[::-1].index("--max-update") + 1] == "24"  # the smoke length wins over the config's
    # the averaged checkpoint was decoded with the config's "# decode:" flags
    gen_log = (runs / "distance_mask" / "seed1" / "generate.log").read_text()
    assert "'beam': 5" in gen_log and "'lenpen': 1.0" in gen_log and "checkpoint_avg_last2.pt" in gen_log


def test_rerun_skips_every_finished_step(smoke):
    root, cmd, env = smoke
    table = root / "results" / "distance_table1.md"
    before = table.read_text(encoding="utf-8")
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    out = again.stdout
    assert out.count("training finished before: skipped") == 4
    assert out.count("decoded and scored before: skipped") == 4
    assert "fairseq-train" not in out.replace("training finished before", "")
    # the first run's command line had --launcher submitit-local
    strip = lambda s: [ln for ln in s.splitlines() if "wall time" not in ln and not ln.startswith("- command:")]  # noqa: E731
    assert strip(table.read_text(encoding="utf-8")) == strip(before)


def test_significance_is_sacrebleus_paired_bootstrap_of_the_written_outputs(smoke):
    """The marker's p is the largest over the seed pairs of sacreBLEU's paired test run here on the same files."""
    from syntrans.reproduce.significance import paired_bootstrap

    root, _, _ = smoke
    runs = root / "work" / "distance_table1" / "iwslt14_de_en"
    ref = next((root / "work" / "data").glob("synthetic.src-tgt.smoke")) / "ref" / "test.tgt"
    refs = ref.read_text(encoding="utf-8").splitlines()
    read = lambda p: p.read_text(encoding="utf-8").splitlines()  # noqa: E731
    ps = [paired_bootstrap(read(runs / "baseline" / f"seed{k}" / "hyp.checkpoint_avg_last2.detok.txt"),
                           read(runs / "distance_mask" / f"seed{k}" / "hyp.checkpoint_avg_last2.detok.txt"),
                           refs, "tgt", lowercase=False)[0] for k in (1, 2)]
    md = (root / "results" / "distance_table1.md").read_text(encoding="utf-8")
    cell = _row(md, "distance-mask")[6]
    assert f"{max(ps):.2g}" in cell and ("n.s." in cell or "†" in cell or "‡" in cell), (cell, ps)
    assert "level p < 0.01" in md or "p < 0.01" in md  # Hou et al. 2022 §4.2


def test_a_training_time_table_reads_the_runs_of_its_table(smoke):
    """distance_table4 trains nothing: it reads distance_table1's logs (updates, train_wall, size) and names the device."""
    root, cmd, env = smoke
    time_cmd = [c if c != str(SCRIPT) else str(SCRIPT.with_name("distance_table4.sh")) for c in cmd]
    done = subprocess.run(time_cmd, capture_output=True, text=True, cwd=root, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "] fairseq-train" not in done.stdout and done.stdout.count("training finished before: skipped") == 4
    md = (root / "results" / "distance_table4.md").read_text(encoding="utf-8")
    cells = _row(md, "distance-mask")
    log = (root / "work" / "distance_table1" / "iwslt14_de_en" / "distance_mask" / "seed1" / "train.log").read_text()
    params = re.search(r"num\. shared model params: ([\d,]+)", log).group(1)
    assert cells[2] == "80" and cells[6] == "24, 24" and cells[7] == f"— / {params}" and "CPU" in cells[8], cells
    seconds = [json.loads((root / "work" / "distance_table1" / "iwslt14_de_en" / "distance_mask" / f"seed{k}" /
                           "train.done").read_text())["seconds"] / 60 for k in (1, 2)]
    assert cells[3].startswith(f"{sum(seconds) / 2:.2f} ± "), (cells[3], seconds)


def test_a_validation_table_decodes_the_validation_set_with_a_deep_enough_smoke_model(tmp_path, single_threaded_tools):
    """pascal_table3a (Bugliarello & Okazaki 2020, Table 3a): validation BLEU; its layer-6 system needs 6 layers."""
    script = SCRIPT.with_name("pascal_table3a.sh")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = ["bash", str(script), "--smoke", "--synthetic", "--datasets", "nc11_en_de", "--systems", "layer 1,layer 6",
           "--seeds", "1", "--smoke-updates", "12", "--smoke-sizes", "200,30,20", "--work-dir", str(tmp_path / "work"),
           "--results-dir", str(tmp_path / "results")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / "work" / "pascal_table3a" / "nc11_en_de" / "layer_6" / "seed1"
    command = json.loads((run / "train.done").read_text())["command"]
    assert command[len(command) - 1 - command[::-1].index("--encoder-layers") + 1] == "6"
    assert command[len(command) - 1 - command[::-1].index("--pascal-layers") + 1] == "5"  # the system's flag wins
    score = json.loads((run / "score.valid.checkpoint_best.json").read_text())
    refs = Path(score["refs"]).read_text(encoding="utf-8").splitlines()
    assert Path(score["refs"]).name == "valid.tgt" and len(refs) == 30
    hyps = (run / "hyp.valid.checkpoint_best.detok.txt").read_text(encoding="utf-8").splitlines()
    assert score["bleu"] == pytest.approx(bleu(hyps, refs, "tgt", lowercase=False)[0])
    md = (tmp_path / "results" / "pascal_table3a.md").read_text(encoding="utf-8")
    assert "Decoded (valid set)" in md


def test_en_ja_smoke_results_show_ribes_and_significance_from_the_libraries(tmp_path, single_threaded_tools):
    """pascal_table1's WAT en→ja row (Bugliarello & Okazaki 2020, Table 1, the only row with RIBES) as a smoke run:
    the results file's RIBES cells are nltk's corpus_ribes of the written hypotheses on sacreBLEU's 13a tokens, its
    significance cell the largest p of sacreBLEU's PairedTest run here per seed pair, with the published 83.46 and
    85.21 RIBES beside ours."""
    import statistics

    from nltk.translate.ribes_score import corpus_ribes
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    script = SCRIPT.with_name("pascal_table1.sh")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = ["bash", str(script), "--smoke", "--synthetic", "--datasets", "aspec_en_ja", "--systems", "baseline,PASCAL",
           "--seeds", "1,2", "--smoke-updates", "120", "--smoke-sizes", "300,40,40", "--work-dir",
           str(tmp_path / "work"), "--results-dir", str(tmp_path / "results")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    md = (tmp_path / "results" / "pascal_table1.md").read_text(encoding="utf-8")
    header = next(ln for ln in md.splitlines() if ln.startswith("| dataset |"))
    assert header.rstrip(" |").endswith("published RIBES | ours (RIBES, mean ± sd)")
    rows = {s: [c.strip() for c in next(ln for ln in md.splitlines()
                                        if ln.startswith(f"| WAT en→ja (ASPEC) | {s} |")).strip("|").split("|")]
            for s in ("baseline", "PASCAL")}
    runs = tmp_path / "work" / "pascal_table1" / "aspec_en_ja"
    tok = Tokenizer13a()
    hyps, refs = {}, None
    for system, folder in (("baseline", "baseline"), ("PASCAL", "pascal")):
        hyps[system], scores = [], []
        for k in (1, 2):
            score = json.loads((runs / folder / f"seed{k}" / "score.checkpoint_best.json").read_text())
            refs = Path(score["refs"]).read_text(encoding="utf-8").splitlines()
            hyp = Path(tmp_path / score["hyps"]).read_text(encoding="utf-8").splitlines()
            hyps[system].append(hyp)
            scores.append(100 * corpus_ribes([[tok(r).split()] for r in refs], [tok(h).split() for h in hyp]))
        assert 0 < min(scores)  # not a vacuous 0 = 0
        cells = rows[system]
        assert cells[-1] == f"{statistics.fmean(scores):.2f} ± {statistics.stdev(scores):.2f} (n=2)", (cells, scores)
        assert cells[-2] == {"baseline": "83.46", "PASCAL": "85.21"}[system]  # the paper's Table 1, En-Ja [R]
    ps, higher = [], []
    for k in range(2):
        before = os.environ.get("SACREBLEU_SEED")
        os.environ["SACREBLEU_SEED"] = "12345"  # the seed our results file names
        try:
            _, res = PairedTest([("b", hyps["baseline"][k]), ("s", hyps["PASCAL"][k])], {"BLEU": BLEU()}, [refs],
                                test_type="bs", n_samples=1000)()
        finally:
            os.environ.pop("SACREBLEU_SEED") if before is None else os.environ.__setitem__("SACREBLEU_SEED", before)
        base, system = res["BLEU"]
        ps.append(1.0 if base.score == system.score else system.p_value)
        higher.append(system.score > base.score)
    cell = rows["PASCAL"][6]
    assert f"{max(ps):.2g})" in cell, (cell, ps)
    # the caption's level p < 0.01; † / ‡ only when every seed pair is significant in the same direction
    expect = "n.s." if max(ps) >= 0.01 else "†" if all(higher) else "‡" if not any(higher) else "mixed"
    assert cell.startswith(expect), (cell, ps, higher)
    assert rows["baseline"][6] == "" and "seed:12345" in md and "Table 1 caption" in md
