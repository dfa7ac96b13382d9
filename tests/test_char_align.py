"""Parse words aligned to subword pieces by characters (syntrans.syntax.char_align, syntrans.prep.segmenters).

The pure tests are marked ``fast``. The real-data tests (shared GUM and Multi30k, skipped when absent) train a
tiny SentencePiece model, learn subword-nmt codes and a hand-made byte-level BPE vocabulary, and check that the
three segmentations align the same real sentences to the same parse words.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import SHARED_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from syntrans.prep.segmenters import SEGMENTERS, add_segmenter_args, make_segmenter
from syntrans.syntax.align import bpe_word_index, bpe_words
from syntrans.syntax.byte_bpe import PRETOKEN, ByteLevelBPE, byte_alphabet, from_symbols, to_symbols
from syntrans.syntax.char_align import align_marker_pieces, align_piece_bytes, align_piece_texts, align_spans, char_owners
from syntrans.syntax.piece_spans import (
    byte_offsets_to_spans,
    marker_piece_texts,
    pretokenized_spans,
    sequential_spans,
    text_piece_spans,
)

GUM_DEP = SHARED_DATA / "gum" / "dep"
MULTI30K = SHARED_DATA / "multi30k"
fast = pytest.mark.fast


def sp_texts(pieces):
    """SentencePiece pieces as the text each spells."""
    return [p.replace("\u2581", " ") for p in pieces]


# --------------------------------------------------------------------------- the @@ route = bpe_word_index

WORD = st.text(st.characters(blacklist_categories=("Z", "C")), min_size=1, max_size=8).filter(
    lambda w: not any(c.isspace() for c in w) and not w.endswith("@@"))


@st.composite
def segmented_line(draw):
    """(words, subword-nmt pieces of them): each word cut at random places, every piece but a word's last marked."""
    words = draw(st.lists(WORD, min_size=1, max_size=12))
    pieces = []
    for w in words:
        cuts = sorted(draw(st.sets(st.integers(1, len(w) - 1), max_size=len(w) - 1))) if len(w) > 1 else []
        parts = [w[a:b] for a, b in zip([0] + cuts, cuts + [len(w)])]
        pieces += [p + "@@" for p in parts[:-1]] + [parts[-1]]
    return words, pieces


@fast
@settings(max_examples=200, deadline=None)
@given(segmented_line())
def test_marker_route_equals_bpe_word_index(line):
    words, pieces = line
    assert bpe_words(pieces) == words
    got = align_marker_pieces(pieces, words)
    assert got.word_index == bpe_word_index(pieces)
    assert got.crossing == 0 and got.uncovered == []


@fast
def test_marker_route_open_end_and_errors():
    # a hypothesis stopped mid-word: the open word is the last one, as bpe_word_index(open_end=True) has it
    assert align_marker_pieces(["a", "b@@"], ["a", "b"], open_end=True).word_index == [0, 1]
    assert bpe_word_index(["a", "b@@"], open_end=True) == [0, 1]
    with pytest.raises(ValueError, match="continuation marker"):
        marker_piece_texts(["a", "b@@"])
    with pytest.raises(ValueError, match=r"test\.de:3: piece 1 'cut' has 'u' where the line has 'a'"):
        align_marker_pieces(["the", "cut"], ["the", "cat"], where="test.de:3")
    with pytest.raises(ValueError, match="has a space where the line has 'a'"):
        align_marker_pieces(["c", "at"], ["cat"], where="x")  # two words in the pieces, one in the parse


# --------------------------------------------------------------------------- the rule, crossing pieces

@fast
def test_crossing_piece_counted_first_character_rule():
    text = "The dog."
    words, spans = ["The", "dog", "."], [(0, 3), (4, 7), (7, 8)]
    got = align_piece_texts(text, words, spans, sp_texts(["▁The", "▁dog."]), where="l1")
    assert got.word_index == [0, 1] and got.crossing == 1 and got.uncovered == [2]
    # the first non-space character decides, not the majority: "abb" is word 0 though two of its three are word 1
    got = align_piece_texts("abb", ["a", "bb"], [(0, 1), (1, 3)], ["abb"])
    assert got.word_index == [0] and got.crossing == 1 and got.uncovered == [1]
    # a piece across a word boundary whose next word still has pieces of its own: counted, nothing uncovered
    got = align_piece_texts("ab cd", ["ab", "cd"], [(0, 2), (3, 5)], ["a", "b c", "d"])
    assert got.word_index == [0, 0, 1] and got.crossing == 1 and got.uncovered == []


@fast
def test_whitespace_only_and_empty_pieces_open_the_next_word():
    text = "Ein 1⁄2 Gras"
    words, spans = ["Ein", "1⁄2", "Gras"], [(0, 3), (4, 7), (8, 12)]
    got = align_piece_texts(text, words, spans, sp_texts(["▁Ein", "▁", "1", "⁄2", "▁Gras"]))
    assert got.word_index == [0, 1, 1, 1, 2] and got.crossing == 0
    # SentencePiece's offsets: "…" normalised into three pieces, the first two spanning nothing before it
    spans_p = byte_offsets_to_spans("a…", [(0, 1), (1, 1), (1, 1), (1, 4)])
    assert spans_p == [(0, 1), (1, 1), (1, 1), (1, 2)]
    got = align_spans("a…", ["a", "…"], [(0, 1), (1, 2)], spans_p)
    assert got.word_index == [0, 1, 1, 1] and got.crossing == 0
    with pytest.raises(ValueError, match="only whitespace .* no word follows"):
        align_spans("a ", ["a"], [(0, 1)], [(0, 1), (1, 2)], where="l2")


@fast
def test_byte_pieces_split_a_character():
    text = "Zoë ist"
    pieces = [b"Zo", b"\xc3", b"\xab", b" ist"]
    assert align_piece_bytes(text, ["Zoë", "ist"], [(0, 3), (4, 7)], pieces).word_index == [0, 0, 0, 1]
    with pytest.raises(ValueError, match=r"l3: the pieces' bytes differ from the line's at byte 3 \(piece 2"):
        align_piece_bytes(text, ["Zoë", "ist"], [(0, 3), (4, 7)], [b"Zo", b"\xc3", b"\xa4", b" ist"], where="l3")


@fast
def test_multi_word_tokens_without_offsets():
    # "don't" = "do" + "n't": the token's span shared out; byte-level " don" crosses do|n't and is counted
    text = "I don't know"
    words, spans = ["I", "do", "n't", "know"], [(0, 1), (2, 7), (2, 7), (8, 12)]
    assert char_owners(text, words, spans)[2:7] == [1, 1, 2, 2, 2]
    got = align_piece_bytes(text, words, spans, [b"I", b" don", b"'t", b" know"])
    assert got.word_index == [0, 1, 2, 3] and got.crossing == 1 and got.uncovered == []
    # "zum" = "zu" + "dem" does not spell the token: all of it is the first word's, the second is uncovered
    got = align_piece_texts("zum Haus", ["zu", "dem", "Haus"], [(0, 3), (0, 3), (4, 8)], ["zu", "m", " Haus"])
    assert got.word_index == [0, 0, 2] and got.crossing == 0 and got.uncovered == [1]


# --------------------------------------------------------------------------- bad input

@fast
@pytest.mark.parametrize("text, words, spans, pieces, message", [
    ("a cat", ["a", "cat"], [(0, 1), (2, 5)], ["a", " cut"], "piece 1 ' cut' has 'u' where the line has 'a'"),
    ("a cat", ["a", "cat"], [(0, 1), (2, 5)], ["a", "cat"], "the line has a space at character 1 before 'c'"),
    ("acat", ["acat"], [(0, 4)], ["a", " cat"], "piece 1 ' cat' has a space where the line has 'c'"),
    ("a cat", ["a", "cat"], [(0, 1), (2, 5)], ["a", " ca"], "the pieces end at character 4 but the line goes on"),
    ("a cat", ["a", "cat"], [(0, 1), (2, 5)], ["a", " cats"], "piece 1 ' cats' goes on with 's' after the line ends"),
    ("a, cat", ["a", "cat"], [(0, 1), (3, 6)], ["a", ",", " cat"], "piece 1 holds ',' .*which lies in no parse word"),
    ("a cat", ["a", "cat"], [(0, 2), (1, 5)], ["a", " cat"], "word 1 'cat' starts at character 1, inside"),
    ("a cat", ["a", "cat"], [(0, 1), (2, 9)], ["a", " cat"], r"word 1 'cat' has span \(2, 9\) outside"),
    ("a cat", ["a", "cat"], [(0, 1)], ["a", " cat"], "2 words but 1 word spans"),
])
def test_bad_input_names_the_line(text, words, spans, pieces, message):
    with pytest.raises(ValueError, match=r"^corpus\.en:12: " + message):
        align_piece_texts(text, words, spans, pieces, where="corpus.en:12")


@fast
def test_span_errors():
    with pytest.raises(ValueError, match=r"l4: character 2 'c' lies in no piece"):
        align_spans("a cat", ["a", "cat"], [(0, 1), (2, 5)], [(0, 1), (3, 5)], where="l4")
    with pytest.raises(ValueError, match="out of order"):
        align_spans("a b", ["a", "b"], [(0, 1), (2, 3)], [(2, 3), (0, 1)], where="l5")
    with pytest.raises(ValueError, match=r"l6: word 1 'dog' is not at character 2"):
        sequential_spans("a cat", ["a", "dog"], where="l6")
    assert sequential_spans("  a  cat ", ["a", "cat"]) == [(2, 3), (5, 8)]
    assert pretokenized_spans(["a", "cat"]) == ("a cat", [(0, 1), (2, 5)])
    # SentencePiece's dummy prefix and collapsed runs of spaces are not differences
    assert text_piece_spans("a   b", [" a", " b"]) == [(0, 1), (1, 5)]


# --------------------------------------------------------------------------- byte-level BPE (fairseq's gpt2)

@fast
def test_byte_alphabet_round_trip():
    table = byte_alphabet()
    assert len(set(table)) == 256 and table[ord("a")] == "a" and table[ord(" ")] == "\u0120"  # Ġ
    data = "Zoë läuft  über\n".encode("utf-8")
    assert from_symbols(to_symbols(data)) == data
    with pytest.raises(ValueError, match="not a byte-level BPE character"):
        from_symbols("a\u0400")


def learn_byte_merges(lines, n_merges):
    """A tiny byte-level BPE vocabulary for the tests: (vocab, merges) learned greedily (most frequent pair) on
    the pre-tokens of ``lines``."""
    counts = Counter(to_symbols(t.encode("utf-8")) for line in lines for t in PRETOKEN.findall(line))
    seqs = {tuple(w): c for w, c in counts.items()}
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for s, c in seqs.items():
            for p in zip(s, s[1:]):
                pairs[p] += c
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        new = {}
        for s, c in seqs.items():
            out, k = [], 0
            while k < len(s):
                if k + 1 < len(s) and (s[k], s[k + 1]) == best:
                    out.append(s[k] + s[k + 1])
                    k += 2
                else:
                    out.append(s[k])
                    k += 1
            new[tuple(out)] = new.get(tuple(out), 0) + c
        seqs = new
    vocab = {sym: i for i, sym in enumerate(list(byte_alphabet()) + [a + b for a, b in merges])}
    return vocab, merges


def write_gpt2_files(folder: Path, vocab, merges):
    enc, bpe = folder / "encoder.json", folder / "vocab.bpe"
    enc.write_text(json.dumps(vocab), encoding="utf-8")
    bpe.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    return enc, bpe


@fast
def test_hand_made_byte_bpe(tmp_path):
    merges = [("Ġ", "d"), ("o", "n"), ("Ġd", "on"), ("'", "t"), ("Ã", "¼")]
    vocab = {sym: i for i, sym in enumerate(list(byte_alphabet()) + [a + b for a, b in merges])}
    seg = make_segmenter(argparse.Namespace(bpe="gpt2", gpt2_encoder_json=str(write_gpt2_files(tmp_path, vocab,
                                            merges)[0]), gpt2_vocab_bpe=str(tmp_path / "vocab.bpe")))
    pieces = seg.encode("I don't über")
    assert [seg.bpe.symbols[int(p)] for p in pieces] == ["I", "Ġdon", "'t", "Ġ", "Ã¼", "b", "e", "r"]
    words, spans = ["I", "do", "n't", "über"], [(0, 1), (2, 7), (2, 7), (8, 12)]
    got = seg.align("I don't über", words, spans, pieces, where="l7")
    assert got.word_index == [0, 1, 2, 3, 3, 3, 3, 3] and got.crossing == 1
    with pytest.raises(ValueError, match="l7: gpt2 piece 0 '<unk>' is not an encoder.json id"):
        seg.align("I", ["I"], [(0, 1)], ["<unk>"], where="l7")


def test_byte_bpe_ids_are_fairseqs(tmp_path):
    """Our byte-level encoder gives fairseq's own ids (fairseq's gpt2 encoder on the same files)."""
    from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

    lines = (MULTI30K / "train.de").read_text(encoding="utf-8").splitlines()[:200] if MULTI30K.is_dir() else \
        ["Ein Mädchen läuft über grünes Gras.", "A man's hat, isn't it?  Yes: 1999 —“quoted”."]
    vocab, merges = learn_byte_merges(lines, 80)
    enc, bpe = write_gpt2_files(tmp_path, vocab, merges)
    ours, theirs = ByteLevelBPE.load(str(enc), str(bpe)), get_encoder(str(enc), str(bpe))
    for line in lines + ["  spaces  and\ttabs ", "I'll we've 'd 汉字 ½"]:
        assert ours.encode(line) == theirs.encode(line), line
        assert b"".join(ours.piece_bytes(i) for i in ours.encode(line)).decode("utf-8") == theirs.decode(
            theirs.encode(line))


# --------------------------------------------------------------------------- the registry

@fast
def test_registry_flags(tmp_path):
    parser = argparse.ArgumentParser()
    add_segmenter_args(parser)
    assert sorted(SEGMENTERS) == ["gpt2", "sentencepiece", "subword_nmt"]
    with pytest.raises(ValueError, match="--bpe sentencepiece needs --sentencepiece-model"):
        make_segmenter(parser.parse_args(["--bpe", "sentencepiece"]))
    with pytest.raises(ValueError, match="--bpe subword_nmt needs --bpe-codes"):
        make_segmenter(parser.parse_args([]))
    with pytest.raises(ValueError, match="is an address; give a local copy"):
        make_segmenter(parser.parse_args(["--bpe", "gpt2", "--gpt2-encoder-json", "https://x/encoder.json",
                                          "--gpt2-vocab-bpe", "v"]))
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\nc a\nca t</w>\n", encoding="utf-8")
    seg = make_segmenter(parser.parse_args(["--bpe-codes", str(codes)]))
    assert seg.encode("a cat cats") == ["a", "cat", "ca@@", "t@@", "s"]
    got = seg.align("a cat cats", ["a", "cat", "cats"], pretokenized_spans(["a", "cat", "cats"])[1])
    assert got.word_index == [0, 1, 2, 2, 2] == bpe_word_index(seg.encode("a cat cats"))


# --------------------------------------------------------------------------- real sentences

def gum_sentences(limit_docs=None):
    """(text, words, word spans) of each GUM sentence: the words of a multi-word token get the token's span."""
    out = []
    for path in sorted(GUM_DEP.glob("*.conllu"))[:limit_docs]:
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            text = next((ln[len("# text = "):] for ln in block.splitlines() if ln.startswith("# text = ")), None)
            rows = [ln.split("\t") for ln in block.splitlines() if ln and not ln.startswith("#")]
            if text is None or not rows:
                continue
            tokens, words, token_of_word, end = [], [], [], 0
            for r in rows:
                if "." in r[0]:
                    continue
                if "-" in r[0]:
                    tokens.append(r[1])
                    end = int(r[0].split("-")[1])
                    continue
                words.append(r[1])
                if int(r[0]) > end:
                    tokens.append(r[1])
                token_of_word.append(len(tokens) - 1)
            tspans = sequential_spans(text, tokens, where=f"{path.name}")
            out.append((text, words, [tspans[t] for t in token_of_word]))
    return out


def multi30k_sentences(n):
    """(text, words, spans) of the first ``n`` lines of Multi30k val (en and de): Moses tokens (unescaped) of the
    raw line stand in for a parse of it."""
    from sacremoses import MosesTokenizer

    out = []
    for lang in ("en", "de"):
        tok = MosesTokenizer(lang=lang)
        for line in (MULTI30K / f"val.{lang}").read_text(encoding="utf-8").splitlines()[:n]:
            words = tok.tokenize(line, escape=False)
            out.append((line, words, sequential_spans(line, words, where=f"val.{lang}")))
    return out


@pytest.fixture(scope="module")
def real_models(tmp_path_factory):
    """The three segmenters, trained on Multi30k train (en+de): subword-nmt codes (500 merges), SentencePiece
    (vocabulary 500), a byte-level BPE vocabulary (120 merges)."""
    if not MULTI30K.is_dir():
        pytest.skip(f"{MULTI30K} is absent (the shared real-data folder is optional)")
    import sentencepiece
    from sacremoses import MosesTokenizer
    from subword_nmt.learn_bpe import learn_bpe

    folder = tmp_path_factory.mktemp("segmenters")
    lines = []
    for lang in ("en", "de"):
        lines += (MULTI30K / f"train.{lang}").read_text(encoding="utf-8").splitlines()[:1500]
    (folder / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tok = MosesTokenizer(lang="en")
    (folder / "train.tok").write_text("\n".join(" ".join(tok.tokenize(x, escape=False)) for x in lines) + "\n",
                                      encoding="utf-8")
    with open(folder / "train.tok", encoding="utf-8") as fin, open(folder / "codes", "w", encoding="utf-8") as fout:
        learn_bpe(fin, fout, 500)
    sentencepiece.SentencePieceTrainer.train(input=str(folder / "train.txt"), model_prefix=str(folder / "sp"),
                                             vocab_size=500, minloglevel=2, num_threads=1)
    enc, bpe = write_gpt2_files(folder, *learn_byte_merges(lines[:300] + lines[1500:1800], 120))
    parser = argparse.ArgumentParser()
    add_segmenter_args(parser)
    return {
        "subword_nmt": make_segmenter(parser.parse_args(["--bpe-codes", str(folder / "codes")])),
        "sentencepiece": make_segmenter(parser.parse_args(["--bpe", "sentencepiece", "--sentencepiece-model",
                                                           str(folder / "sp.model")])),
        "gpt2": make_segmenter(parser.parse_args(["--bpe", "gpt2", "--gpt2-encoder-json", str(enc),
                                                  "--gpt2-vocab-bpe", str(bpe)])),
    }


def piece_chars(text, spans):
    """The non-space character positions of each piece span."""
    return [[j for j in range(a, b) if not text[j].isspace()] for a, b in spans]


def check_sentence(name, seg, text, words, spans, where):
    """Align with ``seg`` and check the result against the rule computed independently; returns the alignment."""
    if name == "subword_nmt":
        line = " ".join(words)  # the tokenized line the parse was made of (pretokenized)
        pieces = seg.encode(line)
        got = seg.align(line, words, pretokenized_spans(words)[1], pieces, where=where)
        assert got.word_index == bpe_word_index(pieces), where
        assert got.crossing == 0 and got.uncovered == [], where
        return got
    pieces = seg.encode(text)
    got = seg.align(text, words, spans, pieces, where=where)
    assert len(got.word_index) == len(pieces)
    owner = char_owners(text, words, spans)
    if name == "gpt2":
        data = [seg.bpe.piece_bytes(int(p)) for p in pieces]
        assert b"".join(data) == text.encode("utf-8"), where
        pos, pspans = 0, []
        for d in data:
            pspans.append((pos, pos + len(d)))
            pos += len(d)
        pspans = byte_offsets_to_spans(text, pspans)
    else:
        proto = seg.sp.encode(text, out_type="proto")
        pspans = byte_offsets_to_spans(text, [(p.begin, p.end) for p in proto.pieces])
    chars = piece_chars(text, pspans)
    crossing = 0
    for k, cs in enumerate(chars):
        if cs:
            assert got.word_index[k] == owner[cs[0]], (where, k)
            crossing += len({owner[j] for j in cs}) > 1
        else:  # opens the next word
            nxt = next(j for j in range(pspans[k][0], len(text)) if not text[j].isspace())
            assert got.word_index[k] == owner[nxt], (where, k)
    assert got.crossing == crossing, where
    # the words no crossing piece touches are spelled by their own pieces, exactly
    touched = {owner[j] for cs in chars if len({owner[j] for j in cs}) > 1 for j in cs}
    for w, word in enumerate(words):
        if w in touched or spans.count(spans[w]) > 1:  # a crossing piece's, or one of a multi-word token
            continue
        # (a character split between two byte-level pieces is in both)
        spelled = "".join(text[j] for j in sorted({j for k, cs in enumerate(chars) if got.word_index[k] == w
                                                   for j in cs}))
        assert spelled == "".join(word.split()), (where, w, word, spelled)
    assert set(got.uncovered) <= touched
    return got


def test_three_segmentations_on_real_sentences(real_models):
    sentences = [("multi30k", *s) for s in multi30k_sentences(100)]
    if GUM_DEP.is_dir():
        sentences += [("gum", *s) for s in gum_sentences()]
    totals = {name: Counter() for name in real_models}
    for k, (corpus, text, words, spans) in enumerate(sentences):
        for name, seg in real_models.items():
            got = check_sentence(name, seg, text, words, spans, where=f"{corpus} sentence {k}")
            totals[name]["crossing"] += got.crossing
            totals[name]["uncovered"] += len(got.uncovered)
            totals[name]["pieces"] += len(got.word_index)
    assert totals["subword_nmt"]["crossing"] == 0
    # pieces across a parse-word boundary occur and are counted: SentencePiece's "▁dog." style pieces
    # (a piece whose characters fall in two Moses tokens) and byte-level pieces across multi-word tokens
    assert totals["sentencepiece"]["crossing"] > 0, totals
    if GUM_DEP.is_dir():
        assert totals["gpt2"]["crossing"] > 0, totals


def test_marker_route_on_gum_and_multi30k(real_models):
    """The @@ route gives bpe_word_index's indices on every real sentence (GUM words pretokenized)."""
    seg = real_models["subword_nmt"]
    sentences = multi30k_sentences(300) + (gum_sentences() if GUM_DEP.is_dir() else [])
    for k, (_text, words, _spans) in enumerate(sentences):
        pieces = seg.encode(" ".join(words))
        assert align_marker_pieces(pieces, words, where=f"sentence {k}").word_index == bpe_word_index(pieces)


def test_sentencepiece_pieces_from_a_file(real_models):
    """Pieces read back from a file (not what the model encodes the line into now) align by their text; a
    character SentencePiece normalised differs from the line and is an error naming it."""
    seg = real_models["sentencepiece"]
    text = "A dog runs."
    words, spans = ["A", "dog", "runs", "."], [(0, 1), (2, 5), (6, 10), (10, 11)]
    got = seg.align(text, words, spans, ["▁A", "▁d", "og", "▁run", "s."], where="l8")
    assert got.word_index == [0, 1, 1, 2, 2] and got.crossing == 1 and got.uncovered == [3]
    # what the model encodes now: its offsets say that the three "." come from "…"
    assert seg.encode("A dog…") == ["▁A", "▁dog", ".", ".", "."]
    got = seg.align("A dog…", ["A", "dog", "…"], [(0, 1), (2, 5), (5, 6)], ["▁A", "▁dog", ".", ".", "."])
    assert got.word_index == [0, 1, 2, 2, 2] and got.crossing == 0
    with pytest.raises(ValueError, match=r"l9: piece 3 '\.' has '\.' where the line has '…'"):
        seg.align("A dog…", ["A", "dog", "…"], [(0, 1), (2, 5), (5, 6)], ["▁A", "▁d", "og", ".", ".", "."], where="l9")
