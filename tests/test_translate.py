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

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("single_threaded_tools")]

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
    assert (f"{src}, line 2: its sentences in {corpus['parse']} are not its parse: the parse has {n - 1} words but the "
            f"line has {n} tokens") in err, err  # matched by its words (issue 54), before the sidecars are built


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


# --------------------------------------------------------------------------- predicted parses (--print-syntax)

@pytest.fixture(scope="module")
def parse_ckpt(corpus, tmp_path_factory):
    """Encoder DBSA heads in layer 0 and a LISA head in layer 1 (the last source parse: LISA, first-piece convention),
    two causal DBSA heads in decoder layer 1."""
    return train(corpus["data"], tmp_path_factory.mktemp("parses"), "--arch", "dbsa_transformer_wmt_en_de",
                 "--dbsa-encoder-layers", "0", "--lisa-layers", "1", "--dbsa-decoder-layers", "1", "--dbsa-heads", "2",
                 updates=40)


def gold_line_heads(corpus):
    """line → the gold parse's heads of that line, offset to line positions (several sentences per line allowed)."""
    out = {}
    for s in read_parsed(str(corpus["parse"])):
        off = len(out.get(s.line, []))
        out.setdefault(s.line, []).extend(h + off if h else 0 for h in s.heads)
    return out


def translate_main(capsys, *argv):
    """(exit status, stderr) of syntrans-translate run in this process."""
    from syntrans.cli.translate import main

    status = main([str(a) for a in argv])
    return status, capsys.readouterr().err


def run_with_syntax(corpus, ckpt, tmp_path, capsys, *extra):
    """Translate the tokenized test source with its gold parses, writing both parses; (hyps, src, tgt, stderr)."""
    hyp, src, tgt = tmp_path / "hyp.txt", tmp_path / "src.conllu", tmp_path / "tgt.conllu"
    status, err = translate_main(capsys, *common(corpus, ckpt), "--input", corpus["src"], "--output", hyp, "--parse",
                                 corpus["parse"], "--no-detokenize", "--batch-size", "7", "--max-len-b", "30",
                                 "--print-syntax", src, "--print-target-syntax", tgt, *extra)
    assert status == 0, err
    return hyp.read_text(encoding="utf-8").split("\n")[:-1], read_parsed(str(src)), read_parsed(str(tgt)), err


def test_print_syntax_writes_word_level_conllu(corpus, parse_ckpt, tmp_path, capsys):
    hyps, src, tgt, err = run_with_syntax(corpus, parse_ckpt, tmp_path, capsys)
    lines = corpus["src"].read_text(encoding="utf-8").splitlines()
    # one sentence per input line, over the source tokens
    assert [s.line for s in src] == list(range(1, len(lines) + 1))
    assert [s.words for s in src] == [x.split() for x in lines]
    # one sentence per hypothesis with words, over the hypothesis words (BPE joined)
    assert len(hyps) == len(lines)
    assert [s.line for s in tgt] == [k + 1 for k, h in enumerate(hyps) if h.split()]
    assert [s.words for s in tgt] == [h.split() for h in hyps if h.split()]
    for s in src + tgt:
        assert set(s.deprels) <= {"root", "dep", "dep:self", "dep:eos"}
        assert all((h == 0) == (rel != "dep") for h, rel in zip(s.heads, s.deprels))
    # the summary names the parse layers written (the last of each side) and the source UAS against --parse, which
    # is the attachment of the written heads (a word marked dep:self/dep:eos has no head, so never a hit)
    assert f"source parse lisa@1 written to {tmp_path / 'src.conllu'}" in err
    assert f"hypothesis parse dbsa@1 written to {tmp_path / 'tgt.conllu'}" in err
    gold = gold_line_heads(corpus)
    hits = sum(h == g and rel in ("root", "dep") for s in src for h, rel, g in zip(s.heads, s.deprels, gold[s.line]))
    words = sum(len(s.words) for s in src)
    m = re.search(r"source lisa@1 word UAS = ([0-9.]+) \((\d+)/(\d+) words\) against (\S+)", err)
    assert m and (int(m.group(2)), int(m.group(3))) == (hits, words) and m.group(4) == str(corpus["parse"])
    assert float(m.group(1)) == pytest.approx(100 * hits / words, abs=0.005) and 0 < hits < words
    # recording the parses changes no hypothesis
    plain = tmp_path / "plain.txt"
    status, _ = translate_main(capsys, *common(corpus, parse_ckpt), "--input", corpus["src"], "--output", plain,
                               "--parse", corpus["parse"], "--no-detokenize", "--batch-size", "7", "--max-len-b", "30")
    assert status == 0 and plain.read_text(encoding="utf-8").split("\n")[:-1] == hyps


def test_print_syntax_under_the_lisa_oracle_is_the_gold_parse(corpus, parse_ckpt, tmp_path, capsys):
    # the LISA head attends to the gold first-piece parents: read back with the first-piece convention, every word's
    # head is its gold head
    _, src, _, err = run_with_syntax(corpus, parse_ckpt, tmp_path, capsys, "--model-overrides",
                                     "{'lisa_gold_parents': True}")
    gold = gold_line_heads(corpus)
    assert all(s.heads == gold[s.line] and "dep:self" not in s.deprels and "dep:eos" not in s.deprels for s in src)
    words = sum(len(s.words) for s in src)
    assert f"source lisa@1 word UAS = 100.00 ({words}/{words} words)" in err


def test_print_syntax_refused_without_parse_heads(corpus, parse_ckpt, vanilla_ckpt, tmp_path, capsys):
    out = tmp_path / "out.txt"
    for flag, side, needs in (("--print-syntax", "source", "LISA or DBSA heads in its encoder"),
                              ("--print-target-syntax", "target", "DBSA heads in its decoder")):
        conllu = tmp_path / f"{side}.conllu"
        status, err = translate_main(capsys, *common(corpus, vanilla_ckpt), "--input", corpus["src"], "--output", out,
                                     "--no-tokenize", flag, conllu)
        assert status == 2
        assert err.startswith(f"syntrans-translate: error: {flag}: {vanilla_ckpt}: a {side} parse was asked for, but "
                              f"the model has no {needs}"), err
        assert not conllu.exists() and not out.exists()  # refused before any input was read
    # in Python: only the sides asked for are parsed
    t = Translator.from_checkpoint(str(parse_ckpt), str(corpus["data"]), str(corpus["codes"]), parser=None, beam=2,
                                   max_len_b=30, tokenize=False, device="cpu", syntax=("target",))
    (done,) = t.translate_syntax(["gen go beso fa den risa ."])
    assert done.source is None and done.gold is None and done.target.tag == "dbsa@1"
    assert len(done.target.words) == len(done.target.heads) > 0
