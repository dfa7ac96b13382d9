"""syntrans-translate and syntrans.hub.Translator: the hypotheses of fairseq-generate on the same sentences, a parse
only where the model needs one, Moses text in and out, and the project's errors and parse fallback."""
import os
import re
import select
import subprocess

import pytest
from helpers import BIN, N_TEST, generate, run, tiny_train_argv

from syntrans.hub import SourceText, TargetText, Translator
from syntrans.parsing import MissingModelsError
from syntrans.syntax.parsed import read_parsed

pytestmark = pytest.mark.usefixtures("single_threaded_tools")

RAW = ["gen go beso fa den risa .", "", "to gitilo, \"beso\" & den lute ."]  # an empty line; Moses escapes on line 3


def train(data, save, *flags, updates):
    run("fairseq-train", *tiny_train_argv(data, save, *flags, "--lr", "5e-3", "--max-update", updates,
                                          "--no-save-optimizer-state"))
    return save / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def corpus(tiny_data):
    root = tiny_data.parent
    return {"data": tiny_data, "codes": root / "bpe.codes", "src": root / "raw" / "test.src",
            "parse": root / "raw" / "test.src.conllu"}


@pytest.fixture(scope="module")
def distance_ckpt(corpus, tmp_path_factory):
    """A distance-mask model (source gaps needed at generation), trained enough for varied hypotheses."""
    return train(corpus["data"], tmp_path_factory.mktemp("distance"), "--arch", "distance_transformer_iwslt_de_en",
                 "--distance-heads", "2", updates=150)


@pytest.fixture(scope="module")
def vanilla_ckpt(corpus, tmp_path_factory):
    return train(corpus["data"], tmp_path_factory.mktemp("vanilla"), "--arch", "transformer", updates=30)


@pytest.fixture(scope="module")
def no_stanza(tmp_path_factory):
    """A stanza resources directory without models: stanza fails here whatever the machine has installed."""
    return tmp_path_factory.mktemp("no_stanza_models")


def translate_cli(*args, env=None):
    """(exit status, stdout, stderr) of syntrans-translate."""
    full_env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    full_env.update(PYTHONWARNINGS="ignore", **(env or {}))
    p = subprocess.run([str(BIN / "syntrans-translate"), *map(str, args)], capture_output=True, text=True, env=full_env,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def common(corpus, ckpt):
    return ["--checkpoint", ckpt, "--data", corpus["data"], "--bpe-codes", corpus["codes"], "--beam", "4"]


@pytest.fixture(scope="module")
def cli_hyps(corpus, distance_ckpt, tmp_path_factory):
    """syntrans-translate on the tokenized test source with its gold parses, in batches unlike fairseq-generate's."""
    out = tmp_path_factory.mktemp("cli") / "hyp.txt"
    run("syntrans-translate", *common(corpus, distance_ckpt), "--input", corpus["src"], "--output", out,
        "--parse", corpus["parse"], "--no-tokenize", "--no-detokenize", "--batch-size", "7")
    return out.read_text(encoding="utf-8").split("\n")[:-1]


def test_cli_gives_fairseq_generate_hypotheses(corpus, distance_ckpt, cli_hyps):
    gen = generate(corpus["data"], distance_ckpt, "--beam", "4")  # batch size 16, sorted by length
    hyps = dict((int(i), h) for i, h in re.findall(r"^H-(\d+)\t\S+\t(.*)$", gen, flags=re.M))
    assert sorted(hyps) == list(range(N_TEST))
    assert len(cli_hyps) == N_TEST
    assert cli_hyps == [hyps[i] for i in range(N_TEST)]
    assert len(set(cli_hyps)) > N_TEST // 4  # a model that says different things, not one string everywhere


def test_python_api_gives_the_cli_strings(corpus, distance_ckpt, cli_hyps):
    t = Translator.from_checkpoint(str(distance_ckpt), str(corpus["data"]), str(corpus["codes"]), parser=None, beam=4,
                                   batch_size=16, detokenize=False, device="cpu")
    assert t.needs_parse and t.parser is None
    lines = corpus["src"].read_text(encoding="utf-8").splitlines()
    parses = {s.line: s for s in read_parsed(str(corpus["parse"]))}
    assert t.translate_parsed([x.split() for x in lines], [parses[k + 1] for k in range(len(lines))]) == cli_hyps
    flat = Translator.from_checkpoint(str(distance_ckpt), str(corpus["data"]), str(corpus["codes"]), parser="flat", beam=4,
                                      batch_size=16, tokenize=False, detokenize=False, device="cpu")
    assert flat.translate(lines) != cli_hyps  # the hypotheses do depend on the source parse
    with pytest.raises(ValueError, match=r"^input: the model needs a parse of every source sentence but this Translator has no"):
        t.translate(lines[:1])  # no parser and no parse


def test_raw_text_cli_and_api_agree(corpus, distance_ckpt, tmp_path):
    """Moses tokenization, a model-free parser, detokenization; the empty line stays, and is reported."""
    src = tmp_path / "raw.txt"
    src.write_text("".join(x + "\n" for x in RAW), encoding="utf-8")
    rc, out, err = translate_cli(*common(corpus, distance_ckpt), "--parser", "right-branching", "--input", src)
    assert rc == 0, err
    lines = out.split("\n")[:-1]
    assert len(lines) == 3 and lines[1] == "" and lines[0] and lines[2]
    assert f"{src}, line 2: empty line" in err and "summary: 3 sentences (1 empty, 0 parse fallbacks)" in err
    assert not any(e in out for e in ("&amp;", "&quot;", "&apos;", "@@"))
    t = Translator.from_checkpoint(str(distance_ckpt), str(corpus["data"]), str(corpus["codes"]), parser="right-branching",
                                   beam=4, device="cpu", log=lambda m: None)
    assert t.translate(RAW) == lines


def test_parse_failure_falls_back_to_right_branching(corpus, distance_ckpt):
    logged = []
    t = Translator.from_checkpoint(str(distance_ckpt), str(corpus["data"]), str(corpus["codes"]), parser="right-branching",
                                   beam=4, device="cpu", log=logged.append)
    expected = t.translate(RAW)
    calls = []

    class Failing:  # fails on any batch holding the third line's sentence
        def parse_batch(self, sentences):
            calls.append(len(sentences))
            if any("gitilo" in s for s in sentences):
                raise RuntimeError("parser crashed")
            return real.parse_batch(sentences)

    real = t.parser.parser
    t.parser.parser = Failing()
    try:
        got = t.translate(RAW, first_line=11)
    finally:
        t.parser.parser = real
    assert got == expected  # the fallback is the right-branching parse
    assert t.parse_failures == 1 and calls  # retried line by line, one line fell back
    assert any("line 13: the parser failed (RuntimeError: parser crashed)" in m for m in logged), logged


def test_stanza_without_models_fails_with_the_download_command(corpus, distance_ckpt, no_stanza, monkeypatch):
    rc, out, err = translate_cli(*common(corpus, distance_ckpt), "--parser", "stanza", "--input", corpus["src"],
                                 env={"STANZA_RESOURCES_DIR": str(no_stanza)})
    assert rc == 2 and out == ""
    assert "syntrans-translate: cannot load the stanza models" in err and "stanza.download(" in err
    assert str(no_stanza) in err and "--parse FILE" in err
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(no_stanza))
    with pytest.raises(MissingModelsError, match=r"stanza\.download\("):
        Translator.from_checkpoint(str(distance_ckpt), str(corpus["data"]), str(corpus["codes"]), parser="auto")


def test_vanilla_model_is_never_parsed_and_streams(corpus, vanilla_ckpt, no_stanza, monkeypatch):
    """--parser stanza, which fails on this machine, is never built for a model that needs no parse; with
    --batch-size 1 each translation comes out before the next line goes in (a pipe)."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env.update(PYTHONWARNINGS="ignore", STANZA_RESOURCES_DIR=str(no_stanza))
    argv = [str(a) for a in common(corpus, vanilla_ckpt)] + ["--parser", "stanza", "--max-len-b", "20", "--batch-size", "1"]
    p = subprocess.Popen([str(BIN / "syntrans-translate"), *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        p.stdin.write(RAW[0] + "\n")
        p.stdin.flush()
        ready, _, _ = select.select([p.stdout], [], [], 120)
        assert ready, "no translation of line 1 while stdin is still open"
        first = p.stdout.readline()
        out, err = p.communicate("".join(x + "\n" for x in RAW[1:]), timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert "source parse: not needed" in err and "stdin, line 2: empty line" in err
    lines = [first.rstrip("\n")] + out.split("\n")[:-1]
    assert len(lines) == 3 and lines[1] == "" and lines[0]

    import syntrans.parsing.driver
    import syntrans.parsing.stanza_parser

    def never(*a, **k):
        raise AssertionError("a parser was built for a model that needs no parse")

    monkeypatch.setattr(syntrans.parsing.stanza_parser, "make_pipeline", never)
    monkeypatch.setattr(syntrans.parsing.driver, "make_parser", never)
    t = Translator.from_checkpoint(str(vanilla_ckpt), str(corpus["data"]), str(corpus["codes"]), parser="stanza", beam=4,
                                   max_len_b=20, device="cpu", log=lambda m: None)
    assert not t.needs_parse and t.parser is None
    assert t.translate(RAW) == lines


def test_parse_file_must_match_the_input(corpus, distance_ckpt, tmp_path, capsys):
    from syntrans.cli.translate import main

    lines = corpus["src"].read_text(encoding="utf-8").splitlines()[:3]
    lines[1] += " beso"  # one word more than its parse
    src = tmp_path / "in.txt"
    src.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    argv = [str(a) for a in common(corpus, distance_ckpt)] + ["--input", str(src), "--parse", str(corpus["parse"])]
    assert main(argv) == 2
    err = capsys.readouterr().err
    n = len(lines[1].split())
    assert re.search(rf"{re.escape(str(src))}, line 2: the tokenized line has {n} words but its parse has {n - 1}", err), err


def test_moses_round_trip(corpus):
    """Source lines are tokenized and XML-escaped like the training data; outputs are unescaped and detokenized."""
    source, target = SourceText(str(corpus["codes"]), lang="en"), TargetText("en")
    for line in ["Tom & Jerry's \"big\" day is < 5 [really] | ok.", "A man, a plan & a canal: Panama!"]:
        tokens = source.tokens(line)
        assert "&amp;" in tokens and "&" not in tokens
        assert target(" ".join(tokens)) == line
    assert source.tokens("Tom & Jerry's day")[:4] == ["Tom", "&amp;", "Jerry", "&apos;s"]
    assert source.tokens("   ") == []
    assert SourceText(str(corpus["codes"]), tokenize=False, lowercase=True).tokens("Gen GO , x") == ["gen", "go", ",", "x"]
    assert TargetText("en", detokenize=False)("a &amp; b") == "a &amp; b"
    assert target("he said &quot; no &quot; .") == 'he said "no".'
