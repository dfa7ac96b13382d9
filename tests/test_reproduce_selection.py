"""What a reproduction runs: --systems and --datasets as the docs spell the names (+MULTI-TASK, +S&H), an unknown name
refused with the table's names listed, and the parse views each prepared folder gets from its systems, +MULTI-TASK's
from its data option (the constituency skeleton reads the source's trees, the dependency bracketing its
dependencies)."""
import json

import pytest
from helpers import SHARED_DATA

from syntrans.cli.reproduce import main as reproduce_main
from syntrans.reproduce.runner import Options, Reproduction, RunError, failure_summary, resolve_names
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
