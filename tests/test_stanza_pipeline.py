"""stanza's real Pipeline, on tiny English and German models built here from the shared GUM data
(tests/stanza_models.py), installed in a temporary STANZA_RESOURCES_DIR in stanza.download's layout: syntrans-parse
(Moses escapes, shards and merge, German contractions), contractions expanded by stanza's mwt processor and collapsed
back to the input tokens, syntrans-prepare --smoke, syntrans-translate / Translator with a model that needs the source parse,
syntrans-plot sentence, and the errors for missing models. The tiny models parse badly; the tests check structure:
one word per input token, heads that form a tree, tree leaves that are the tokens, sidecars that match the parse.
Training on stanza-parsed Multi30k (SLA, +S&H, +MULTI-TASK and every other system) is tests/test_real_route.py's.

Skipped when the shared data folder (../shared/data/gum) is absent."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SHARED_DATA, run, short_runs

from syntrans.cli.parse import main as parse_main
from syntrans.cli.plot import main as plot_main
from syntrans.cli.translate import main as translate_main
from syntrans.data.sidecars import load_side
from syntrans.hub import Translator
from syntrans.mechanisms.pascal import pascal_weights
from syntrans.parsing.stanza_parser import (
    MissingModelsError,
    StanzaParser,
    align_to_tokens,
    from_stanza,
    has_mwt,
    make_pipeline,
    moses_unescape,
)
from syntrans.prep.parse_step import stanza_installed
from syntrans.syntax import leaves, read_parsed, tree_distances
from syntrans.syntax.masks import local_range_mask

pytestmark = pytest.mark.usefixtures("single_threaded_tools")

GUM = SHARED_DATA / "gum"
MULTI30K = SHARED_DATA / "multi30k"
PACKAGES = {"en": "gum", "de": "tiny"}  # as tests/stanza_models.py names them
PROCESSORS = {"tokenize", "mwt", "pos", "lemma", "depparse", "constituency"}

# Moses-tokenized English: escapes (&apos; &quot; &amp; &#91; &#93; &lt; &gt;), an empty line, two sentences on a line
EN_LINES = ["The man &apos;s dog barks at the &quot; red &quot; car .",
            "",
            "Prices rose 5 % &amp; fell &#91; again &#93; in 1999 .",
            "I do n&apos;t know what he said , but &lt; this &gt; is it .",
            "She wrote a book . It was a success !",
            "Daniel Bernoulli was a Swiss mathematician and physicist ."]
# German with contractions: zum = zu dem, im = in dem, ... (multi-word tokens in the training data)
DE_LINES = ["Ein Mann geht zum Strand .",
            "Eine junge Frau sitzt im Park .",
            "Ein kleiner Hund springt ins Wasser .",
            "Ein Kind läuft am Zaun und vom Haus zur Straße .",
            "Der Junge steht beim Haus ."]
CONTRACTIONS = {"zum", "zur", "im", "ins", "am", "vom", "beim"}


@pytest.fixture
def stanza_env(stanza_res, monkeypatch):
    """STANZA_RESOURCES_DIR set to the built models, here and for the subprocesses started by the test."""
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(stanza_res))
    return stanza_res


def is_tree(heads) -> bool:
    """Exactly one root (head 0), and every word reaches it without a cycle (heads 1-based)."""
    if sum(h == 0 for h in heads) != 1 or not all(0 <= h <= len(heads) for h in heads):
        return False
    for start in range(len(heads)):
        j, steps = start, 0
        while heads[j] != 0:
            j = heads[j] - 1
            steps += 1
            if steps > len(heads):
                return False
    return True


def check_parse(s, tokens):
    """A parse of the tokens from the real pipeline: the tokens as words, a tree of heads with relations, and a
    constituency tree whose leaves are the tokens."""
    assert list(s.words) == list(tokens)
    assert is_tree(s.heads), s.heads
    assert s.deprels is not None and len(s.deprels) == len(tokens)
    assert s.tree is not None and leaves(s.tree) == list(tokens), (str(s.tree), tokens)
    assert not s.failed


class Spy:
    """A real pipeline that keeps the Documents it returned; its attributes (``processors``) are the pipeline's."""

    def __init__(self, real):
        self.real = real
        self.docs = []

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __call__(self, doc):
        self.docs.append(self.real(doc))
        return self.docs[-1]


def token_words(doc):
    """Per sentence of a stanza Document, per token: (token text, its words' texts)."""
    return [[(t.text, [w.text for w in t.words]) for t in s.tokens] for s in doc.sentences]


def check_corpus(path, lines, split=False):
    """A syntrans-parse output: each non-empty line's sentences, numbered with the line, words = its tokens."""
    parsed = read_parsed(str(path))
    by_line = {}
    for s in parsed:
        by_line.setdefault(s.line, []).append(s)
    assert sorted(by_line) == [k for k, x in enumerate(lines, 1) if x.split()]
    for k, sents in by_line.items():
        tokens = lines[k - 1].split()
        assert [w for s in sents for w in s.words] == tokens
        assert len(sents) == (len([t for t in tokens if t in ".!?"]) if split else 1)
        for s in sents:
            check_parse(s, s.words)
    return parsed


# ------------------------------------------------------------------ the built models


def test_built_models_load_through_make_pipeline(stanza_env):
    resources = json.loads((stanza_env / "resources.json").read_text())
    for lang, pkg in PACKAGES.items():
        assert stanza_installed(lang) and has_mwt(lang, str(stanza_env))
        assert resources[resources[lang]["lang_name"].lower()] == {"alias": lang}
        pipe = make_pipeline(lang)
        assert set(pipe.processors) == PROCESSORS
        for name in PROCESSORS - {"tokenize"}:  # each model read from the layout stanza.download writes
            assert pipe.processors[name].config["model_path"] == str(stanza_env / lang / name / f"{pkg}.pt")
        for name in ("pos", "depparse", "constituency"):
            assert pipe.processors[name].config["pretrain_path"] == str(stanza_env / lang / "pretrain" / f"{pkg}.pt")
    assert stanza_installed("english") and not stanza_installed("fr")


VIEW_PROCESSORS = {("deps",): {"tokenize", "mwt", "pos", "lemma", "depparse"},
                   ("trees",): {"tokenize", "mwt", "pos", "constituency"},
                   ("deps", "trees"): PROCESSORS}


@pytest.mark.parametrize("lang", ["en", "de"])
def test_each_view_set_loads_only_its_processors(stanza_env, lang):
    for views, wanted in VIEW_PROCESSORS.items():
        assert set(make_pipeline(lang, views, "cpu").processors) == wanted, views


@pytest.mark.parametrize("lang,lines", [("en", EN_LINES), ("de", DE_LINES)])
def test_a_view_added_to_a_real_parse_equals_parsing_both_at_once(stanza_env, tmp_path, capsys, lang, lines):
    src = tmp_path / f"in.tok.{lang}"
    src.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    both, out = tmp_path / "both.conllu", tmp_path / "out.conllu"
    assert parse_cli(capsys, src, "-o", both, "--lang", lang, "--strict", "--device", "cpu")[0] == 0
    for first, second in (("trees", "deps"), ("deps", "trees")):
        status, _ = parse_cli(capsys, src, "-o", out, "--lang", lang, "--strict", "--views", first, "--force")
        assert status == 0
        sents = read_parsed(str(out))
        assert all((s.heads is not None) == (first == "deps") and (s.tree is not None) == (first == "trees")
                   for s in sents)
        status, log = parse_cli(capsys, src, "-o", out, "--lang", lang, "--strict", "--views", "deps,trees")
        assert status == 0 and f"holds {first}: parsing only {second}" in log
        assert out.read_bytes() == both.read_bytes()
        check_corpus(out, lines)


# ------------------------------------------------------------------ syntrans-parse


def parse_cli(capsys, *argv):
    """syntrans-parse in this process (its main; the console script runs the same): (exit status, stderr)."""
    status = parse_main([str(a) for a in argv])
    return status, capsys.readouterr().err


def test_syntrans_parse_english_escapes_shards_and_merge(stanza_env, tmp_path, capsys):
    src = tmp_path / "in.tok.en"
    src.write_text("".join(x + "\n" for x in EN_LINES), encoding="utf-8")
    one = tmp_path / "one.conllu"
    run("syntrans-parse", src, "-o", one, "--lang", "en", "--strict")  # the console script, STANZA_RESOURCES_DIR inherited
    parsed = check_corpus(one, EN_LINES)
    assert any(s.heads != [i + 2 for i in range(len(s.words) - 1)] + [0] for s in parsed)  # not the fallback chain
    split = tmp_path / "split.conllu"
    assert parse_cli(capsys, src, "-o", split, "--lang", "en", "--strict", "--split-sentences")[0] == 0
    check_corpus(split, EN_LINES, split=True)

    sharded = tmp_path / "sharded.conllu"
    for k in (1, 0):  # the last shard to finish merges
        status, log = parse_cli(capsys, src, "-o", sharded, "--lang", "en", "--strict", "--num-shards", "2",
                                "--shard-id", k, "--batch-size", "2")
        assert status == 0, log
    assert f"merged 2 shards into {sharded}" in log
    shards = [Path(f"{sharded}.shard{k}of2") for k in range(2)]
    assert sharded.read_text() == "".join(p.read_text() for p in shards)
    assert all(Path(f"{p}.done").exists() for p in shards)
    merged = check_corpus(sharded, EN_LINES)
    assert [(s.line, s.words) for s in merged] == [(s.line, s.words) for s in parsed]
    status, log = parse_cli(capsys, src, "-o", sharded, "--lang", "en", "--num-shards", "2", "--shard-id", "0")
    assert status == 0 and "skipped shard 0 of 2" in log


def test_stanza_gets_the_unescaped_tokens_and_the_output_keeps_the_input_spelling(stanza_env):
    spy = Spy(make_pipeline("en"))
    tokens = [x.split() for x in EN_LINES if x]
    out = StanzaParser(lang="en", pipeline=spy).parse_batch(tokens)
    for s, toks in zip(out, tokens):
        check_parse(s, toks)
    given = [t for s in token_words(spy.docs[0]) for t, _ in s]
    assert "'s" in given and '"' in given and "&" in given and "[" in given and "<" in given and "n't" in given
    assert not any(t.startswith("&") and t.endswith(";") for t in given)
    assert "&apos;s" in out[0].words and "&quot;" in out[0].words


def test_syntrans_parse_german_contractions_one_word_per_token(stanza_env, tmp_path, capsys):
    """The contractions (zum, im, ins, …) are expanded inside stanza (next tests); the output has one word per
    input token."""
    src = tmp_path / "in.tok.de"
    src.write_text("".join(x + "\n" for x in DE_LINES), encoding="utf-8")
    out = tmp_path / "de.conllu"
    status, log = parse_cli(capsys, src, "-o", out, "--lang", "de", "--strict")
    assert status == 0, log
    check_corpus(out, DE_LINES)


def test_german_contractions_are_expanded_by_stanza_and_collapsed_to_the_input_tokens(stanza_env):
    """Through StanzaParser and the real pipeline: each contraction of the training data (a multi-word token there)
    reaches the tagger and parser as its words (zum = zu dem), also capitalised; the output has one word per input
    token, a one-word token keeps its word's head mapped to tokens, a token's leaf sits under its first word's
    preterminal."""
    spy = Spy(make_pipeline("de"))
    tokens = [x.split() for x in DE_LINES + ["Im Park spielt ein Kind ."]]
    out = StanzaParser(lang="de", pipeline=spy).parse_batch(tokens)
    got = spy.docs[0].sentences
    seen = token_words(spy.docs[0])
    assert [[t for t, _ in s] for s in seen] == tokens
    expanded = {t: ws for s in seen for t, ws in s if len(ws) > 1}
    assert expanded["zum"] == ["zu", "dem"] and expanded["im"] == ["in", "dem"] and expanded["ins"] == ["in", "das"]
    assert expanded["Im"] == ["In", "dem"]
    assert set(expanded) == CONTRACTIONS | {"Im"}
    for s, toks, st in zip(out, tokens, got):
        check_parse(s, toks)
        plain = from_stanza(st)
        word_tok = [t for t, ws in enumerate(plain.tokens) for _ in ws]  # token of each word, from stanza's ids
        assert len(word_tok) > len(toks)  # every sentence has a contraction; the output still has a word per token
        first = [word_tok.index(t) for t in range(len(toks))]
        for t, ws in enumerate(plain.tokens):
            if len(ws) == 1:  # a one-word token keeps its word's head, mapped to tokens
                h = ws[0].head
                assert s.heads[t] == (0 if h == 0 else word_tok[h - 1] + 1)
        pre = list(st.constituency.yield_preterminals())
        assert len(pre) == len(word_tok)
        assert [p.label for p in s.tree.yield_preterminals()] == [pre[j].label for j in first]


def test_english_expands_only_dictionary_contractions_the_tagger_does_not_know_as_words(stanza_env):
    """GUM's multi-word tokens give the English mwt dictionary ``cannot`` (can not), ``Bernoulli's`` and the typo
    ``years`` (year s); ``years`` is also a frequent word of the tagger's training data, so it stays whole.
    Moses escapes are undone before the look-up and kept in the output."""
    spy = Spy(make_pipeline("en"))
    expander, vocab = spy.processors["mwt"].trainer, spy.processors["pos"].vocab["word"]
    for form in ("cannot", "Bernoulli's", "years"):
        assert expander.dict_expansion(form) is not None, form
    assert "years" in vocab and "cannot" not in vocab and "Bernoulli's" not in vocab
    toks = "I cannot count the years of Bernoulli&apos;s work .".split()
    plain = [t for t in toks if t not in ("cannot", "Bernoulli&apos;s")]
    assert all(expander.dict_expansion(t) is None for t in plain if t != "years")
    out = StanzaParser(lang="en", pipeline=spy).parse_batch([toks])
    check_parse(out[0], toks)
    seen = dict(token_words(spy.docs[0])[0])
    assert seen.pop("cannot") == ["can", "not"] and seen.pop("Bernoulli's") == ["Bernoulli", "'s"]
    assert all(ws == [t] for t, ws in seen.items()), seen


def test_without_contractions_the_parse_is_stanzas_own_pretokenized_parse(stanza_env):
    """Where no token is a contraction, the Document handed to stanza parses exactly as stanza's own pretokenized
    token lists do."""
    spy = Spy(make_pipeline("en"))
    tokens = [x.split() for x in EN_LINES if x]
    out = StanzaParser(lang="en", pipeline=spy).parse_batch(tokens)
    assert all(ws == [t] for s in token_words(spy.docs[0]) for t, ws in s)  # nothing was expanded
    own = spy.real([[moses_unescape(t) for t in s] for s in tokens])
    for s, toks, st in zip(out, tokens, own.sentences):
        ref = align_to_tokens(toks, from_stanza(st))
        assert (s.heads, s.deprels, str(s.tree)) == (ref.heads, ref.deprels, str(ref.tree))


# ------------------------------------------------------------------ syntrans-prepare --smoke


def test_prepare_smoke_parses_with_stanza(stanza_env, tmp_path):
    if not (MULTI30K / "train.de").exists():
        pytest.skip(f"{MULTI30K} is absent (the shared real-data folder is optional)")
    out = tmp_path / "m30"
    log = run("syntrans-prepare", "multi30k", "--pair", "de-en", "--raw-dir", MULTI30K, "--out", out, "--smoke",
              "--smoke-train", "60", "--smoke-valid", "12", "--smoke-test", "12")
    prepared = json.loads((out / "prepared.json").read_text())
    assert prepared["parsers"] == {"de": "stanza", "en": "stanza"}
    assert "right-branching" not in log
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            lines = (out / "tok" / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
            parsed = check_corpus(out / "parse" / f"{split}.{lang}.conllu", lines)
            assert not any(" (X " in str(s.tree) or " (W " in str(s.tree) for s in parsed)  # not the fallback tree
            side = load_side(str(out / "data-bin"), split, "de", "en", lang)
            assert len(side["head"]) == len(parsed)
            for i, s in enumerate(parsed):  # the sidecars hold this parse
                assert side["head"][i].tolist() == s.heads
                assert side["dist"][i].tolist() == tree_distances(s.tree)


# ------------------------------------------------------------------ syntrans-translate / Translator

MODELS = {  # models that need the source parse at generation
    "distance": ["--arch", "distance_transformer_iwslt_de_en", "--distance-heads", "2"],
    "pascal": ["--arch", "pascal_transformer_iwslt_de_en"],
    "nsd_src_input": ["--arch", "nsd_transformer", "--nsd-kind", "dS", "--nsd-src-input", "concat",
                      "--nsd-embed-dim", "8"],
}


@pytest.fixture(scope="module")
def trained(tiny_data, tmp_path_factory):
    return short_runs(tiny_data, tmp_path_factory, lambda name: MODELS[name])


@pytest.mark.slow
def test_syntrans_translate_parses_the_source_with_stanza(stanza_env, tiny_data, trained, tmp_path, capsys):
    ckpt, _ = trained("distance")
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    raw = (tiny_data.parent / "raw" / "test.src").read_text(encoding="utf-8").splitlines()[:6]
    src.write_text("\n".join(raw[:3] + [""] + raw[3:]) + "\n", encoding="utf-8")
    status = translate_main(["--checkpoint", str(ckpt), "--data", str(tiny_data), "--bpe-codes",
                             str(tiny_data.parent / "bpe.codes"), "--parser", "stanza", "--parser-lang", "en",
                             "--beam", "2", "--input", str(src), "--output", str(out)])
    err = capsys.readouterr().err
    assert status == 0, err[-3000:]
    lines = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(lines) == 7 and lines[3] == "" and all(lines[k] for k in (0, 1, 2, 4, 5, 6))
    assert "summary: 7 sentences (1 empty, 0 parse fallbacks)" in err and "source parse: parser stanza" in err, err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pascal", "nsd_src_input"])
def test_translator_with_the_stanza_parser(stanza_env, tiny_data, trained, name):
    ckpt, _ = trained(name)
    t = Translator.from_checkpoint(str(ckpt), str(tiny_data), str(tiny_data.parent / "bpe.codes"), parser="stanza",
                                   parser_lang="en", beam=2, device="cpu", tokenize=False, detokenize=False,
                                   log=lambda m: None)
    assert t.needs_parse and isinstance(t.parser.parser, StanzaParser)
    lines = (tiny_data.parent / "raw" / "test.src").read_text(encoding="utf-8").splitlines()[:8]
    hyps = t.translate(lines)
    assert len(hyps) == len(lines) and t.parse_failures == 0
    by_line, failures = t.parser.parse(list(enumerate((x.split() for x in lines), 1)))
    assert not failures
    for k, x in enumerate(lines, 1):
        check_parse(by_line[k][0], x.split())


# ------------------------------------------------------------------ syntrans-plot sentence


@pytest.mark.parametrize("lang,text", [("en", "The man &apos;s dog runs to the river ."),
                                       ("de", "Ein Mann geht zum Strand im Park .")])
def test_plot_sentence_with_stanza(stanza_env, tmp_path, capsys, lang, text):
    fig, npz = tmp_path / "s.png", tmp_path / "s.npz"
    assert plot_main(["sentence", text, "--parser", "stanza", "--lang", lang, "--out", str(fig),
                      "--matrices", str(npz)]) == 0
    assert fig.stat().st_size > 0
    words = text.split()
    parse = StanzaParser(lang=lang).parse_batch([words])[0]  # the same model, the same sentence
    check_parse(parse, words)
    n = len(words)
    gaps = tree_distances(parse.tree)
    parents = torch.tensor([[float(h - 1) if h else float(i) for i, h in enumerate(parse.heads)]])
    with np.load(npz) as f:
        assert f["gaps"].tolist() == gaps
        np.testing.assert_array_equal(f["hard"], local_range_mask(torch.tensor(gaps), None).numpy())
        np.testing.assert_allclose(f["pascal"], pascal_weights(parents, n, 1.0)[0].numpy(), rtol=1e-6)
    assert f"wrote {fig}" in capsys.readouterr().out


# ------------------------------------------------------------------ missing models


def test_missing_models_through_the_real_pipeline(stanza_res, tmp_path, monkeypatch, capsys):
    partial = tmp_path / "partial"
    shutil.copytree(stanza_res, partial)
    (partial / "de" / "depparse" / "tiny.pt").unlink()  # one German model missing
    shutil.rmtree(partial / "en")  # English listed in resources.json, its folder gone
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(partial))
    assert stanza_installed("de") and not stanza_installed("en")
    for lang, missing in (("de", partial / "de" / "depparse" / "tiny.pt"), ("en", partial / "en")):
        with pytest.raises(MissingModelsError) as e:
            make_pipeline(lang)
        msg = str(e.value)  # stanza's own words name what is missing, ours the install command
        assert f"stanza.download({lang!r}, model_dir={str(partial)!r}" in msg and str(missing) in msg
    src = tmp_path / "in.txt"
    src.write_text("Ein Mann geht zum Strand .\n", encoding="utf-8")
    status, err = parse_cli(capsys, src, "-o", tmp_path / "o.conllu", "--lang", "de")
    assert status == 2 and "syntrans-parse: error: cannot load the stanza models for language 'de'" in err
    assert "stanza.download('de'" in err and not (tmp_path / "o.conllu").exists()


# ------------------------------------------------------------------ the papers' baselines on real text with parses
