"""Bad input as a hostile user gives it (issue 36's probes): each is refused with an error that names the file, the line
or sentence, what was expected and what was found, or is counted, reported and given a documented fallback; nothing
is lost, and no half-built data-bin is left behind.

The probes run the commands in this process (syntrans-preprocess, syntrans-average-checkpoints, syntrans-translate,
the model's build as fairseq-train runs it); the few that need another process are marked slow. Probe 1 (a parse
shard reused after its input changed) is left to the parse shards' own checks and tests."""
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SMALL, build_task_and_model, tiny_train_argv

from syntrans.cli.preprocess import main as preprocess_main
from syntrans.data.sidecars import Sidecar, sidecar_prefix
from syntrans.syntax.deprels import label_ids
from syntrans.syntax.tree_checks import chain_heads

FIXTURE = Path(__file__).parent / "fixtures" / "typed_config" / "checkpoint.pt"  # a model of every mechanism


# --------------------------------------------------------------------------- a two-line corpus


def row(i, word, head):
    rel = "root" if head == "0" else "dep"
    return f"{i}\t{word}\t_\t_\t_\t_\t{head}\t{rel}\t_\t_\n"


GOOD_LINE1 = "# line = 1\n" + row(1, "the", "2") + row(2, "cat", "0") + "\n"

#: fault → (rows of line 2 "a b c", the fault as the error names it); line 1 is a tree
TREE_FAULTS = {
    "cycle": ([("1", "a", "0"), ("2", "b", "3"), ("3", "c", "2")],
              "the heads run into a cycle: word 2 ('b') → word 3 ('c') → word 2 ('b')"),
    "self-head": ([("1", "a", "0"), ("2", "b", "2"), ("3", "c", "1")], "word 2 ('b') is its own head"),
    "two-roots": ([("1", "a", "0"), ("2", "b", "0"), ("3", "c", "2")],
                  "2 words have head 0 (words 1, 2): a tree has exactly one root"),
}


def write_corpus(root: Path, src_lines, parse: str, ext: str = "conllu", tgt_lines=None, name: str = "train"):
    """``{name}.src`` (BPE text), ``{name}.tgt`` and the source parse ``parse_{name}.src.{ext}``; (text, parse) paths."""
    root.mkdir(parents=True, exist_ok=True)
    text = root / f"{name}.src"
    text.write_text("".join(x + "\n" for x in src_lines), encoding="utf-8")
    (root / f"{name}.tgt").write_text("".join(x + "\n" for x in (tgt_lines or ["x y"] * len(src_lines))), encoding="utf-8")
    pfile = root / f"parse_{name}.src.{ext}"
    pfile.write_text(parse, encoding="utf-8")
    return text, pfile


def preprocess_argv(root: Path, dest: Path, name: str = "train", *extra):
    return ["-s", "src", "-t", "tgt", "--trainpref", str(root / name), "--trainparse", str(root / f"parse_{name}"),
            "--destdir", str(dest), "--workers", "1", *map(str, extra)]


def items(prefix: str):
    sc = Sidecar(prefix)
    return [sc[i].tolist() for i in range(len(sc))]


# --------------------------------------------------------------------------- 2. malformed dependency trees


def faulty(root: Path, fault: str):
    rows, message = TREE_FAULTS[fault]
    parse = GOOD_LINE1 + "# line = 2\n" + "".join(row(*r) for r in rows) + "\n"
    text, pfile = write_corpus(root, ["the c@@ at", "a b c"], parse)
    return text, pfile, message


@pytest.mark.parametrize("fault", sorted(TREE_FAULTS))
def test_a_malformed_tree_under_strict_is_an_error_and_leaves_no_data_bin(tmp_path, capsys, fault):
    text, pfile, message = faulty(tmp_path, fault)
    dest = tmp_path / "bin"
    assert preprocess_main(preprocess_argv(tmp_path, dest, "train", "--strict")) == 2
    err = capsys.readouterr().err
    assert f"{pfile}, sentence 2 (line 2 of {text}): the dependency heads are no tree: {message}; --strict refuses it" in err
    assert not dest.exists()  # fairseq's binarization never ran: the parses are checked first


@pytest.mark.parametrize("fault", sorted(TREE_FAULTS))
def test_a_malformed_tree_is_counted_reported_and_given_the_chain_fallback(tmp_path, capsys, fault):
    text, pfile, message = faulty(tmp_path, fault)
    dest = tmp_path / "bin"
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 0
    out = capsys.readouterr().out
    assert "dependency heads that are no tree 1 (lines 2) (the chain fallback is used" in out
    assert f"first: {pfile}, sentence 2 (line 2 of {text}): {message})" in out
    prefix = sidecar_prefix(str(dest), "train", "src", "tgt", "src", "head")
    assert items(prefix) == [[2, 0], chain_heads(3)] == [[2, 0], [2, 3, 0]]  # line 1 as parsed; line 2: a → b → c
    labels = items(sidecar_prefix(str(dest), "train", "src", "tgt", "src", "label"))
    assert labels == [label_ids(["dep", "root"]), label_ids(["dep", "dep", "root"])]  # the fallback's relations


# the parse's lines: 1 '# line = 1', 2-3 line 1's rows, 4 blank, 5 '# line = 2', 6-8 the rows of a, b, c
@pytest.mark.parametrize("ids, bad_row, message", [
    (["1", "x", "3"], 7, "word ID 'x' is not a positive integer"),
    (["1", "2", "2"], 8, "word ID 2 appears twice (rows 2 and 3 of the sentence)"),
])
@pytest.mark.parametrize("strict", [False, True])
def test_bad_word_ids_are_errors_naming_the_row(tmp_path, capsys, ids, bad_row, message, strict):
    parse = GOOD_LINE1 + "# line = 2\n" + "".join(row(i, w, h) for i, w, h in zip(ids, "abc", ["0", "1", "1"])) + "\n"
    text, pfile = write_corpus(tmp_path, ["the c@@ at", "a b c"], parse)
    dest = tmp_path / "bin"
    assert preprocess_main(preprocess_argv(tmp_path, dest, "train", *(["--strict"] if strict else []))) == 2
    assert f"{pfile}, sentence 2, line {bad_row}: {message}" in capsys.readouterr().err
    assert not dest.exists()


def test_a_cycle_in_a_head_sidecar_of_an_earlier_version_names_the_file(tiny_data, tmp_path):
    """Data binarized before the trees were checked may hold a cycle: NSD (dD) reads the training heads when the model
    is built, and the error names the sidecar and the sentence."""
    data = tmp_path / "data-bin"
    shutil.copytree(tiny_data, data)
    prefix = sidecar_prefix(str(data), "train", "src", "tgt", "src", "head")
    heads = items(prefix)
    heads[4] = [2, 1] + heads[4][2:]  # words 1 and 2 head each other
    from syntrans.data import sidecars
    sidecars.write(prefix, heads)
    with pytest.raises(ValueError) as e:
        build_task_and_model(data, "nsd_transformer_base", "--nsd-kind", "dD", "--nsd-embed-dim", "8")
    assert str(e.value).startswith(f"{prefix}: sentence 4 (line 5 of the text): the heads of word 0 (0-based) run into "
                                   "a cycle")


def test_translate_gives_heads_that_are_no_tree_the_chain_fallback(tmp_path, capsys):
    """syntrans-translate --parse FILE: as syntrans-preprocess without --strict, reported."""
    from syntrans.cli.translate import read_parse_file

    rows, message = TREE_FAULTS["cycle"]
    pfile = tmp_path / "in.conllu"
    pfile.write_text(GOOD_LINE1 + "# line = 2\n" + "".join(row(*r) for r in rows) + "\n", encoding="utf-8")
    by_line = read_parse_file(str(pfile))
    assert [s.heads for s in by_line[1]] == [[2, 0]] and [s.heads for s in by_line[2]] == [[2, 3, 0]]
    assert by_line[2][0].deprels is None  # read as root/dep, as the fallback writes them
    err = capsys.readouterr().err
    assert f"{pfile}, sentence 2 (line 2 of the input): the dependency heads are no tree: {message}; the chain " \
           "fallback is used" in err


# --------------------------------------------------------------------------- 3. options that change the method


@pytest.mark.parametrize("arch, flags, message", [
    ("distance_transformer_iwslt_de_en", ["--distance-tau", "-5"], r"--distance-tau .*must be > 0.* found -5"),
    ("distance_transformer_iwslt_de_en", ["--distance-tau", "0"], r"--distance-tau .*must be > 0.* found 0"),
    ("lisa_transformer_iwslt_de_en", ["--lisa-weight", "-5"], r"--lisa-weight .*found -5"),
    ("dbsa_transformer_wmt_en_de", ["--dbsa-weight", "-1"], r"--dbsa-weight .*found -1"),
    ("nsd_transformer_base", ["--nsd-ce-weight", "-3"], r"--nsd-ce-weight .*must be >= 0.*found -3"),
    ("gated_distance_transformer_iwslt_de_en", ["--gate-hidden", "0"], r"--gate-hidden .*integer >= 1.*found 0"),
    ("gated_distance_transformer_iwslt_de_en", ["--gate-warmup-epochs", "-1"], r"--gate-warmup-epochs .*>= 0.*found -1"),
    ("distance_transformer_iwslt_de_en", ["--distance-layers", "0,0"], r"--distance-layers: layer 0 is named twice"),
])
def test_option_out_of_range_is_refused_when_the_model_is_built(tiny_data, arch, flags, message):
    with pytest.raises(ValueError, match=message):
        build_task_and_model(tiny_data, arch, *flags)


@pytest.mark.slow
def test_fairseq_train_refuses_tau_zero_before_training(tiny_data, tmp_path):
    """--distance-tau 0 once gave NaN and a bare StopIteration from fairseq's NaN detector."""
    import subprocess

    from helpers import BIN

    save = tmp_path / "ckpt"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    p = subprocess.run([str(BIN / "fairseq-train"), *map(str, tiny_train_argv(
        tiny_data, save, "--arch", "distance_transformer_iwslt_de_en", "--distance-tau", "0", "--max-update", "2"))],
        capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode != 0
    assert re.search(r"ValueError: --distance-tau .*must be > 0.* found 0", p.stderr), p.stderr[-2000:]
    assert "StopIteration" not in p.stderr and not list(save.glob("*.pt"))


# --------------------------------------------------------------------------- 4. unknown override keys


def test_translate_refuses_a_misspelt_override_naming_the_nearest_field(tiny_data, tmp_path, capsys):
    from syntrans.cli.translate import main

    out = tmp_path / "out.txt"
    (tmp_path / "in.txt").write_text("gen go beso .\n", encoding="utf-8")
    status = main(["--checkpoint", str(FIXTURE), "--data", str(tiny_data), "--bpe-codes", str(tiny_data.parent / "bpe.codes"),
                   "--parser", "right-branching", "--input", str(tmp_path / "in.txt"), "--output", str(out),
                   "--model-overrides", "{'lisa': {'gold_parent': True}}"])
    assert status == 2
    err = capsys.readouterr().err
    assert "group 'lisa' has no field 'gold_parent'; did you mean 'gold_parents'" in err
    assert not out.exists()  # refused before anything is read or written


# --------------------------------------------------------------------------- 5. averaging across methods


def build_checkpoint(data: Path, path: Path, *flags: str) -> str:
    """A checkpoint as fairseq-train writes one (the trainer's cfg container), of a model built as fairseq-train
    builds it."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from helpers import USER_DIR
    from omegaconf import OmegaConf

    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data), "--user-dir", USER_DIR, "--task", "syntax_translation", *SMALL, *flags])
    cfg = convert_namespace_to_omegaconf(args)
    model = tasks.setup_task(cfg.task).build_model(cfg.model)
    torch.save({"model": model.state_dict(), "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
                "extra_state": {}}, path)
    return str(path)


def test_averaging_refuses_checkpoints_of_different_methods(tiny_data, tmp_path, capsys):
    """4 distance-mask heads and 2 distance + 2 PASCAL heads: the same parameters (neither method has its own), not
    the same model."""
    from syntrans.cli.average_checkpoints import main

    four = build_checkpoint(tiny_data, tmp_path / "four.pt", "--arch", "distance_transformer_iwslt_de_en")
    mixed = build_checkpoint(tiny_data, tmp_path / "mixed.pt", "--arch", "distance_transformer_iwslt_de_en",
                             "--distance-heads", "2", "--pascal-layers", "0", "--pascal-heads", "2")
    a, b = torch.load(four, weights_only=True)["model"], torch.load(mixed, weights_only=True)["model"]
    assert a.keys() == b.keys() and all(a[k].shape == b[k].shape for k in a)  # what made them averageable
    out = tmp_path / "avg.pt"
    assert main(["--inputs", four, mixed, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{mixed}: its model config differs from {four}'s at distance.heads (2 here, 4 there)" in err
    assert "--allow-different-config" in err and not out.exists()
    # another run of the same model (other seed, other training options) is averaged
    again = build_checkpoint(tiny_data, tmp_path / "again.pt", "--arch", "distance_transformer_iwslt_de_en", "--seed", "7",
                             "--lr", "0.1", "--max-update", "9")
    assert main(["--inputs", four, again, "--output", str(out)]) == 0 and out.exists()
    out.unlink()
    assert main(["--inputs", four, mixed, "--output", str(out), "--allow-different-config"]) == 0
    averaged = torch.load(out, weights_only=True)
    assert torch.equal(averaged["model"]["encoder.embed_tokens.weight"],
                       (a["encoder.embed_tokens.weight"] + b["encoder.embed_tokens.weight"]) / 2)
    assert averaged["cfg"]["model"].distance_heads == 2  # the last checkpoint's config


# --------------------------------------------------------------------------- 6. crashes that named no file


@pytest.mark.parametrize("cut", ["bin", "idx"])
def test_a_truncated_sidecar_names_the_file(tiny_data, tmp_path, cut):
    data = tmp_path / "data-bin"
    shutil.copytree(tiny_data, data)
    prefix = sidecar_prefix(str(data), "valid", "src", "tgt", "src", "dist")
    path = Path(f"{prefix}.{cut}")
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(100 if cut == "bin" else 30)
    task, _ = build_task_and_model(data, "distance_transformer_iwslt_de_en")
    with pytest.raises(ValueError) as e:
        task.load_dataset("valid")
    if cut == "bin":
        assert str(e.value).startswith(f"{path}: 100 bytes, but its index {prefix}.idx describes 40 items of {size} bytes: "
                                       "the file is truncated")
    else:
        assert str(e.value).startswith(f"{path}: 30 bytes, but an index of 40 items has {size}: the file is truncated")


def test_a_sidecar_of_empty_items_loads(tmp_path):
    """A split whose lines have one word each has an empty dist.bin (0 bytes), which cannot be memory-mapped."""
    from syntrans.data import sidecars

    prefix = str(tmp_path / "x.dist")
    sidecars.write(prefix, [[], [], []])
    assert os.path.getsize(f"{prefix}.bin") == 0
    sc = Sidecar(prefix)
    assert len(sc) == 3 and sc.sizes.tolist() == [0, 0, 0] and sc[2].tolist() == [] and sc[2].dtype == np.int64
    with pytest.raises(IndexError):
        sc[3]


def clean_corpus(root: Path):
    return write_corpus(root, ["the c@@ at", "a b c"],
                        GOOD_LINE1 + "# line = 2\n" + row(1, "a", "0") + row(2, "b", "1") + row(3, "c", "1") + "\n")


@pytest.mark.parametrize("where", ["text", "parse"])
@pytest.mark.parametrize("dest_exists", [False, True])
def test_a_byte_that_is_not_utf8_names_file_and_line_and_leaves_no_data_bin(tmp_path, capsys, where, dest_exists):
    text, pfile = clean_corpus(tmp_path)
    path = text if where == "text" else pfile
    lines = path.read_bytes().split(b"\n")
    k = 1 if where == "text" else 5  # line 2 of the text ("a b c"), the row "1 a" of the parse
    lines[k] = lines[k].replace(b"a", b"\xe9", 1)
    path.write_bytes(b"\n".join(lines))
    dest = tmp_path / "bin"
    if dest_exists:
        dest.mkdir()
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 2
    err = capsys.readouterr().err
    what = "text of --trainpref" if where == "text" else "a parsed corpus"
    assert f"{path} ({what}), line {k + 1}: not UTF-8 text (byte 0xe9 at byte offset" in err, err
    assert os.listdir(dest) == [] if dest_exists else not dest.exists()  # nothing binarized, nothing staged


def test_a_folder_the_command_created_is_removed_when_fairseq_stops(tmp_path, capsys):
    """The inputs pass; fairseq's binarization then stops (a dictionary that does not exist): no half-built data-bin."""
    clean_corpus(tmp_path)
    dest = tmp_path / "new" / "bin"
    assert preprocess_main(preprocess_argv(tmp_path, dest, "train", "--srcdict", tmp_path / "no-dict.txt")) == 2
    assert "no-dict.txt" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_fairseq_binarizes_in_a_process_of_its_own_while_the_sidecars_are_built(tmp_path, capsys, monkeypatch):
    """The sidecars wait for a file that fairseq's phase writes when it starts: run one after the other, the command
    would wait forever (the wait gives up after 60 s and fails the test). Both outputs end up in --destdir, the
    staging folders do not."""
    import time

    import syntrans.data.binarization as pre

    clean_corpus(tmp_path)
    started = tmp_path / "binarizing.pid"
    real_binarize, real_sidecars = pre.fairseq_binarize, pre.build_sidecars

    def binarize(args):
        started.write_text(str(os.getpid()))
        real_binarize(args)

    def sidecars(*a, **kw):
        for _ in range(600):
            if started.exists():
                return real_sidecars(*a, **kw)
            time.sleep(0.1)
        raise AssertionError("fairseq's binarization did not start while the sidecars were built")

    monkeypatch.setattr(pre, "fairseq_binarize", binarize)
    monkeypatch.setattr(pre, "build_sidecars", sidecars)
    dest = tmp_path / "bin"
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 0, capsys.readouterr().err
    assert int(started.read_text()) != os.getpid()
    names = set(os.listdir(dest))
    assert {"dict.src.txt", "train.src-tgt.src.bin", "train.src-tgt.src.head.bin"} <= names, names
    assert not [n for n in names if n.startswith(".")], names


def test_an_existing_dictionary_is_refused_before_anything_is_written(tmp_path, capsys):
    clean_corpus(tmp_path)
    dest = tmp_path / "bin"
    dest.mkdir()
    (dest / "dict.src.txt").write_text("a 1\n", encoding="utf-8")
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 2
    err = capsys.readouterr().err
    assert f"{dest / 'dict.src.txt'} exists" in err and "--srcdict" in err and "--sidecars-only" in err, err
    assert os.listdir(dest) == ["dict.src.txt"]


def test_a_binarization_process_that_dies_is_named_and_leaves_no_data_bin(tmp_path, capsys, monkeypatch):
    import syntrans.data.binarization as pre

    clean_corpus(tmp_path)
    monkeypatch.setattr(pre, "fairseq_binarize", lambda args: os._exit(9))
    dest = tmp_path / "new" / "bin"
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 2
    assert "fairseq's binarization stopped (exit code 9) before it ended" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_a_truncated_checkpoint_names_itself_and_the_checkpoints_beside_it(tmp_path):
    """The task's look at the checkpoint fairseq-train resumes from names a file cut short and the checkpoints beside
    it; fairseq's own loader is left as it is (not wrapped when syntrans registers): it raises torch's error, of
    torch's own type."""
    import pickle

    from fairseq import checkpoint_utils

    import syntrans  # noqa: F401  (registers the plugin)
    from syntrans.checkpoints.load_errors import CheckpointReadError
    from syntrans.tasks.checkpoint_match import _stored_embedding_rows

    state = {"model": {"w": torch.zeros(100)}, "cfg": None, "args": None}
    for name in ("checkpoint_1_10.pt", "checkpoint_last.pt"):
        torch.save(state, tmp_path / name)
    os.utime(tmp_path / "checkpoint_1_10.pt", (1, 1))  # older
    torch.save(state, tmp_path / "checkpoint_best.pt")
    last = tmp_path / "checkpoint_last.pt"
    last.write_bytes(last.read_bytes()[:300])
    with pytest.raises((RuntimeError, EOFError, pickle.UnpicklingError)) as raw:
        checkpoint_utils.load_checkpoint_to_cpu(str(last))
    assert not isinstance(raw.value, CheckpointReadError) and str(last) not in str(raw.value)
    assert not hasattr(checkpoint_utils.load_checkpoint_to_cpu, "__wrapped__")
    with pytest.raises(CheckpointReadError) as e:
        _stored_embedding_rows(str(last))
    msg = str(e.value)
    assert msg.startswith(f"{last}: cannot load this checkpoint: the file (300 bytes) is cut short or corrupt")
    assert (f"other checkpoints in its folder, newest first: {tmp_path / 'checkpoint_best.pt'}, "
            f"{tmp_path / 'checkpoint_1_10.pt'}. To resume from one, pass --restore-file {tmp_path / 'checkpoint_best.pt'}"
            in msg)


@pytest.mark.slow
def test_a_resume_from_a_truncated_checkpoint_last_names_it(tiny_data, tmp_path):
    """fairseq-train resuming from a checkpoint_last.pt cut short (a run killed while writing it)."""
    import subprocess

    from helpers import BIN

    save = tmp_path / "ckpt"
    save.mkdir()
    shutil.copy(FIXTURE, save / "checkpoint_1_2.pt")  # an earlier checkpoint beside it
    last = save / "checkpoint_last.pt"
    last.write_bytes(FIXTURE.read_bytes()[:1000])
    p = subprocess.run([str(BIN / "fairseq-train"), *map(str, tiny_train_argv(tiny_data, save, "--arch", "transformer",
                                                                               "--max-update", "4"))],
                       capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=300)
    assert p.returncode != 0
    assert f"{last}: cannot load this checkpoint: the file (1000 bytes) is cut short or corrupt" in p.stderr, p.stderr[-3000:]
    assert (f"other checkpoints in its folder, newest first: {save / 'checkpoint_1_2.pt'}. To resume from one, pass "
            f"--restore-file {save / 'checkpoint_1_2.pt'}") in p.stderr


# --------------------------------------------------------------------------- 7. PTB errors at the faulty line


@pytest.mark.parametrize("ptb, line, what", [
    # an extra ')' on line 5 (stanza's reader named line 4, where that tree starts)
    ("(S (X a))\n(S (X b))\n(S (X c))\n(S (X d))\n(S (X e)))\n", 5, "a ')' that closes no bracket"),
    # two trees on line 2: read as lines 2 and 3 they shifted every later tree by one line
    ("(S (X a))\n(S (X b)) (S (X c))\n(S (X d))\n(S (X e))\n", 2, "tree 3 starts on the line where tree 2 ends"),
])
def test_ptb_errors_name_the_faulty_line(tmp_path, capsys, ptb, line, what):
    _, pfile = write_corpus(tmp_path, ["a", "b", "c", "d", "e"], ptb, ext="ptb")
    dest = tmp_path / "bin"
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 2
    err = capsys.readouterr().err
    assert f"{pfile}, line {line}: cannot read PTB brackets: {what}" in err, err
    assert not dest.exists()


# --------------------------------------------------------------------------- 8. --sidecars-only with another corpus


def test_sidecars_only_refuses_text_that_is_not_the_binarized_one(tmp_path, capsys):
    dest = tmp_path / "bin"
    clean_corpus(tmp_path)
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 0
    before = {p.name: p.read_bytes() for p in dest.iterdir()}
    # another corpus of as many lines, its line 2 one subword longer
    other, _ = write_corpus(tmp_path, ["the c@@ at", "a b c@@ d"], GOOD_LINE1 + "# line = 2\n" + row(1, "a", "0")
                            + row(2, "b", "1") + row(3, "cd", "1") + "\n", name="other")
    assert preprocess_main(preprocess_argv(tmp_path, dest, "other", "--sidecars-only")) == 2
    err = capsys.readouterr().err
    assert (f"{other}, line 2: 4 subwords, but sentence 1 of the binarized {dest / 'train.src-tgt.src.bin'} has 3 tokens "
            "before EOS (1 of 2 lines differ)") in err, err
    # and one of another length
    shorter, _ = write_corpus(tmp_path, ["the c@@ at"], GOOD_LINE1, name="short")
    assert preprocess_main(preprocess_argv(tmp_path, dest, "short", "--sidecars-only")) == 2
    err = capsys.readouterr().err
    assert f"{shorter} has 1 lines but the binarized {dest / 'train.src-tgt.src.bin'} holds 2 sentences" in err
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == before  # the data-bin's sidecars untouched, nothing staged
    assert preprocess_main(preprocess_argv(tmp_path, dest, "train", "--sidecars-only")) == 0  # the binarized text
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == before


# --------------------------------------------------------------------------- 9. one long line in syntrans-translate


def translate(tiny_data, tmp_path, capsys, lines, *extra):
    """(exit status, output lines, stderr) of syntrans-translate (in this process) on ``lines``, one batch."""
    from syntrans.cli.translate import main

    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    if out.exists():
        out.unlink()
    status = main(["--checkpoint", str(FIXTURE), "--data", str(tiny_data), "--bpe-codes", str(tiny_data.parent / "bpe.codes"),
                   "--parser", "right-branching", "--beam", "2", "--batch-size", "8", "--input", str(src), "--output",
                   str(out), *map(str, extra)])
    return status, out.read_text(encoding="utf-8").split("\n")[:-1], capsys.readouterr().err


def test_a_line_too_long_stops_translate_naming_it_after_writing_the_lines_before(tiny_data, tmp_path, capsys):
    short = ["gen go beso fa den risa .", "to gitilo beso den lute ."]
    status, alone, err = translate(tiny_data, tmp_path, capsys, short)
    assert status == 0 and len(alone) == 2 and all(alone), err
    lines = [short[0], " ".join(["gen"] * 1145), short[1]]  # 1,146 source tokens with EOS; the model takes 1,024
    status, out, err = translate(tiny_data, tmp_path, capsys, lines, "--print-syntax", tmp_path / "src.conllu")
    assert status == 2
    assert (f"{tmp_path / 'in.txt'}, line 2: 1146 source tokens (BPE pieces and EOS) but the model takes at most 1024; "
            f"stopped there (the translations of line 1 are written to {tmp_path / 'out.txt'}") in err, err
    assert out == alone[:1]  # the line before it, translated as alone, is not lost with the batch
    assert (tmp_path / "src.conllu").read_text(encoding="utf-8").startswith("# line = 1\n")  # nor its parse
    status, out, err = translate(tiny_data, tmp_path, capsys, lines, "--skip-invalid")
    assert status == 0
    assert out == [alone[0], "", alone[1]]  # an empty line for it; the rest of its batch as translated alone
    assert "line 2: 1146 source tokens (BPE pieces and EOS) but the model takes at most 1024: translated to an empty line" \
           " (--skip-invalid)" in err
    assert "summary: 3 sentences (0 empty, 0 parse fallbacks, 1 too long for the model, written empty)" in err
    # the Python API (docs/python-api.md)
    from syntrans.hub import LineTooLong, Translator

    common = dict(checkpoint=str(FIXTURE), data=str(tiny_data), bpe_codes=str(tiny_data.parent / "bpe.codes"),
                  parser="right-branching", beam=2, device="cpu", log=lambda message: None)
    with pytest.raises(LineTooLong) as e:
        Translator.from_checkpoint(**common).translate(lines)
    assert e.value.line == 2 and [t.text for t in e.value.done] == alone[:1]
    t = Translator.from_checkpoint(**common, skip_invalid=True)
    assert t.translate(lines) == [alone[0], "", alone[1]] and t.too_long == 1


# --------------------------------------------------------------------------- 10. what the dist sidecar stores


def test_dist_stores_minus_one_between_sentences_and_the_gap_999_is_applied_in_the_features(tmp_path):
    """docs/commands.md: the dist sidecar stores −1 between two sentences of a line; the source gaps the model reads
    have 999 there."""
    from syntrans.data.features import FEATURES

    parse = ("# line = 1\n# constituency = (ROOT (S (X a) (X b)))\n" + row(1, "a", "0") + row(2, "b", "1") + "\n"
             "# line = 1\n# constituency = (ROOT (X c))\n" + row(1, "c", "0") + "\n")
    write_corpus(tmp_path, ["a b c"], parse)
    dest = tmp_path / "bin"
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 0
    prefix = sidecar_prefix(str(dest), "train", "src", "tgt", "src", "dist")
    dist = items(prefix)
    assert dist == [[1, -1]]  # (S a b): distance 1; then the break between the two sentences
    assert np.fromfile(f"{prefix}.bin", dtype=np.int16).tolist() == [1, -1]  # 16-bit signed, one item per line
    word = items(sidecar_prefix(str(dest), "train", "src", "tgt", "src", "word"))
    gaps = FEATURES["src_gaps"].build({"word": np.array(word[0]), "dist": np.array(dist[0])})
    assert gaps.tolist()[:2] == [2, 999]  # a|b: distance + 1; b|c: 999
