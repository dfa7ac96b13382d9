"""`make demo`'s script end to end on a tiny synthetic corpus: it shows each model's progress while the model trains
(fairseq's output goes to the log) and ends with the table of both models."""
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers import BIN

pytestmark = pytest.mark.slow  # trains, translates or installs in other processes (conftest)

ROOT = Path(__file__).resolve().parents[1]


def test_demo_shows_progress_and_ends_with_the_table(tmp_path):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "DEMO_DIR": str(tmp_path / "demo"), "DEMO_TRAIN": "200", "DEMO_UPDATES": "6", "DEMO_EVAL": "20"}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh")], capture_output=True, text=True, env=env,
                          timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout.splitlines()
    for name in ("vanilla", "distance"):
        trained = next(i for i, ln in enumerate(out) if ln.strip().startswith(f"({name} trained in"))
        started = out.index(f"== 4. fairseq-train {name}")
        progress = [ln for ln in out[started:trained] if ln.startswith(f"   [{name}] epoch ")]
        assert progress, out[started:trained]
        # the last progress line reports the last update, with the losses the log holds
        assert re.search(r"update 6/6  train loss [0-9.]+  valid loss [0-9.]+  \([0-9.]+s\)$", progress[-1]), progress
        log = (tmp_path / "demo" / f"train.{name}.log").read_text(encoding="utf-8")
        assert "done training" in log and "| train_inner |" not in "\n".join(progress)
    table = out[out.index("== 6. results") + 1:]
    assert table[0].startswith("| model | test sentences | sacreBLEU |")
    assert [row.split("|")[1].strip() for row in table[2:4]] == ["vanilla", "distance"]
    assert all(row.split("|")[2].strip() == "20" for row in table[2:4])
    demo = tmp_path / "demo"
    assert len((demo / "raw" / "train.src").read_text(encoding="utf-8").splitlines()) == 200  # DEMO_TRAIN
    # each row's numbers, computed here from the files the demo wrote: sacreBLEU of the Moses-detokenized
    # generate output, the best validation nll_loss of the training log
    import sacrebleu
    from sacremoses import MosesDetokenizer

    md = MosesDetokenizer(lang="en")
    for row in table[2:4]:
        name, _, bleu, nll = (cell.strip() for cell in row.split("|")[1:5])
        gen = (demo / f"gen.{name}.txt").read_text(encoding="utf-8")
        refs = dict(re.findall(r"^T-(\d+)\t(.*)$", gen, flags=re.M))
        hyps = {i: h for i, _, h in re.findall(r"^H-(\d+)\t(\S+)\t(.*)$", gen, flags=re.M)}
        ids = sorted(refs, key=int)
        assert len(ids) == 20 and hyps.keys() == refs.keys()
        want = sacrebleu.corpus_bleu([md.detokenize(hyps[i].split()) for i in ids],
                                     [[md.detokenize(refs[i].split()) for i in ids]]).score
        assert float(bleu) == pytest.approx(want, abs=0.0051), (name, bleu, want)
        log = (demo / f"train.{name}.log").read_text(encoding="utf-8")
        valid = [float(v) for v in re.findall(r"valid on 'valid' subset .*?\| nll_loss ([0-9.]+)", log)]
        assert valid and float(nll) == pytest.approx(min(valid), abs=5.1e-4), (name, nll, valid)
    assert re.search(r"^sacreBLEU signature: nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|version:[0-9.]+$",
                     "\n".join(table), flags=re.M), table
