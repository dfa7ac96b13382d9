"""SentencePiece on raw, untokenized text (the raw-text route, no Moses step): ``syntrans-prepare --bpe sentencepiece
--no-moses`` trains and applies SentencePiece to the cleaned raw text, stanza tokenizes each raw line itself and the
parse keeps each word's character span (CoNLL-U MISC ``start_char``/``end_char``), by which the pieces are aligned to
the words; ``syntrans-translate --no-moses`` translates raw input and writes the decoded hypotheses as they are.

The fast tests read hand-written CoNLL-U with spans (a multi-word token, a piece crossing a word boundary) and align
pieces to it; they run no parser. The rest prepares a slice of Multi30k with the tests' tiny GUM-trained stanza models
(conftest ``stanza_res``), skipped without the shared real-data folder, trains a PASCAL model a few updates, decodes it
with fairseq-generate and translates raw text with syntrans-translate.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess

import pytest
from helpers import BIN, SHARED_DATA, SMALL, USER_DIR, run

from syntrans.data.build_sidecars import build_side
from syntrans.data.piece_routes import PieceRoute

MULTI30K = SHARED_DATA / "multi30k"
SIZES = {"train": 40, "val": 8, "test_2016_flickr": 8}  # captions of each split
RAW_ROUTE = PieceRoute("sentencepiece", char_spans=True)

# "I don't know. Yes!": two sentences of one line; don't a multi-word token (do + n't) whose words have no span of
# their own (the range line's is theirs)
SPANNED = """# line = 1
1\tI\t_\t_\t_\t_\t4\tnsubj\t_\tstart_char=0|end_char=1
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\tstart_char=2|end_char=7
2\tdo\t_\t_\t_\t_\t4\taux\t_\t_
3\tn't\t_\t_\t_\t_\t4\tadvmod\t_\t_
4\tknow\t_\t_\t_\t_\t0\troot\t_\tstart_char=8|end_char=12
5\t.\t_\t_\t_\t_\t4\tpunct\t_\tstart_char=12|end_char=13

# line = 1
1\tYes\t_\t_\t_\t_\t0\troot\t_\tstart_char=14|end_char=17
2\t!\t_\t_\t_\t_\t1\tpunct\t_\tstart_char=17|end_char=18

# line = 2
1\tzum\t_\t_\t_\t_\t0\troot\t_\tstart_char=0|end_char=3

"""


@pytest.mark.fast
def test_spans_are_read_from_misc_and_a_multi_word_tokens_words_take_its_span(tmp_path):
    from syntrans.syntax.parsed import format_conllu, read_conllu

    path = tmp_path / "p.conllu"
    path.write_text(SPANNED, encoding="utf-8")
    first, second, third = read_conllu(str(path))
    assert first.words == ["I", "do", "n't", "know", "."]
    assert first.spans == [(0, 1), (2, 7), (2, 7), (8, 12), (12, 13)]
    assert (second.line, second.spans) == (1, [(14, 17), (17, 18)])
    assert third.spans == [(0, 3)]
    written = tmp_path / "w.conllu"
    written.write_text(format_conllu([first, second]), encoding="utf-8")
    assert "\tstart_char=2|end_char=7\n" in written.read_text(encoding="utf-8")
    assert [s.spans for s in read_conllu(str(written))] == [first.spans, second.spans]
    bad = SPANNED.replace("4\tknow\t_\t_\t_\t_\t0\troot\t_\tstart_char=8|end_char=12", "4\tknow\t_\t_\t_\t_\t0\troot\t_\t_")
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(ValueError, match=r"p\.conllu, sentence 1: word 4 has no character span .* all or none must"):
        read_conllu(str(path))


@pytest.mark.fast
def test_pieces_are_aligned_by_the_parses_spans_crossing_counted(tmp_path):
    """``▁don`` holds characters of ``do`` and ``n't`` (the multi-word token's characters shared out in order): a
    crossing piece, counted; ``'t`` opens ``n't``. The two sentences of line 1 index one line. ``zum`` = one word."""
    from syntrans.data.sidecars import Sidecar

    text, parse = tmp_path / "t.en", tmp_path / "p.en.conllu"
    text.write_text("▁I ▁don 't ▁know . ▁Yes !\n▁zu m\n", encoding="utf-8")
    parse.write_text(SPANNED, encoding="utf-8")
    rep = build_side(str(text), str(parse), str(tmp_path / "out"), route=RAW_ROUTE)
    assert (rep.crossing, rep.crossing_lines, rep.multi_sentence, rep.words) == (1, [1], [1], 8)
    word = Sidecar(str(tmp_path / "out.word"))
    assert word[0].tolist() == [0, 1, 2, 3, 4, 5, 6] and word[1].tolist() == [0, 0]
    head = Sidecar(str(tmp_path / "out.head"))
    assert head[0].tolist() == [4, 4, 4, 0, 4, 0, 6]  # the second sentence's heads offset by the first's 5 words


@pytest.mark.fast
def test_the_route_and_the_parse_must_agree_and_wrong_spans_are_refused(tmp_path):
    text, parse = tmp_path / "t.en", tmp_path / "p.en.conllu"
    text.write_text("▁I ▁don 't ▁know . ▁Yes !\n▁zu m\n", encoding="utf-8")
    parse.write_text(SPANNED, encoding="utf-8")
    with pytest.raises(ValueError, match=r"t\.en, line 1: the parse gives its words character spans .* expected "
                                         r"--char-spans"):
        build_side(str(text), str(parse), str(tmp_path / "a"), route=PieceRoute("sentencepiece"))
    plain = tmp_path / "plain.en.conllu"
    plain.write_text("1\tyes\t_\t_\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    (tmp_path / "one.en").write_text("▁yes\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"one\.en, line 1: expected the parse words' character spans"):
        build_side(str(tmp_path / "one.en"), str(plain), str(tmp_path / "b"), route=RAW_ROUTE)
    parse.write_text(SPANNED.replace("start_char=8|end_char=12", "start_char=7|end_char=11"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"word 4 'know' has the span 7-11, which reads ' kno' .* not of this line"):
        build_side(str(text), str(parse), str(tmp_path / "c"), route=RAW_ROUTE)
    with pytest.raises(ValueError, match="--char-spans aligns pieces to words by characters"):
        PieceRoute("subword_nmt", char_spans=True)
    assert not list(tmp_path.glob("[abc].*"))  # nothing half-written


@pytest.mark.fast
def test_a_multi_word_token_whose_words_do_not_spell_it_leaves_a_word_without_a_piece():
    """``zum`` read as the syntactic words ``zu dem`` (stanza's own CoNLL-U): the token's characters go to ``zu``, and
    ``dem`` has no piece of its own: refused where the caller asks for every word to have one (--strict), else
    joined to ``zu`` as on every route (docs/commands.md): one word ``zudem`` spanning the token, headed as the pair's
    external word (``zu`` → Strand, case), the index of ``▁Strand`` moved to word 1."""
    pieces = ["▁zum", "▁Strand"]
    with pytest.raises(ValueError, match=r"parse word 2 'dem' has no subword piece of its own"):
        RAW_ROUTE.subword_words(pieces, ["zu", "dem", "Strand"], "t.de, line 3", [(0, 3), (0, 3), (4, 10)])
    from syntrans.syntax.parsed import ParsedSentence

    s = ParsedSentence(["zu", "dem", "Strand"], [3, 3, 0], ["case", "det", "root"], line=3,
                       spans=[(0, 3), (0, 3), (4, 10)])
    got = RAW_ROUTE.line_words(pieces, [s], "t.de, line 3", s.spans)
    assert got.subwords.index == [0, 1] and got.joins.words == 1
    (j,) = got.sentences
    assert (j.words, j.heads, j.deprels, j.spans) == (["zudem", "Strand"], [2, 0], ["case", "root"], [(0, 3), (4, 10)])


@pytest.mark.fast
def test_byte_level_pieces_are_aligned_by_the_spans_too(tmp_path):
    """--char-spans with --bpe gpt2: the ids' bytes spell the line, and the parse's spans place the words under them
    (``Ġdon`` crossing into ``n't``; ``ü``'s two bytes one piece)."""
    from syntrans.syntax.byte_bpe import ByteLevelBPE, byte_alphabet

    merges = [("Ġ", "d"), ("o", "n"), ("Ġd", "on"), ("'", "t"), ("Ã", "¼")]
    vocab = {sym: i for i, sym in enumerate(list(byte_alphabet()) + [a + b for a, b in merges])}
    enc, bpe = tmp_path / "encoder.json", tmp_path / "vocab.bpe"
    enc.write_text(json.dumps(vocab), encoding="utf-8")
    bpe.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    pieces = [str(i) for i in ByteLevelBPE.load(str(enc), str(bpe)).encode("I don't über")]
    route = PieceRoute("gpt2", gpt2_encoder_json=str(enc), gpt2_vocab_bpe=str(bpe), char_spans=True)
    subwords, alignment = route.subword_words(pieces, ["I", "don't", "über"], "l1", [(0, 1), (2, 7), (8, 12)])
    assert subwords.index == [0, 1, 1, 2, 2, 2, 2, 2] and alignment.crossing == 0
    subwords, alignment = route.subword_words(pieces, ["I", "do", "n't", "über"], "l1",
                                              [(0, 1), (2, 7), (2, 7), (8, 12)])
    assert subwords.index == [0, 1, 2, 3, 3, 3, 3, 3] and alignment.crossing == 1


@pytest.mark.fast
def test_spans_follow_the_whitespace_the_pieces_spell():
    """The spans index the spanned line (whitespace runs as one space, no space at the ends); the pieces' text may
    have a leading space (SentencePiece's dummy prefix) or other whitespace: the spans are moved into it."""
    from syntrans.syntax.word_spans import spanned_line, spans_in_text, whitespace_spans

    text = "  a  dog\t."
    assert spanned_line(text) == "a dog ."
    assert whitespace_spans(text) == (["a", "dog", "."], [(0, 1), (2, 5), (6, 7)])
    assert spans_in_text(text, [(0, 1), (2, 5), (6, 7)]) == [(2, 3), (5, 8), (9, 10)]
    with pytest.raises(ValueError, match="outside the line's 7 characters"):
        spans_in_text(text, [(6, 9)])


@pytest.mark.fast
def test_translate_refuses_the_other_route_of_a_prepared_corpus(tmp_path):
    """A data-bin that syntrans-prepare made: its prepared.json's text_route decides whether --no-moses is right."""
    from syntrans.cli.translate import build_parser, check_files

    data = tmp_path / "data-bin"
    data.mkdir()
    (tmp_path / "prepared.json").write_text(json.dumps({"data_bin": str(data), "text_route": "raw"}))
    base = ["--checkpoint", "c.pt", "--data", str(data), "--bpe", "sentencepiece", "--sentencepiece-model", "m"]
    with pytest.raises(ValueError, match=r"prepared\.json: the corpus of .* took the raw route .* this run asks for the "
                                         r"moses route .* add --no-moses"):
        check_files(build_parser().parse_args(base))
    (tmp_path / "prepared.json").write_text(json.dumps({"data_bin": str(data)}))  # before the route was recorded
    with pytest.raises(ValueError, match=r"took the moses route .* asks for the raw route .* drop --no-moses"):
        check_files(build_parser().parse_args(base + ["--no-moses"]))
    with pytest.raises(ValueError, match="--no-moses is the raw-text route of SentencePiece: expected --bpe "
                                         "sentencepiece"):
        check_files(build_parser().parse_args(["--checkpoint", "c.pt", "--data", str(data), "--bpe-codes", "x",
                                               "--no-moses"]))


@pytest.mark.fast
def test_the_parse_driver_takes_raw_lines_with_spans(tmp_path):
    """--char-spans: a model-free parser gives the whitespace fields with their spans; a parser that tokenizes may give
    several sentences for a line (each with the line's number); a line it fails on gets the fallback parse of its
    whitespace fields, with spans; --raw and --split-sentences are refused with it."""
    from syntrans.parsing.driver import InputError, ParseJob, Stats, parse_job, parse_lines
    from syntrans.parsing.trivial import TrivialParser
    from syntrans.syntax.parsed import ParsedSentence

    def parsed(parser, lines, stats=None):
        return [s for batch in parse_lines(lines, parser, char_spans=True, stats=stats) for s in batch]

    (s,) = parsed(TrivialParser("right-branching"), [(1, "a  dog .".split()), (2, [])])
    assert (s.line, s.words, s.spans) == (1, ["a", "dog", "."], [(0, 1), (2, 5), (6, 7)])

    class Splitting:  # stands in for stanza: "Hi there. Bye" as two sentences, "there." as two tokens
        def parse_texts(self, texts):
            if "boom" in texts:
                raise RuntimeError("the tokenizer broke")
            assert texts == ["Hi there. Bye"]
            return [[ParsedSentence(["Hi", "there", "."], [2, 0, 2], spans=[(0, 2), (3, 8), (8, 9)]),
                     ParsedSentence(["Bye"], [0], spans=[(10, 13)])]]

    first, second = parsed(Splitting(), [(4, "Hi there.  Bye".split())])
    assert (first.line, second.line, second.words, second.spans) == (4, 4, ["Bye"], [(10, 13)])
    stats = Stats()
    (fallback,) = parsed(Splitting(), [(5, ["boom"])], stats)
    assert fallback.failed and fallback.spans == [(0, 4)] and stats.failures[0][0] == 5
    (tmp_path / "in.txt").write_text("a\n", encoding="utf-8")
    from syntrans.cli.parse import main

    (tmp_path / "raw.txt").write_text(" A  man's dog.\n\nYes\n", encoding="utf-8")
    assert main([str(tmp_path / "raw.txt"), "-o", str(tmp_path / "raw.conllu"), "--parser", "flat", "--char-spans"]) == 0
    rows = [r.split("\t") for r in (tmp_path / "raw.conllu").read_text(encoding="utf-8").splitlines()
            if r and not r.startswith("#")]
    assert [(r[1], r[9]) for r in rows] == [("A", "start_char=0|end_char=1"), ("man's", "start_char=2|end_char=7"),
                                            ("dog.", "start_char=8|end_char=12"), ("Yes", "start_char=0|end_char=3")]
    for extra in ({"raw": True}, {"split_sentences": True}):
        job = ParseJob(str(tmp_path / "in.txt"), str(tmp_path / "out.conllu"), parser="flat", char_spans=True, **extra)
        with pytest.raises(InputError, match="--char-spans: the parser tokenizes and splits each raw line itself"):
            parse_job(job)


@pytest.mark.fast
def test_stanzas_tokens_are_the_words_with_their_spans():
    """StanzaParser with char_spans: each of stanza's tokens is a word spelled as the line spells it, with its span; a
    multi-word token's words (do + n't) collapse into the token, headed as on the tokenized route. A stand-in
    pipeline gives stanza's objects (no model runs)."""
    from types import SimpleNamespace as NS

    from syntrans.parsing.stanza_parser import StanzaParser

    def word(text, head, rel):
        return NS(text=text, head=head, deprel=rel)

    tokens = [NS(start_char=0, end_char=1, words=[word("I", 4, "nsubj")]),
              NS(start_char=2, end_char=7, words=[word("do", 4, "aux"), word("n't", 4, "advmod")]),
              NS(start_char=8, end_char=12, words=[word("know", 0, "root")]),
              NS(start_char=12, end_char=13, words=[word(".", 4, "punct")])]

    def pipeline(docs):
        assert [d.text for d in docs] == ["I don't know."]
        return [NS(sentences=[NS(tokens=tokens)])]

    parser = StanzaParser(pipeline=pipeline, views=("deps",), char_spans=True)
    ((s,),) = parser.parse_texts(["I  don't know."])
    assert s.words == ["I", "don't", "know", "."] and s.heads == [3, 3, 0, 3]
    assert s.deprels == ["nsubj", "aux", "root", "punct"] and s.spans == [(0, 1), (2, 7), (8, 12), (12, 13)]
    with pytest.raises(ValueError, match="use parse_texts"):
        parser.parse_batch([["I"]])
    tokens[:3] = [NS(start_char=0, end_char=7, words=[word("I don't", 2, "nsubj")]), tokens[2]]
    with pytest.raises(ValueError, match="stanza's tokenizer made \"I don't\" one token, across whitespace"):
        parser.parse_texts(["I don't know."])  # the driver gives such a line the fallback parse


@pytest.mark.fast
def test_the_length_filters_count_the_raw_lines_words(tmp_path):
    """--no-moses: tok/ holds the raw line (whitespace made single spaces, nothing escaped) and --max-len counts its
    whitespace-separated words: "A man's dog, running." is 4 words (Moses: 7 tokens)."""
    from dataclasses import replace

    from syntrans.prep.corpora import CORPORA, Clean
    from syntrans.prep.prepare_text import tokenize_corpus

    pair = replace(CORPORA["multi30k"].find_pair("de", "en"), clean=Clean(1, 4, None))
    text, tok = tmp_path / "text", tmp_path / "tok"
    text.mkdir()
    for split in ("train", "valid", "test"):
        (text / f"{split}.de").write_text("Ein Hund  läuft.\nEin Hund, der läuft, bellt.\n", encoding="utf-8")
        (text / f"{split}.en").write_text("A man's dog, running.\nA dog runs.\n", encoding="utf-8")
    info = tokenize_corpus(pair, text, tok, dict.fromkeys(("train", "valid", "test")), log=lambda m: None,
                           moses=False)
    assert info["dropped"]["too_long"] == 1 and info["sizes"]["train"] == 1
    assert (tok / "train.de").read_text(encoding="utf-8") == "Ein Hund läuft.\n"
    assert (tok / "train.en").read_text(encoding="utf-8") == "A man's dog, running.\n"
    moses = tokenize_corpus(pair, text, tmp_path / "moses", dict.fromkeys(("train", "valid", "test")),
                            log=lambda m: None)
    assert moses["sizes"]["train"] == 0 and "&apos;s" in (tmp_path / "moses" / "valid.en").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------------------- real text, stanza


@pytest.fixture(scope="module")
def raw_corpus(stanza_res, tmp_path_factory):
    """A slice of Multi30k (40/8/8 captions) prepared on the raw-text route: a SentencePiece model of 200 pieces
    trained on the raw text, both sides parsed by stanza's own tokenizer and pipeline (the tiny GUM-trained models)."""
    if not (MULTI30K / "train.de").is_file():
        pytest.skip(f"{MULTI30K} is absent (the shared real-data folder is optional)")
    from syntrans.prep import prepare_corpus
    from syntrans.prep.segmentation import Segmentation

    root = tmp_path_factory.mktemp("raw_sp")
    raw = root / "raw"
    raw.mkdir()
    for name, n in SIZES.items():
        for lang in ("de", "en"):
            lines = (MULTI30K / f"{name}.{lang}").read_text(encoding="utf-8").splitlines()[:n]
            (raw / f"{name}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    logs: list = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("STANZA_RESOURCES_DIR", str(stanza_res))
        prepared = prepare_corpus("multi30k", "de", "en", root / "out", raw_dir=raw, smoke=True, parser="stanza",
                                  bpe_ops=200, log=logs.append,
                                  segmentation=Segmentation("sentencepiece", raw_text=True))
    return prepared, logs, stanza_res


def test_the_parse_words_are_the_raw_lines_characters(raw_corpus):
    """Every word of stanza's parse carries its span in its raw line (the cleaned raw text, whitespace made single
    spaces), and the span spells the word; the pieces spell that line, with no Moses escape anywhere."""
    from syntrans.syntax.parsed import read_conllu
    from syntrans.syntax.word_spans import spanned_line

    prepared, logs, _ = raw_corpus
    out = prepared.out_dir
    assert prepared.text_route == "raw" and json.loads((out / "prepared.json").read_text())["text_route"] == "raw"
    assert "on the raw text (no Moses step)" in logs[-1], logs[-1]
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            tok = (out / "tok" / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
            raw_name = {"train": "train", "valid": "val", "test": "test_2016_flickr"}[split]
            raw = (out.parent / "raw" / f"{raw_name}.{lang}").read_text(encoding="utf-8").splitlines()
            if split != "train":  # the training pairs are cleaned (filters); valid and test are kept whole
                assert tok == [spanned_line(x) for x in raw]
            pieces = (out / "bpe" / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
            assert ["".join(p.split()).replace("\u2581", " ").strip() for p in pieces] == tok
            for escape in ("&apos;", "&quot;", "&amp;", "&#"):
                assert escape not in "\n".join(pieces)
            sentences = read_conllu(str(out / "parse" / f"{split}.{lang}.conllu"))
            assert {s.line for s in sentences} == set(range(1, len(tok) + 1))
            for s in sentences:
                line = tok[s.line - 1]
                assert s.spans is not None and [line[a:b] for a, b in s.spans] == s.words, (split, lang, s.line)
    assert set(prepared.crossing) == {f"{s}.{lang}" for s in ("train", "valid", "test") for lang in ("de", "en")}


@pytest.mark.slow
def test_the_worked_example_vanilla_then_pascal_and_the_distance_mask_added(raw_corpus, tmp_path,
                                                                             single_threaded_tools):
    """docs/commands.md's worked example at a tiny size, step by step: a vanilla Transformer trained by stock
    fairseq-train (translation task); PASCAL and the distance mask each added to it by warm start and fine-tuned
    (3 updates each; the log says what was loaded); fairseq-generate decodes every test caption
    of each (``--post-process sentencepiece``); syntrans-translate --no-moses on the raw test source writes, line for
    line, PASCAL's fairseq-generate hypotheses as they are (no Moses detokenization), and sacreBLEU scores them
    against the raw reference."""
    import sacrebleu

    prepared, _, res = raw_corpus
    data, vanilla = prepared.data_bin, tmp_path / "vanilla"
    common = [*SMALL, "--share-decoder-input-output-embed", "--label-smoothing", "0.1", "--optimizer", "adam",
              "--lr", "1e-3", "--max-tokens", "1000", "--max-update", "3", "--disable-validation", "--num-workers",
              "0", "--no-epoch-checkpoints", "--log-format", "simple", "--seed", "3"]
    log = run("fairseq-train", data, "--task", "translation", "--arch", "transformer_iwslt_de_en",
              "--criterion", "label_smoothed_cross_entropy", "--save-dir", vanilla, *common)
    assert "num_updates 3" in log, log[-2000:]
    n_test = SIZES["test_2016_flickr"]
    hyps = {}
    for arch in ("pascal_transformer_iwslt_de_en", "distance_transformer_iwslt_de_en"):
        save = tmp_path / arch
        log = run("fairseq-train", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", arch,
                  "--criterion", "syntax_label_smoothed_cross_entropy", "--save-dir", save, *common,
                  "--finetune-from-model", vanilla / "checkpoint_last.pt")
        # the vanilla checkpoint checked and loaded: every stock tensor (a parameter-free method adds none; one that
        # adds some lists them as new, tests/test_warm_start.py)
        assert "a checkpoint of a transformer_iwslt_de_en model: its Transformer flags are this run's" in log, log
        assert re.search(r"all \d+ of its tensors are this model's|\d+ tensors loaded from it, \d+ new", log), log
        losses = [float(x) for x in re.findall(r"\| loss ([-+0-9.eE]+|nan|inf) \|", log)]
        assert losses and all(math.isfinite(x) for x in losses), log[-2000:]
        out = run("fairseq-generate", data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                  "--path", save / "checkpoint_last.pt", "--gen-subset", "test", "--beam", "2", "--batch-size", "1",
                  "--max-len-b", "20", "--post-process", "sentencepiece", "--num-workers", "0")
        hyps[arch] = dict((int(i), h) for i, h in re.findall(r"^D-(\d+)\t[^\t]*\t(.*)$", out, flags=re.M))
        assert sorted(hyps[arch]) == list(range(n_test)), out[-2000:]
    pascal = tmp_path / "pascal_transformer_iwslt_de_en" / "checkpoint_last.pt"
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env.update(STANZA_RESOURCES_DIR=str(res), PYTHONWARNINGS="ignore")
    argv = [str(BIN / "syntrans-translate"), "--checkpoint", str(pascal), "--data", str(data),
            "--bpe", "sentencepiece", "--sentencepiece-model", str(prepared.codes), "--input",
            str(prepared.src_test_raw), "--device", "cpu", "--beam", "2", "--batch-size", "1", "--max-len-b", "20"]
    p = subprocess.run(argv + ["--no-moses"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    translations = p.stdout.splitlines()
    assert translations == [hyps["pascal_transformer_iwslt_de_en"][k] for k in range(n_test)], (p.stdout, hyps)
    refs = (MULTI30K / "test_2016_flickr.en").read_text(encoding="utf-8").splitlines()[:n_test]
    assert math.isfinite(sacrebleu.corpus_bleu(translations, [refs]).score)
    wrong = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert wrong.returncode == 2 and "took the raw route" in wrong.stderr and "add --no-moses" in wrong.stderr


def test_the_sidecars_are_built_from_the_spans(raw_corpus):
    """syntrans-preprocess on the raw route: the word sidecar of each line has a word index per piece and every parse
    word of the line gets a piece (none is refused in this corpus), in order."""
    from syntrans.data.sidecars import load_side
    from syntrans.syntax.parsed import read_conllu

    prepared, _, _ = raw_corpus
    side = load_side(str(prepared.data_bin), "test", "de", "en", "de")
    pieces = (prepared.out_dir / "bpe" / "test.de").read_text(encoding="utf-8").splitlines()
    by_line: dict = {}
    for s in read_conllu(str(prepared.out_dir / "parse" / "test.de.conllu")):
        by_line.setdefault(s.line, []).extend(s.words)
    for k, line in enumerate(pieces):
        index = side["word"][k].tolist()
        assert len(index) == len(line.split()) and index == sorted(index)
        assert set(index) == set(range(len(by_line[k + 1])))


@pytest.mark.fast
def test_prepare_refuses_no_moses_without_sentencepiece():
    from syntrans.prep import PrepError
    from syntrans.prep.segmentation import Segmentation

    with pytest.raises(PrepError, match="--no-moses applies SentencePiece to the raw text: expected --bpe "
                                        "sentencepiece, found --bpe subword_nmt"):
        Segmentation("subword_nmt", raw_text=True)
