"""Bad input, second round (issue 43's probes): nothing silently ignored, nothing overwritten, nothing half-written,
every crash named.

Each probe is the command as the issue gives it, run in this process where its ``main`` can be called (the few that
need a process of their own, or fairseq-generate, are marked slow). The checkpoint is the fixture of every mechanism
that test_bad_input.py translates with; no model is trained here."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from helpers import BIN, USER_DIR
from test_bad_input import FIXTURE, GOOD_LINE1, clean_corpus, preprocess_argv, row, write_corpus

from syntrans.cli.clean_exit import EXIT_BROKEN_PIPE, clean_main
from syntrans.cli.preprocess import main as preprocess_main

LINES = ["gen go beso fa den risa .", "to gitilo beso den lute .", "gen go beso .", "to gitilo den lute .",
         "gen risa ."]


def conllu(line: int, words) -> str:
    """One sentence of ``line``: each word headed by the next, a flat constituency tree."""
    tree = "(ROOT " + " ".join(f"(X {w})" for w in words) + ")"
    rows = "".join(row(i, w, str(i + 1) if i < len(words) else "0") for i, w in enumerate(words, 1))
    return f"# line = {line}\n# constituency = {tree}\n{rows}\n"


def translate_argv(tiny_data, *extra):
    return ["--checkpoint", str(FIXTURE), "--data", str(tiny_data), "--bpe-codes", str(tiny_data.parent / "bpe.codes"),
            "--parser", "right-branching", "--beam", "2", *map(str, extra)]


def translate(tiny_data, *extra):
    from syntrans.cli.translate import main
    return main(translate_argv(tiny_data, *extra))


# --------------------------------------------------------------------------- 1. overrides: groups and fields


@pytest.mark.parametrize("overrides, message", [
    ("{'lsia': {'gold_parents': True}}", "no group 'lsia' in the model config (names are case-sensitive); did you mean "
                                         "the group 'lisa'?"),
    ("{'Lisa': {'gold_parents': True}}", "no group 'Lisa' in the model config (names are case-sensitive); did you mean "
                                         "the group 'lisa'?"),
    ("{'gold_parents': True}", "a field of 2 groups (lisa, dbsa): name its group, one of {'lisa': {'gold_parents': …}}, "
                               "{'dbsa': {'gold_parents': …}}"),
    ("{'arch': 'transformer'}", "--model-overrides 'arch': the checkpoint decides the architecture"),
    ("{'lisa_gold_parent': True}", "group 'lisa' has no field 'gold_parent'; did you mean 'gold_parents'"),
])
def test_translate_refuses_an_override_that_names_nothing(tiny_data, tmp_path, capsys, overrides, message):
    (tmp_path / "in.txt").write_text(LINES[0] + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    status = translate(tiny_data, "--input", tmp_path / "in.txt", "--output", out, "--model-overrides", overrides)
    err = capsys.readouterr().err
    assert status == 2 and message in err, err
    assert not out.exists()


def test_a_field_without_its_group_goes_into_the_one_group_that_has_it():
    from syntrans.models.config import GROUPS, flat_name, model_config
    from syntrans.models.overrides import check_overrides

    owners = {g: [f for f in cls.__dataclass_fields__] for g, cls in GROUPS.items()}
    unique = next(f for g, fs in owners.items() for f in fs if sum(f in o for o in owners.values()) == 1 and g == "lisa")
    assert check_overrides({unique: 7}, GROUPS, {}, flat_name) == {"lisa": {unique: 7}}
    assert check_overrides({unique: 7, "lisa": {"weight": 2.0}}, GROUPS, {}, flat_name) == {
        "lisa": {"weight": 2.0, unique: 7}}  # beside the group's own dict, whichever comes first
    assert check_overrides({"dropout": 0.3, "lisa": {"weight": 2.0}}, GROUPS, {}, flat_name) == {
        "dropout": 0.3, "lisa": {"weight": 2.0}}  # a TransformerConfig field and a group pass as given
    assert model_config({}, {"lisa_layers": "0"}).lisa.layers == [0]  # a flat name, as before
    with pytest.raises(ValueError, match=r"'dropuot'.*did you mean 'dropout'"):
        check_overrides({"dropuot": 0.3}, GROUPS, {}, flat_name)


@pytest.mark.slow
def test_fairseq_generate_refuses_a_misspelt_group_and_another_arch(tiny_data, tmp_path):
    """fairseq-generate built the checkpoint's model whatever a misspelt group, --arch or the 'arch' override said,
    exit 0. Its checkpoint is the typed-config fixture, whose stored model config is no Namespace: no user has such a
    checkpoint, and this test passed while a checkpoint of ``fairseq-train --arch <preset>`` still took a misspelt group
    (issue 54); test_bad_input_matched_by_content.py::test_generate_refuses_a_misspelt_override_on_a_checkpoint_of_the_command_line
    runs the probes on one trained by the test."""
    base = [str(BIN / "fairseq-generate"), str(tiny_data), "--user-dir", USER_DIR, "--task", "syntax_translation",
            "--path", str(FIXTURE), "--gen-subset", "valid", "--beam", "1", "--max-sentences", "2", "--cpu"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    p = subprocess.run([*base, "--model-overrides", "{'lsia': {'gold_parents': True}}"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode != 0 and "no group 'lsia' in the model config" in p.stderr, p.stderr[-2000:]
    assert "H-" not in p.stdout
    p = subprocess.run([*base, "--arch", "transformer"], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode != 0 and "--arch transformer: the checkpoint holds a model of architecture" in p.stderr, \
        p.stderr[-2000:]
    p = subprocess.run([*base, "--model-overrides", "{'arch': 'transformer'}"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode != 0 and "the checkpoint decides the architecture" in p.stderr, p.stderr[-2000:]


# --------------------------------------------------------------------------- 2. --sidecars-only: the words, not the counts


def test_sidecars_only_refuses_parses_of_the_reversed_text(tmp_path, capsys):
    dest = tmp_path / "bin"
    clean_corpus(tmp_path)  # line 1 "the c@@ at", line 2 "a b c"
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 0
    before = {p.name: p.read_bytes() for p in dest.iterdir()}
    # every line's words reversed: as many subwords per line, parsed as such
    other, _ = write_corpus(tmp_path, ["c@@ at the", "c b a"], "# line = 1\n" + row(1, "cat", "0") + row(2, "the", "1")
                            + "\n# line = 2\n" + row(1, "c", "0") + row(2, "b", "1") + row(3, "a", "1") + "\n",
                            name="reversed")
    assert preprocess_main(preprocess_argv(tmp_path, dest, "reversed", "--sidecars-only")) == 2
    err = capsys.readouterr().err
    assert (f"{other}, line 1: subword 1 is 'c@@', but sentence 0 of the binarized {dest / 'train.src-tgt.src'}.bin has "
            "'the' there (2 lines differ)") in err, err
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == before  # nothing rewritten, nothing staged


# --------------------------------------------------------------------------- 3. averaging onto one of its inputs


def test_averaging_refuses_to_write_over_checkpoint_last(tmp_path, capsys):
    from syntrans.cli.average_checkpoints import main

    ck = tmp_path / "ck"
    ck.mkdir()
    for name in ("checkpoint1.pt", "checkpoint_last.pt"):
        (ck / name).write_bytes(FIXTURE.read_bytes())
    last = (ck / "checkpoint_last.pt").read_bytes()
    status = main(["--inputs", str(ck / "checkpoint1.pt"), str(ck / "checkpoint_last.pt"), "--output",
                   str(ck / "checkpoint_last.pt")])
    err = capsys.readouterr().err
    assert status == 2
    assert (f"--output {ck / 'checkpoint_last.pt'}: it is one of the --inputs ({ck / 'checkpoint_last.pt'} "
            "(fairseq-train's resume point))") in err, err
    assert (ck / "checkpoint_last.pt").read_bytes() == last and sorted(os.listdir(ck)) == ["checkpoint1.pt",
                                                                                           "checkpoint_last.pt"]


def test_translate_refuses_an_output_that_is_its_input(tiny_data, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text(LINES[0] + "\n", encoding="utf-8")
    assert translate(tiny_data, "--input", src, "--output", src) == 2
    assert f"--output {src}: the same file as --input" in capsys.readouterr().err
    assert src.read_text(encoding="utf-8") == LINES[0] + "\n"


# --------------------------------------------------------------------------- 4. a line without its parse


def parsed_input(tmp_path, missing: int):
    """The five LINES and their parses, line ``missing`` left out of the parse file."""
    src, parse = tmp_path / "in.txt", tmp_path / "in3.conllu"
    src.write_text("".join(x + "\n" for x in LINES), encoding="utf-8")
    parse.write_text("".join(conllu(k, x.split()) for k, x in enumerate(LINES, 1) if k != missing), encoding="utf-8")
    return src, parse


def test_a_line_without_its_parse_keeps_the_lines_before_and_beside_it(tiny_data, tmp_path, capsys):
    src, parse = parsed_input(tmp_path, missing=0)
    out = tmp_path / "out.txt"
    assert translate(tiny_data, "--parse", parse, "--batch-size", "2", "--input", src, "--output", out) == 0
    complete = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(complete) == 5 and all(complete)
    capsys.readouterr()
    src, parse = parsed_input(tmp_path, missing=4)
    status = translate(tiny_data, "--parse", parse, "--batch-size", "2", "--input", src, "--output", out)
    err = capsys.readouterr().err
    assert status == 2
    assert (f"{src}, line 4: {parse} has no sentence for this line, which is not empty; stopped there (the translations "
            f"of lines 1-3 are written to {out}") in err, err
    assert out.read_text(encoding="utf-8").split("\n")[:-1] == complete[:3]  # line 3 is not lost with its batch
    status = translate(tiny_data, "--parse", parse, "--batch-size", "2", "--input", src, "--output", out,
                       "--skip-invalid")
    err = capsys.readouterr().err
    assert status == 0
    assert out.read_text(encoding="utf-8").split("\n")[:-1] == complete[:3] + [""] + complete[4:]
    assert f"{src}, line 4: {parse} has no sentence for this line, which is not empty: translated to an empty line" in err
    assert "1 without their parse, written empty" in err


# --------------------------------------------------------------------------- 5. one writer per data-bin


def test_a_second_preprocess_into_a_busy_destdir_is_refused_and_a_dead_lock_taken_over(tmp_path, capsys):
    from syntrans.data.destdir_lock import LOCK_NAME

    clean_corpus(tmp_path)
    dest = tmp_path / "bin"
    dest.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # the run that holds the lock
    try:
        lock = dest / LOCK_NAME
        import json
        import socket
        lock.write_text(json.dumps({"pid": other.pid, "host": socket.gethostname(), "started": "now"}))
        assert preprocess_main(preprocess_argv(tmp_path, dest)) == 2
        err = capsys.readouterr().err
        assert f"another syntrans-preprocess is writing into this data-bin (process {other.pid} on" in err, err
        assert os.listdir(dest) == [LOCK_NAME]  # its data-bin untouched
    finally:
        other.kill()
        other.wait(timeout=30)
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 0
    out = capsys.readouterr().out
    assert f"the lock of a run that no longer runs (pid {other.pid}, started now) is taken over" in out
    assert "dict.src.txt" in os.listdir(dest) and LOCK_NAME not in os.listdir(dest)


def test_a_run_that_ended_while_this_one_waited_is_not_overwritten(tmp_path, capsys, monkeypatch):
    """The dictionaries are checked again once the lock is held: another run may have written its data-bin between
    this run's first check and its lock."""
    from syntrans.data import destdir_lock

    clean_corpus(tmp_path)
    dest = tmp_path / "bin"
    real_acquire = destdir_lock.DestdirLock.acquire

    def acquire(self):
        (dest / "dict.src.txt").write_text("the other run's 1\n", encoding="utf-8")  # it ended just now
        real_acquire(self)

    monkeypatch.setattr(destdir_lock.DestdirLock, "acquire", acquire)
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 2
    assert f"{dest / 'dict.src.txt'} exists" in capsys.readouterr().err
    assert os.listdir(dest) == ["dict.src.txt"] and (dest / "dict.src.txt").read_text() == "the other run's 1\n"


@pytest.mark.slow  # two fairseq imports at once: 20 s on two cores
def test_two_preprocess_processes_into_one_destdir(tmp_path):
    """Both at once, as the probe ran them (both exited 0, the later replacing the other's data-bin): one writes the
    data-bin, the other is refused, naming the running process, or the dictionary the first wrote when that one has
    ended by the time the second holds the lock."""
    clean_corpus(tmp_path)
    dest = tmp_path / "bin"
    argv = [str(BIN / "syntrans-preprocess"), *preprocess_argv(tmp_path, dest)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    runs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    results = [(p.communicate(timeout=300)[1], p.returncode) for p in runs]
    refused = [err for err, code in results if code != 0]
    assert all("another syntrans-preprocess is writing into this data-bin" in err or "dict.src.txt exists" in err
               for err in refused), refused
    assert len(refused) == 1
    assert "train.src-tgt.src.head.bin" in os.listdir(dest)
    assert not [n for n in os.listdir(dest) if n.startswith(".")], os.listdir(dest)


# --------------------------------------------------------------------------- 6. a killed preprocess


def test_staging_folders_of_a_killed_run_are_removed_by_the_next_which_says_so(tmp_path, capsys):
    clean_corpus(tmp_path)
    dest = tmp_path / "bin"
    for name in (".binarized-abc123", ".sidecars-def456"):
        (dest / name).mkdir(parents=True)
        (dest / name / "train.src-tgt.src.bin").write_bytes(b"half")
    assert preprocess_main(preprocess_argv(tmp_path, dest)) == 0
    out = capsys.readouterr().out
    assert ("removed the staging folders of an earlier run that stopped before it ended: .binarized-abc123, "
            ".sidecars-def456") in out
    assert not [n for n in os.listdir(dest) if n.startswith(".")]


def test_the_binarization_process_dies_with_a_killed_parent(tmp_path):
    """SIGKILL of syntrans-preprocess left fairseq's binarization running, writing into the staging folder."""
    child_pid = tmp_path / "child.pid"
    script = textwrap.dedent(f"""
        import argparse, os, time
        import syntrans.data.binarization as pre
        def slow(args):
            open({str(child_pid)!r}, "w").write(str(os.getpid()))
            time.sleep(120)
        pre.fairseq_binarize = slow
        pre._Binarizing(argparse.Namespace(destdir="x"), {str(tmp_path)!r})
        time.sleep(120)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        for _ in range(600):
            if child_pid.exists() and child_pid.read_text():
                break
            time.sleep(0.1)
        pid = int(child_pid.read_text())
        os.kill(pid, 0)  # the binarization runs
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            with open(f"/proc/{pid}/stat") as f:  # a zombie waiting for its reaper is dead too
                if f.read().split(") ")[-1].startswith("Z"):
                    break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError("the binarization process outlived its killed parent")
    finally:
        if parent.poll() is None:
            parent.kill()


# --------------------------------------------------------------------------- 7. the imported PTB reader's lines


@pytest.mark.parametrize("ptb, line, what", [
    ("(S (X a))\n(S (X b))\n(S (X c))\n(S (X d))\n(S (X e)\n", 5, "the tree that starts on this line is not closed"),
    ("(S (X a))\n(S (X b))\n(S (X c)))\n(S (X d))\n(S (X e))\n", 3, "a ')' that closes no bracket"),
])
def test_the_imported_ptb_reader_names_the_faulty_line(tmp_path, ptb, line, what):
    from syntrans.parsing.imported import read_ptb
    path = tmp_path / "test.src.ptb"
    path.write_text(ptb, encoding="utf-8")
    with pytest.raises(ValueError) as e:
        read_ptb(str(path))
    assert str(e.value).startswith(f"{path}, line {line}: cannot read PTB brackets: {what}")


# --------------------------------------------------------------------------- 8. flags that do not apply


def test_prepare_synthetic_warns_about_parser_and_views_it_does_not_use(tmp_path, capsys):
    from syntrans.cli.prepare import main

    out = tmp_path / "out"
    assert main(["synthetic", "--out", str(out), "--smoke", "--parser", "imported", "--views", "deps",
                 "--smoke-train", "30", "--smoke-valid", "5", "--smoke-test", "5"]) == 0
    err = capsys.readouterr().err
    assert "warning: synthetic: --parser imported does not apply: the corpus comes with gold parses" in err, err
    assert "warning: synthetic: --views does not apply: the gold parses hold every view" in err, err
    assert "--parse-shards" not in err  # not given: not warned about
    from syntrans.prep.pipeline import warn_not_applying
    said = []
    warn_not_applying("synthetic", "auto", "deps,trees", said.append, parse_shards=4)  # every view: nothing lost
    assert said == ["warning: synthetic: --parse-shards 4 does not apply: the corpus comes with gold parses, nothing is "
                    "parsed"]


# --------------------------------------------------------------------------- 9. fairseq's messages, corrected


def test_resuming_from_a_checkpoint_of_another_data_bin_names_the_dictionaries(tiny_data, tmp_path):
    """A checkpoint_last.pt of another data-bin (another dictionary): fairseq said only 'please ensure that the
    architectures match'."""
    import shutil

    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    other = tmp_path / "other-bin"
    shutil.copytree(tiny_data, other)
    for lang in ("src", "tgt"):  # one more word in each dictionary: the embeddings get one more row
        with open(other / f"dict.{lang}.txt", "a", encoding="utf-8") as f:
            f.write("zzzextra 1\n")
    save = tmp_path / "ckpt"
    save.mkdir()
    shutil.copy(FIXTURE, save / "checkpoint_last.pt")
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(other), "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "transformer",
        "--encoder-embed-dim", "32", "--decoder-embed-dim", "32", "--save-dir", str(save)])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    with pytest.raises(ValueError) as e:
        task.build_model(cfg.model)
    msg = str(e.value)
    assert msg.startswith(f"{save / 'checkpoint_last.pt'}: fairseq-train would resume from this checkpoint, but its "
                          "source embeddings have ")
    assert "this data-bin's dict.src.txt" in msg and "trained on another data-bin" in msg


# --------------------------------------------------------------------------- 10. closed stdin, full disk, closed pipe


def test_translate_with_stdin_closed_says_so(tiny_data, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    assert translate(tiny_data, "--output", tmp_path / "out.txt") == 2
    err = capsys.readouterr().err
    assert "syntrans-translate: error: stdin is closed: give the input lines on stdin" in err and "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_translate_into_a_full_disk_names_the_file(tiny_data, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text(LINES[0] + "\n", encoding="utf-8")
    assert translate(tiny_data, "--input", src, "--output", "/dev/full") == 2
    err = capsys.readouterr().err
    assert "syntrans-translate: error: /dev/full: cannot write there (No space left on device)" in err, err


@pytest.mark.slow
def test_translate_into_a_closed_pipe_ends_quietly(tiny_data, tmp_path):
    """`syntrans-translate … | head -1`, and stdin closed (`<&-`), in processes of their own."""
    src = tmp_path / "in.txt"
    src.write_text("".join(x + "\n" for x in LINES * 4), encoding="utf-8")
    argv = [str(BIN / "syntrans-translate"), *translate_argv(tiny_data, "--batch-size", "1", "--input", src)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = p.stdout.readline()
    p.stdout.close()  # head -1 has what it wants
    err = p.stderr.read().decode()
    p.stderr.close()
    assert p.wait(timeout=300) == EXIT_BROKEN_PIPE and first.strip()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    q = subprocess.run(argv[:1] + translate_argv(tiny_data), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=env, timeout=300, preexec_fn=lambda: os.close(0))
    assert q.returncode == 2 and "stdin is closed" in q.stderr and "Traceback" not in q.stderr, q.stderr[-2000:]


# --------------------------------------------------------------------------- 11. one clean line, exit 2


def test_every_command_error_is_one_line_and_exit_2_tracebacks_only_with_debug(capsys, monkeypatch):
    @clean_main("syntrans-x")
    def main(argv):
        raise TypeError("'NoneType' object is not iterable")

    monkeypatch.delenv("SYNTRANS_DEBUG", raising=False)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err == ("syntrans-x: error: TypeError: 'NoneType' object is not iterable (--debug or SYNTRANS_DEBUG=1 shows "
                   "the traceback)\n")
    with pytest.raises(TypeError):
        main(["--debug"])
    monkeypatch.setenv("SYNTRANS_DEBUG", "1")
    with pytest.raises(TypeError):
        main([])

    @clean_main("syntrans-x")
    def denied(argv):
        open("/nonexistent-dir/x", "w")

    monkeypatch.delenv("SYNTRANS_DEBUG")
    assert denied([]) == 2
    assert capsys.readouterr().err == "syntrans-x: error: /nonexistent-dir/x: No such file or directory\n"

    @clean_main("syntrans-x")
    def refused(argv):  # what open() raises for a file the user may not write (the tests run as root: simulated)
        raise PermissionError(13, "Permission denied", "/data/bin/dict.src.txt")

    assert refused([]) == 2
    assert capsys.readouterr().err == "syntrans-x: error: /data/bin/dict.src.txt: Permission denied\n"


def test_a_corrupt_checkpoint_is_one_line_from_translate(tiny_data, tmp_path, capsys):
    bad = tmp_path / "checkpoint_last.pt"
    bad.write_bytes(FIXTURE.read_bytes()[:500])
    (tmp_path / "in.txt").write_text(LINES[0] + "\n", encoding="utf-8")
    from syntrans.cli.translate import main
    argv = translate_argv(tiny_data, "--input", tmp_path / "in.txt", "--output", tmp_path / "out.txt")
    argv[argv.index("--checkpoint") + 1] = str(bad)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"syntrans-translate: error: {bad}: cannot load this checkpoint") and err.count("\n") == 1, err


def test_a_head_out_of_range_names_the_file_line(tmp_path, capsys):
    parse = GOOD_LINE1 + "# line = 2\n" + row(1, "a", "0") + row(2, "b", "9") + row(3, "c", "1") + "\n"
    text, pfile = write_corpus(tmp_path, ["the c@@ at", "a b c"], parse)
    assert preprocess_main(preprocess_argv(tmp_path, tmp_path / "bin")) == 2
    err = capsys.readouterr().err
    assert f"{pfile}, sentence 2, line 7: the head 9 of word 2 ('b') lies outside 0..3 (the sentence has 3 words)" in err


def test_a_bom_at_the_start_of_a_conllu_file_is_read_as_nothing(tmp_path, capsys):
    text, pfile = clean_corpus(tmp_path)
    plain = tmp_path / "plain"
    assert preprocess_main(preprocess_argv(tmp_path, plain)) == 0
    pfile.write_bytes(b"\xef\xbb\xbf" + pfile.read_bytes())
    assert preprocess_main(preprocess_argv(tmp_path, tmp_path / "bom")) == 0, capsys.readouterr().err
    sidecars = sorted(n for n in os.listdir(plain) if ".src.head" in n or ".src.dist" in n)
    assert sidecars and all((plain / n).read_bytes() == (tmp_path / "bom" / n).read_bytes() for n in sidecars)


def test_preprocess_never_moves_an_output_over_an_input(tmp_path):
    """An input that lies in --destdir under the name of one of the data-bin's files."""
    import argparse

    from syntrans.data.build_sidecars import SidecarError
    from syntrans.data.binarization import check_not_inputs

    text, _ = clean_corpus(tmp_path)
    args = argparse.Namespace(source_lang="src", target_lang="tgt", trainpref=str(tmp_path / "train"), validpref=None,
                              testpref=None)
    jobs = [("train", str(tmp_path / "train"), str(tmp_path / "parse_train"))]
    check_not_inputs(args, jobs, [str(tmp_path / "bin" / "train.src-tgt.src.bin")])  # no input there
    with pytest.raises(SidecarError, match=f"{text}: text of --trainpref is this file"):
        check_not_inputs(args, jobs, [str(text)])
    with pytest.raises(SidecarError, match="the parsed corpus of train is this file"):
        check_not_inputs(args, jobs, [str(tmp_path / "parse_train.src.conllu")])
