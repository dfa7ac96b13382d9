"""One --smoke reproduction end to end on the synthetic corpus (CI): data preparation, two systems × two seeds of
fairseq-train, checkpoint averaging, fairseq-generate with the config's beam, sacreBLEU, results/<table>.md with the
published column and ours; then a re-run that skips every finished step."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from syntrans.reproduce.scoring import bleu

pytestmark = pytest.mark.slow  # trains, translates or installs in other processes (conftest)

BIN = Path(sys.executable).parent
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "reproduce" / "distance_table1.sh"
ARGV = ["--smoke", "--synthetic", "--datasets", "iwslt14_de_en", "--seeds", "1,2", "--smoke-updates", "24",
        "--smoke-sizes", "300,40,40", "--average-last", "2"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, single_threaded_tools):
    root = tmp_path_factory.mktemp("smoke")
    # the table's script, as a user runs it (it finds syntrans-reproduce on PATH)
    cmd = ["bash", str(SCRIPT), *ARGV, "--work-dir", str(root / "work"), "--results-dir", str(root / "results")]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=900)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    return root, cmd, env


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
    strip = lambda s: [ln for ln in s.splitlines() if "wall time" not in ln]  # noqa: E731
    assert strip(table.read_text(encoding="utf-8")) == strip(before)
