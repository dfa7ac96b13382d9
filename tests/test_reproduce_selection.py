"""What a reproduction runs: --systems and --datasets as the docs spell the names (+MULTI-TASK, +S&H), an unknown
name refused with the table's names listed, a failed system that leaves the table to the others, and the parse views
each prepared folder gets from its systems, +MULTI-TASK's from its data option (the constituency skeleton reads the
source's trees, the dependency bracketing its dependencies)."""
import json
import sys
from pathlib import Path

import pytest
from helpers import SHARED_DATA

from syntrans.cli.reproduce import main as reproduce_main
from syntrans.reproduce.runner import Options, Reproduction, RunError, _tool, failure_summary, resolve_names
from syntrans.reproduce.tables import TABLES

MULTI30K = SHARED_DATA / "multi30k"


@pytest.mark.fast
def test_names_as_the_docs_print_them_select_the_tables_systems():
    known = [s.name for r in TABLES["pascal_table1"].rows for s in r.systems]
    assert "MULTI-TASK" in known and "S&H" in known  # the table's own names carry no "+"
    assert resolve_names(["+MULTI-TASK", "+S&H", "PASCAL"], known, "--systems", "x") == ["MULTI-TASK", "S&H", "PASCAL"]
    assert resolve_names(["multi-task"], known, "--systems", "x") == ["MULTI-TASK"]
    assert resolve_names(None, known, "--systems", "x") is None
    cross = [s.name for r in TABLES["cross_paper"].rows for s in r.systems]
    assert resolve_names(["MULTI-TASK"], cross, "--systems", "x") == ["+MULTI-TASK"]


@pytest.mark.fast
def test_an_unknown_or_ambiguous_name_is_refused_listing_the_names():
    with pytest.raises(RunError) as e:
        resolve_names(["PASCAL", "NOPE"], ["baseline", "PASCAL"], "--systems", "the table's systems")
    assert "--systems NOPE" in str(e.value) and "expected some of: baseline, PASCAL" in str(e.value)
    with pytest.raises(RunError, match="ambiguous"):
        resolve_names(["+x"], ["x", "+X"], "--systems", "the table's systems")


@pytest.mark.fast
@pytest.mark.parametrize("flag,value,listed", [("--systems", "NOPE", "MULTI-TASK"),
                                               ("--datasets", "nope_en_de", "nc11_en_de")])
def test_the_command_exits_non_zero_naming_the_tables_names(tmp_path, capsys, flag, value, listed):
    code = reproduce_main(["pascal_table1", "--smoke", "--synthetic", flag, value, "--work-dir", str(tmp_path / "w"),
                           "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and f"{flag} {value}" in err and listed in err, err
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()  # refused before any work


@pytest.mark.fast
def test_systems_are_looked_up_on_the_selected_datasets_only():
    """A system of another dataset's row is not offered: the list names what the selection holds."""
    opts = Options(table="pascal_table1", smoke=True, synthetic=True, datasets=["nc11_en_de"], systems=["+S&H"])
    r = Reproduction(opts, log=lambda m: None)
    assert r.opts.systems == ["S&H"] and r.opts.datasets == ["nc11_en_de"]


@pytest.mark.fast
def test_a_failure_fits_one_table_cell():
    cell = failure_summary("\n[x] fairseq-train failed (exit 1); log a|b\n--- end of the log ---\nTraceback")
    assert cell == "FAILED: [x] fairseq-train failed (exit 1); log a\\|b"


@pytest.mark.parametrize("target,view", [("constituency", "trees"), ("dependency", "deps")])
def test_multitask_data_parses_the_view_its_target_is_written_from(tmp_path, target, view):
    """A folder whose systems read no view (the +MULTI-TASK Transformer) still gets the source view its parse
    target linearises, and only that view: the parse file holds it, the target side is not parsed."""
    from syntrans.prep import prepare_corpus
    from syntrans.prep.recipe import Recipe
    from syntrans.syntax.linearize import TARGETS
    from syntrans.syntax.parsed import read_parsed

    if not (MULTI30K / "train.en").is_file():
        pytest.skip(f"{MULTI30K} is absent (the shared real-data folder is optional)")
    assert set(TARGETS) == {"constituency", "dependency"}
    out = tmp_path / "mt"
    recipe = Recipe(multitask=True, multitask_target=target)
    p = prepare_corpus("multi30k", "en", "de", out, raw_dir=MULTI30K, smoke=True, parser="right-branching", log=lambda m: None,
                       smoke_sizes={"train": 30, "valid": 5, "test": 5}, recipe=recipe,
                       views={"source": (), "target": ()})
    assert p.views == {"en": [view], "de": []}
    again = json.loads((out / "prepared.json").read_text())["again"]["views"]
    assert again == {"source": [view], "target": []}
    first = read_parsed(str(out / "parse" / "train.en.conllu"))[0]
    assert (first.tree is not None) == (view == "trees")
    assert not (out / "parse" / "train.de.conllu").exists()
    assert (out / "multitask" / "train.en").read_text().count("<parse>") == 2 * p.sizes["train"] > 0


@pytest.mark.slow
def test_one_failed_system_leaves_the_table_to_the_others(tmp_path):
    """distance_table1 with the distance mask's config broken (a flag fairseq-train does not know): the baseline is
    trained, decoded and scored, the broken system's row says FAILED with its error's first line, the results file is
    written, and the command exits 1 naming the failed system."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from syntrans.reproduce.config_file import CONFIG_DIR

    configs = tmp_path / "configs"
    shutil.copytree(CONFIG_DIR, configs)
    broken = configs / "distance_mask" / "iwslt14_de_en.args"
    broken.write_text(broken.read_text(encoding="utf-8") + "\n--no-such-flag 1\n", encoding="utf-8")
    cmd = [str(Path(sys.executable).parent / "syntrans-reproduce"), "distance_table1", "--smoke", "--synthetic",
           "--datasets", "iwslt14_de_en", "--seeds", "1", "--smoke-updates", "3", "--smoke-sizes", "100,10,10",
           "--config-dir", str(configs), "--work-dir", str(tmp_path / "work"), "--results-dir", str(tmp_path / "results")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=900,
                          env={**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 system(s) failed" in done.stderr and "iwslt14_de_en distance-mask" in done.stderr
    assert "--no-such-flag" in done.stderr  # the full error: fairseq-train's own words at the end of its log
    md = (tmp_path / "results" / "distance_table1.md").read_text(encoding="utf-8")
    row = lambda name: next(ln for ln in md.splitlines() if ln.startswith(f"| IWSLT14 de→en | {name} |"))  # noqa: E731
    assert "not run: FAILED: [iwslt14_de_en distance-mask seed 1] fairseq-train failed (exit" in row("distance-mask")
    score = json.loads((tmp_path / "work" / "distance_table1" / "iwslt14_de_en" / "baseline" / "seed1" /
                        "score.checkpoint_best.json").read_text())
    assert f"{score['bleu']:.2f} (n=1)" in row("baseline")


def test_syntrans_bin_names_the_folder_of_the_commands_the_runner_starts(tmp_path, monkeypatch):
    """``SYNTRANS_BIN``: the runner starts that folder's fairseq-train, fairseq-generate, … and ``python`` (the
    cross-paper table's measuring wrapper); a command missing there is an error naming the variable; unset, the
    commands are this environment's and ``python`` the running one."""
    monkeypatch.delenv("SYNTRANS_BIN", raising=False)
    assert _tool("python") == sys.executable
    assert Path(_tool("fairseq-train")).parent == Path(sys.executable).parent
    stub = tmp_path / "fairseq-train"
    stub.write_text("#!/bin/sh\n")
    stub.chmod(0o755)
    monkeypatch.setenv("SYNTRANS_BIN", str(tmp_path))
    assert _tool("fairseq-train") == str(stub)
    with pytest.raises(RunError, match=rf"SYNTRANS_BIN={tmp_path}: it has no command python"):
        _tool("python")
