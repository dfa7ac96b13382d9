"""Parsing what the methods need, at scale: the views a system reads (from its mechanisms), the error that names a
missing view and the one command that adds it (syntrans-parse on hand-made data, syntrans-prepare --again on a
prepared folder), shards run as jobs of submitit's local executor and merged into the one-process file, CPU worker
processes, and the sidecars' value types. No stanza model is needed (model-free parsers)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import SHARED_DATA, build_task_and_model
from hypothesis import given, settings
from hypothesis import strategies as st

from syntrans.cli import parse as parse_cli
from syntrans.cli import prepare as prepare_cli
from syntrans.cli.preprocess import main as preprocess
from syntrans.data import sidecars
from syntrans.data.sidecar_format import KIND_DTYPES
from syntrans.reproduce.config_views import views_of_config, views_of_flags

LINES = ["the cat sat on the mat .", "a dog barked", "", "one more line here", "x y z", "we parse it all",
         "in shards .", "and merge them"]


def corpus(root: Path, lines=LINES) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        for lang in ("src", "tgt"):
            (root / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("config,views", [
    ("distance_mask/iwslt14_de_en.args", ("trees",)), ("gated/iwslt14_de_en.args", ("trees",)),
    ("pascal/nc11_de_en.args", ("deps",)), ("pascal/nc11_de_en.sh.args", ("deps",)),
    ("syncattn/wmt14_en_de.args", ("deps",)), ("gated/iwslt14_de_en.lisa.args", ("deps",)),
    ("gated/iwslt14_de_en.sla.args", ("deps",)), ("dbsa/wmt14_en_de.args", ("deps",)),
    ("lisa/nc11_de_en.args", ("deps",)),
    ("pascal/nc11_de_en.baseline.args", ()), ("pascal/nc11_de_en.multitask.args", ()),
])
def test_the_views_a_config_reads_follow_from_its_mechanisms(config, views):
    assert views_of_config(config) == views


def test_the_views_follow_the_flags_not_the_method_name():
    assert views_of_flags(["--arch", "syntax_transformer"]) == ()  # no mechanism switched on
    assert views_of_flags(["--arch", "syntax_transformer", "--distance-layers", "0", "--distance-heads", "1"]) == ("trees",)
    assert views_of_flags(["--arch", "syntax_transformer", "--distance-layers", "0", "--distance-heads", "1",
                           "--lisa-layers", "1"]) == ("deps", "trees")
    base = ["--arch", "nsd_src_transformer_base"]
    assert views_of_flags(base + ["--nsd-kind", "dS"]) == ("trees",)  # NSD from the constituency tree
    assert views_of_flags(base + ["--nsd-kind", "dD"]) == ("deps",)  # NSD from the dependency tree


def hand_made_data(root: Path, views: str) -> Path:
    """Text parsed with the right-branching parser into ``views``, then syntrans-preprocess (no BPE): the data-bin."""
    text = corpus(root / "text")
    for split in ("train", "valid", "test"):
        for lang in ("src", "tgt"):
            assert parse_cli.main([str(text / f"{split}.{lang}"), "-o", str(text / f"{split}.{lang}.conllu"),
                                   "--parser", "right-branching", "--views", views]) == 0
    return text


def preprocess_argv(text: Path, dest: Path, *extra: str) -> list:
    argv = ["-s", "src", "-t", "tgt", "--joined-dictionary", "--destdir", str(dest), *extra]
    for split in ("train", "valid", "test"):
        argv += [f"--{split}pref", str(text / split), f"--{split}parse", str(text / split)]
    return argv


def test_a_missing_view_is_named_with_the_command_that_adds_it(tmp_path):
    text = hand_made_data(tmp_path, "deps")
    dest = tmp_path / "data-bin"
    assert preprocess(preprocess_argv(text, dest)) == 0
    assert not (dest / "train.src-tgt.src.dist.idx").exists() and (dest / "train.src-tgt.src.head.idx").exists()
    task, _ = build_task_and_model(dest, "distance_transformer_iwslt_de_en", "--distance-layers", "0",
                                   "--distance-heads", "1")
    with pytest.raises(FileNotFoundError) as e:
        task.load_dataset("train")
    msg = str(e.value)
    assert "constituency trees (view 'trees')" in msg and "src_gaps" in msg
    assert "syntrans-parse TEXT -o PARSE.conllu --views trees" in msg and "--sidecars-only" in msg
    # the commands it names: the view is added to each parse, then the sidecars are written again
    for split in ("train", "valid", "test"):
        for lang in ("src", "tgt"):
            assert parse_cli.main([str(text / f"{split}.{lang}"), "-o", str(text / f"{split}.{lang}.conllu"),
                                   "--parser", "right-branching", "--views", "trees"]) == 0
            done = json.loads((text / f"{split}.{lang}.conllu.done").read_text())
            assert done["views"] == ["deps", "trees"]
    assert preprocess(preprocess_argv(text, dest, "--sidecars-only")) == 0
    task, _ = build_task_and_model(dest, "distance_transformer_iwslt_de_en", "--distance-layers", "0",
                                   "--distance-heads", "1")
    task.load_dataset("train")
    assert "src_gaps" in task.dataset("train").features()


def test_sidecars_are_written_in_compact_types_and_read_back_as_written(tmp_path):
    text = hand_made_data(tmp_path, "deps,trees")
    dest = tmp_path / "data-bin"
    assert preprocess(preprocess_argv(text, dest)) == 0
    side = sidecars.load_side(str(dest), "train", "src", "tgt", "src")
    for kind, dtype in KIND_DTYPES.items():
        assert side[kind].data._index.dtype == dtype, kind
    # line 1 "the cat sat on the mat .": right-branching heads are the next word, the last word is the root
    assert side["head"][0].tolist() == [2, 3, 4, 5, 6, 7, 0] and side["head"][0].dtype == np.int64
    assert side["word"][0].tolist() == list(range(7)) and side["dist"][0].tolist() == [6, 5, 4, 3, 2, 1]
    assert len(side["head"][2]) == 0  # the empty line


def test_a_value_its_sidecar_type_cannot_hold_is_an_error_naming_the_line(tmp_path):
    with pytest.raises(ValueError, match=r"item 3 \(line 3 of the text\) holds the value 70000.*uint16"):
        sidecars.write(str(tmp_path / "x.head"), [[1], [2, 0], [70000]], dtype=np.uint16)
    assert not (tmp_path / "x.head.bin").exists() and not (tmp_path / "x.head.idx").exists()


@pytest.mark.slow
def test_shards_run_as_submitit_local_jobs_merge_into_the_one_process_file(tmp_path, capsys):
    lines = [f"line {k} with {k % 7} words more" for k in range(40)] + ["", "last ."]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    one = tmp_path / "one.conllu"
    assert parse_cli.main([str(src), "-o", str(one), "--parser", "left-branching", "--views", "trees"]) == 0
    out = tmp_path / "sharded.conllu"
    argv = [str(src), "-o", str(out), "--parser", "left-branching", "--views", "trees", "--num-shards", "3",
            "--launcher", "submitit-local", "--time-min", "5"]
    assert parse_cli.main(argv) == 0
    assert out.read_bytes() == one.read_bytes()
    err = capsys.readouterr().err
    assert err.count("submitted as job") == 3 and (tmp_path / "sharded.conllu.jobs" / "ledger.json").exists()
    assert json.loads((tmp_path / "sharded.conllu.done").read_text())["merged_from"] == 3
    # a re-run submits nothing: every shard is finished with this input and these views
    assert parse_cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "submitted" not in err and err.count("finished before") == 3
    # another view: the shards are submitted again (a new ledger label), each adds the view to its file
    assert parse_cli.main(argv[:-6] + ["--views", "deps,trees"] + argv[-6:-2] + argv[-2:]) == 0
    assert "submitted as job" in capsys.readouterr().err
    both = tmp_path / "both.conllu"
    assert parse_cli.main([str(src), "-o", str(both), "--parser", "left-branching"]) == 0
    assert out.read_bytes() == both.read_bytes()


@pytest.mark.slow
def test_worker_processes_write_the_one_process_file(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES * 5) + "\n", encoding="utf-8")
    one, two = tmp_path / "one.conllu", tmp_path / "two.conllu"
    assert parse_cli.main([str(src), "-o", str(one), "--parser", "right-branching"]) == 0
    assert parse_cli.main([str(src), "-o", str(two), "--parser", "right-branching", "--workers", "2",
                           "--batch-size", "3", "--device", "cpu"]) == 0
    assert two.read_bytes() == one.read_bytes()


MULTI30K = SHARED_DATA / "multi30k"


@pytest.mark.skipif(not (MULTI30K / "train.en").exists(), reason="the shared Multi30k folder is absent")
def test_prepare_parses_the_views_asked_and_again_adds_the_missing_one(tmp_path, capsys):
    out = tmp_path / "m30k"
    argv = ["multi30k", "--pair", "de-en", "--out", str(out), "--raw-dir", str(MULTI30K), "--smoke", "--smoke-train",
            "120", "--smoke-valid", "20", "--smoke-test", "20", "--bpe-ops", "100", "--parser", "right-branching",
            "--for-config", "pascal/nc11_de_en.args"]
    assert prepare_cli.main(argv) == 0
    log = capsys.readouterr().out
    assert "parse views for pascal/nc11_de_en.args: source deps, target none" in log  # PASCAL reads the source only
    data = out / "data-bin"
    assert (data / "train.de-en.de.head.idx").exists() and not (data / "train.de-en.de.dist.idx").exists()
    assert not list(data.glob("*.de-en.en.*.idx")) and not list((out / "parse").glob("*.en.conllu"))
    assert json.loads((out / "prepared.json").read_text())["views"] == {"de": ["deps"], "en": []}
    task, _ = build_task_and_model(data, "distance_transformer_iwslt_de_en", "--distance-layers", "0",
                                   "--distance-heads", "1")
    with pytest.raises(FileNotFoundError) as e:
        task.load_dataset("valid")
    command = f"syntrans-prepare --again {out} --views deps,trees"
    assert "view 'trees'" in str(e.value) and command in str(e.value)
    assert prepare_cli.main(command.split()[1:]) == 0
    log = capsys.readouterr().out
    assert "step tokenize: done before, skipped" in log and "step bpe: done before, skipped" in log
    assert log.count("holds deps: parsing only trees and merging it in") == 3  # the source's 3 splits
    assert log.count("views deps,trees): lines=") == 3  # the target's, parsed whole
    assert (data / "train.de-en.de.dist.idx").exists() and (data / "train.de-en.en.dist.idx").exists()
    task, _ = build_task_and_model(data, "distance_transformer_iwslt_de_en", "--distance-layers", "0",
                                   "--distance-heads", "1")
    task.load_dataset("valid")


def test_prepare_with_no_view_parses_nothing(tmp_path):
    from syntrans.prep import prepare_corpus

    logs = []
    p = prepare_corpus("multi30k", "de", "en", tmp_path / "m", raw_dir=MULTI30K, smoke=True, parser="right-branching",
                       bpe_ops=50, smoke_sizes={"train": 40, "valid": 10, "test": 10}, views=(), log=logs.append) \
        if (MULTI30K / "train.en").exists() else pytest.skip("the shared Multi30k folder is absent")
    assert p.parsers == {"de": "none", "en": "none"} and p.views == {"de": [], "en": []}
    assert not list((tmp_path / "m" / "parse").glob("*.conllu")) if (tmp_path / "m" / "parse").exists() else True
    assert not list(p.data_bin.glob("*.word.idx")) and (p.data_bin / "train.de-en.de.idx").exists()
    assert any("nothing parsed" in m for m in logs)


@pytest.mark.fast
@settings(max_examples=300, deadline=None)
@given(st.recursive(st.sampled_from(["a", "b", "-LRB-", "x"]),
                    lambda kids: st.lists(kids, min_size=1, max_size=4), max_leaves=25),
       st.sampled_from(["NP", "S", "X", "x", "-NONE-"]))
def test_the_fast_bracket_scan_gives_the_checked_scan_s_result(tree, label):
    """Every tree in the canonical form (words under preterminals), and the same trees with a bare word beside other
    children (taken by the checked path): the distances and leaf counts of both paths agree, and so do errors."""
    from syntrans.syntax.trees import scan_brackets, scan_brackets_checked

    def brackets(node, bare=False):
        if isinstance(node, str):
            return node if bare else f"(W {node})"
        return f"({label} " + " ".join(brackets(k, bare and i == 0) for i, k in enumerate(node)) + ")"

    for text in (brackets(tree), f"(ROOT {brackets(tree)})", brackets(tree, bare=True)):
        try:
            want = scan_brackets_checked(text)
        except ValueError as e:
            with pytest.raises(ValueError, match=re.escape(str(e)[:30])):
                scan_brackets(text)
            continue
        assert scan_brackets(text) == want
