"""Recipes of syntrans-prepare: what a recipe changes in a corpus' settings, the filters it adds (length, ratio,
language) with their drop counts, the language identifier on real sentences, per-language BPE merges, word-level
data, and the record of the recipe that refuses to mix two recipes in one folder."""
import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
from helpers import SHARED_DATA

from syntrans.prep import CORPORA, PrepError, prepare_corpus
from syntrans.prep.corpora import Clean, PairData, aspec_je_train
from syntrans.prep.prepare_text import tokenize_corpus
from syntrans.prep.recipe import OFF, Recipe, apply_recipe
from syntrans.prep.tokenization import TokenizerSpec, tokenize_line

pytestmark = pytest.mark.usefixtures("single_threaded_tools")


def _changed(before: PairData, after: PairData) -> dict:
    """{field: new value} of the PairData fields that differ (splits compared too, though compare=False)."""
    return {f.name: getattr(after, f.name) for f in dataclasses.fields(PairData)
            if getattr(before, f.name) != getattr(after, f.name)}


# ---------------------------------------------------------------------------------------------
# what a recipe changes


@pytest.mark.fast
def test_a_recipe_changes_exactly_its_settings():
    nc11 = CORPORA["nc11"].find_pair("en", "de")
    assert nc11.clean == Clean(1, 175, 1.5) and not nc11.lowercase and nc11.bpe_ops == 16000  # the registry's
    assert apply_recipe(nc11, None) is nc11 and apply_recipe(nc11, Recipe()) is nc11
    got = apply_recipe(nc11, Recipe(max_len=80, ratio=OFF, lowercase=True, langid=True, bpe_ops=8000))
    assert _changed(nc11, got) == {"clean": Clean(1, 80, None), "lowercase": True, "langid": True, "bpe_ops": 8000}
    # only the ratio: the corpus' length limit stays
    assert _changed(nc11, apply_recipe(nc11, Recipe(ratio=2))) == {"clean": Clean(1, 175, 2.0)}

    aspec = CORPORA["aspec"].find_pair("ja", "en")
    parts = aspec_je_train(2)
    got = apply_recipe(aspec, Recipe(train_parts=parts, train_limit=1_500_000, bpe_ops_by_lang={"ja": 16000, "en": 8000},
                                     aggressive_dashes=True, normalize_punctuation=True))
    changed = _changed(aspec, got)
    splits = changed.pop("splits")
    assert changed == {"train_limit": 1_500_000, "bpe_ops_by_lang": (("en", 8000), ("ja", 16000)),
                       "aggressive_dashes": True, "normalize_punctuation": True}
    assert got.merges() == {"ja": 16000, "en": 8000} and not got.joint
    for direction in ("ja-en", "en-ja"):  # the training files of both directions, valid and test kept
        assert splits[direction]["train"] == parts
        assert [p.files for p in parts] == [(("*", ("ASPEC-JE/train/train-1.txt", "ASPEC/ASPEC-JE/train/train-1.txt")),),
                                            (("*", ("ASPEC-JE/train/train-2.txt", "ASPEC/ASPEC-JE/train/train-2.txt")),)]
        for split in ("valid", "test"):
            assert splits[direction][split] == aspec.splits[direction][split]

    # equal settings, however written, are one recipe with one digest
    assert Recipe(bpe_ops_by_lang={"ja": 16000, "en": 8000}, ratio=2) == Recipe(bpe_ops_by_lang=(("en", 8000), ("ja", 16000)),
                                                                              ratio=2.0)
    assert Recipe(ratio=2).digest() == Recipe(ratio=2.0).digest() != Recipe(ratio=3).digest()
    assert Recipe().digest() == "corpus"

    ldc = CORPORA["ldc"].find_pair("zh", "en")
    assert _changed(ldc, apply_recipe(ldc, Recipe(word_vocab=50000, max_len=150, ratio=OFF))) == {
        "word_vocab": 50000, "clean": Clean(1, 150, None)}


@pytest.mark.fast
def test_recipes_that_cannot_apply_name_the_setting():
    with pytest.raises(PrepError, match=r"recipe max_len: expected a whole number >= 1 or 'off', found 0"):
        Recipe(max_len=0)
    with pytest.raises(PrepError, match=r"recipe ratio: expected a number >= 1 or 'off', found 0.5"):
        Recipe(ratio=0.5)
    with pytest.raises(PrepError, match=r"recipe lowercase: expected True, False or None, found 'yes'"):
        Recipe(lowercase="yes")
    with pytest.raises(PrepError, match=r"need separate BPE \(joint=False\), found joint=True"):
        Recipe(bpe_ops_by_lang={"zh": 100, "ja": 100}, joint=True)
    with pytest.raises(PrepError, match="word_vocab .* means no BPE"):
        Recipe(word_vocab=100, bpe_ops=100)
    zh_ja = CORPORA["aspec"].find_pair("zh", "ja")
    with pytest.raises(PrepError, match="expected merges for zh and ja .*found en, ja"):
        apply_recipe(zh_ja, Recipe(bpe_ops_by_lang={"en": 100, "ja": 100}))
    with pytest.raises(PrepError, match=r"expected columns for zh and ja in the aspec part .* found columns \('ja', 'en'\)"):
        apply_recipe(zh_ja, Recipe(train_parts=aspec_je_train(1)))
    synthetic = CORPORA["synthetic"].find_pair("src", "tgt")
    with pytest.raises(PrepError, match="recipe max_len, langid: .*gold parse for every line"):
        apply_recipe(synthetic, Recipe(max_len=10, langid=True))
    with pytest.raises(PrepError, match="recipe lowercase: .*comes tokenized"):
        apply_recipe(synthetic, Recipe(lowercase=True))
    if importlib.util.find_spec("langid") is not None:
        from syntrans.prep.langid_filter import check_languages

        check_languages(("de", "en"))
        with pytest.raises(PrepError, match="langid does not know 'src', 'tgt'"):
            check_languages(("src", "tgt"))


@pytest.mark.fast
def test_command_line_flags_build_the_recipe(tmp_path, capsys):
    from syntrans.cli.prepare import build_parser, main, recipe_from_args

    args = build_parser().parse_args(
        ["nc11", "--out", "x", "--max-len", "80", "--ratio", "off", "--lowercase", "--langid", "--separate-bpe",
         "--bpe-ops-per-lang", "de=100,en=200", "--train-limit", "5", "--normalize-punctuation"])
    assert recipe_from_args(args) == Recipe(max_len=80, ratio=OFF, lowercase=True, langid=True, joint=False,
                                            bpe_ops_by_lang={"de": 100, "en": 200}, train_limit=5,
                                            normalize_punctuation=True)
    assert recipe_from_args(build_parser().parse_args(["nc11", "--out", "x"])) is None
    assert recipe_from_args(build_parser().parse_args(["nc11", "--out", "x", "--cased", "--word-vocab", "9"])) == \
        Recipe(lowercase=False, word_vocab=9)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["nc11", "--out", "x", "--ratio", "0.5"])
    assert "must be a number >= 1 or off, found 0.5" in capsys.readouterr().err
    out = tmp_path / "s"
    assert main(["synthetic", "--out", str(out), "--max-len", "10"]) == 2
    err = capsys.readouterr().err
    assert "recipe max_len: " in err and "gold parse for every line" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.fast
def test_normalisation_and_non_printing_characters():
    line = "Er sagte „Hallo“ – 5 %\u200bok"
    assert tokenize_line(line, TokenizerSpec("de")) == "Er sagte „ Hallo “ – 5 % \u200b ok"
    # normalize-punctuation: „ “ → ", – → -; remove-non-printing: the zero-width space (category Cf) → a space
    assert tokenize_line(line, TokenizerSpec("de", normalize_punctuation=True, remove_non_printing=True)) == \
        "Er sagte &quot; Hallo &quot; - 5 % ok"
    assert tokenize_line("a\x07b\u200bc", TokenizerSpec("en", remove_non_printing=True)) == "a b c"
    # pre-segmented text keeps its spacing (normalize-punctuation would join " :" and "5 %")
    assert tokenize_line("日本 ( 語 ) : 5 %", TokenizerSpec("ja", segmented=True, normalize_punctuation=True)) == \
        "日本 ( 語 ) : 5 %"


# ---------------------------------------------------------------------------------------------
# the filters and their counts

# (de, en) raw training pairs; the filters: max_len 5, ratio 1.5, language; train_limit 8 (the 9th is never read)
TRAIN = [
    ("eins zwei drei", "one two three"),                        # kept
    ("eins zwei drei vier fünf sechs", "one two three"),        # too_long (6 > 5)
    ("eins", "one two three"),                                  # ratio (3 > 1.5)
    ("Hallo Welt.", "Hello world."),                            # language: the de side is identified as en
    ("gut", ""),                                                # empty
    ("noch ein Satz", "das ist deutsch"),                       # language: the en side is identified as de
    ("eins zwei", "one two"),                                   # kept
    ("sechs sieben acht neun zehn elf", "Das ist kein Englisch"),  # too_long first, though its en side is de too
    ("jenseits der Grenze", "beyond the limit"),               # not read (train_limit 8)
]
WRONG = {"Hallo Welt.": "en", "das ist deutsch": "de", "Das ist kein Englisch": "de"}


def _write_text(text_dir: Path, train) -> None:
    text_dir.mkdir(parents=True, exist_ok=True)
    for split, pairs in (("train", train), ("valid", [("Hallo.", "Hello.")]), ("test", [("Tschüss.", "Bye.")])):
        for k, lang in enumerate(("de", "en")):
            (text_dir / f"{split}.{lang}").write_text("".join(p[k] + "\n" for p in pairs), encoding="utf-8")


@pytest.mark.fast
def test_length_ratio_and_language_filters_drop_and_count(tmp_path):
    _write_text(tmp_path / "text", TRAIN)
    side = {p[k]: lang for p in TRAIN for k, lang in enumerate(("de", "en"))}
    seen = []

    def classify(text):
        seen.append(text)
        return WRONG.get(text, side.get(text, "xx"))

    pair = PairData(("de", "en"), {}, Clean(1, 5, 1.5), lowercase=False, bpe_ops=100, langid=True, train_limit=8)
    log = []
    info = tokenize_corpus(pair, tmp_path / "text", tmp_path / "tok", dict.fromkeys(("train", "valid", "test")),
                           log=log.append, classify=classify)
    assert info["dropped"] == {"empty": 1, "too_short": 0, "too_long": 2, "ratio": 1, "language": 2}
    assert info["read"] == {"train": 8, "valid": 1, "test": 1}
    assert info["sizes"] == {"train": 2, "valid": 1, "test": 1}
    assert (tmp_path / "tok" / "train.en").read_text(encoding="utf-8").splitlines() == ["one two three", "one two"]
    # the raw text of the 8 training pairs is classified, never the tokenized text nor valid/test
    assert sorted(seen) == sorted(x for p in TRAIN[:8] for x in p)
    assert any("language 2" in m and "the first 8 training pairs only" in m for m in log)

    # without the language filter nothing is classified and there is no language count
    seen.clear()
    info = tokenize_corpus(dataclasses.replace(pair, langid=False, train_limit=None), tmp_path / "text",
                           tmp_path / "tok2", dict.fromkeys(("train", "valid", "test")), classify=classify,
                           log=lambda m: None)
    assert seen == [] and info["dropped"] == {"empty": 1, "too_short": 0, "too_long": 2, "ratio": 1}
    assert info["sizes"]["train"] == 5  # 1, 4, 6, 7 and the 9th, read now


@pytest.mark.fast
def test_langid_identifies_real_sentences():
    pytest.importorskip("langid")
    from syntrans.prep.langid_filter import classify

    sentences = {
        "de": "Die Katze schläft auf dem Sofa, weil es draußen den ganzen Tag regnet.",
        "en": "The cat is sleeping on the sofa because it has been raining all day.",
        "tr": "Kedi bütün gün yağmur yağdığı için kanepede uyuyor.",
        "ro": "Pisica doarme pe canapea pentru că plouă toată ziua afară.",
        "ja": "猫 は 一日中 雨 が 降って いる ので ソファ で 寝て いる 。",
        "zh": "猫 在 沙发 上 睡觉 , 因为 外面 下 了 一整天 的 雨 。",
    }
    assert {lang: classify(text) for lang, text in sentences.items()} == {lang: lang for lang in sentences}


MULTI30K = SHARED_DATA / "multi30k"


def test_language_filter_on_real_pairs_with_swapped_sides(tmp_path):
    langid = pytest.importorskip("langid")
    if not (MULTI30K / "train.de").exists():
        pytest.skip(f"{MULTI30K} is absent (the shared real-data folder is optional)")
    from syntrans.prep.langid_filter import classify

    de = (MULTI30K / "train.de").read_text(encoding="utf-8").splitlines()[:300]
    en = (MULTI30K / "train.en").read_text(encoding="utf-8").splitlines()[:300]
    # our classifier gives langid's own answer (langid.classify, the package's API) on every line
    assert [classify(x) for x in de + en] == [langid.classify(x)[0] for x in de + en]
    swapped = set(range(0, 300, 30))  # 10 pairs whose sides are exchanged
    pairs = [(en[k], de[k]) if k in swapped else (de[k], en[k]) for k in range(300)]
    _write_text(tmp_path / "text", pairs)
    pair = PairData(("de", "en"), {}, None, lowercase=False, bpe_ops=100, langid=True)
    info = tokenize_corpus(pair, tmp_path / "text", tmp_path / "tok", dict.fromkeys(("train", "valid", "test")),
                           workers=2, log=lambda m: None)
    wrong = {k for k, (x, y) in enumerate(pairs) if langid.classify(x)[0] != "de" or langid.classify(y)[0] != "en"}
    assert swapped <= wrong  # every swapped pair is caught
    assert info["dropped"]["language"] == len(wrong) and info["sizes"]["train"] == 300 - len(wrong)
    kept = (tmp_path / "tok" / "train.de").read_text(encoding="utf-8").splitlines()
    assert len(kept) == 300 - len(wrong)


# ---------------------------------------------------------------------------------------------
# the pipeline: per-language merges, word-level data, the recorded recipe


SIZES = {"train": 120, "valid": 20, "test": 20}


def _merges(codes: Path) -> int:
    lines = codes.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#version")
    return len(lines) - 1


def test_recipe_in_the_pipeline_merges_per_side_words_and_the_record(tmp_path):
    out = tmp_path / "syn"
    recipe = Recipe(bpe_ops_by_lang={"src": 30, "tgt": 50}, train_limit=100)
    log = []
    p = prepare_corpus("synthetic", "src", "tgt", out, smoke_sizes=SIZES, recipe=recipe, log=log.append)
    assert not p.joint and p.bpe_ops_by_lang == {"src": 30, "tgt": 50} and p.bpe_ops == 30
    assert _merges(out / "bpe" / "codes.src") == 30 and _merges(out / "bpe" / "codes.tgt") == 50
    assert p.codes_by_lang == {"src": out / "bpe" / "codes.src", "tgt": out / "bpe" / "codes.tgt"}
    assert p.sizes == {"train": 100, "valid": 20, "test": 20}
    expected = {"bpe_ops_by_lang": {"src": 30, "tgt": 50}, "train_limit": 100}
    summary = json.loads((out / "prepared.json").read_text())
    assert summary["recipe"] == expected and p.recipe == expected
    assert "recipe: train_limit 100, bpe_ops_by_lang src 30, tgt 50" in log  # said first, and in the summary
    assert "; BPE src 30, tgt 50 separate;" in log[-1]
    assert log[-1].endswith("; recipe: train_limit 100, bpe_ops_by_lang src 30, tgt 50")

    # the same recipe again: every step skipped
    log2 = []
    prepare_corpus("synthetic", "src", "tgt", out, smoke_sizes=SIZES, recipe=recipe, log=log2.append)
    assert not any("running" in m for m in log2)

    # another recipe, or none, on the same folder: refused before anything runs
    words = Recipe(word_vocab=20)
    for other, asked in ((words, '{"word_vocab": 20}'), (None, "no recipe")):
        with pytest.raises(PrepError) as e:
            prepare_corpus("synthetic", "src", "tgt", out, smoke_sizes=SIZES, recipe=other, log=lambda m: None)
        msg = str(e.value)
        assert f"{out} was prepared under " + json.dumps(expected, sort_keys=True) in msg
        assert f"this run asks for {asked}" in msg and "--force" in msg
    assert json.loads((out / "prepared.json").read_text())["recipe"] == expected

    # --force prepares it again under the new recipe: word-level data, dictionaries of 20 entries
    p = prepare_corpus("synthetic", "src", "tgt", out, smoke_sizes=SIZES, recipe=words, force=True, log=lambda m: None)
    assert p.word_vocab == 20 and p.codes is None and p.codes_by_lang == {} and p.bpe_ops == 0
    assert not list((out / "bpe").glob("codes*"))
    for split in ("train", "valid", "test"):
        for lang in ("src", "tgt"):
            assert (out / "bpe" / f"{split}.{lang}").read_text() == (out / "tok" / f"{split}.{lang}").read_text()
    for lang in ("src", "tgt"):
        # fairseq keeps the 20 most frequent entries, its 4 special symbols included, and pads the file
        # (padding_factor 8) with madeupword entries
        entries = (p.data_bin / f"dict.{lang}.txt").read_text().splitlines()
        real = [e for e in entries if not e.startswith("madeupword")]
        assert len(real) == 16, entries
        types = {w for line in (out / "tok" / f"train.{lang}").read_text().splitlines() for w in line.split()}
        assert len(types) > 16  # so the limit did cut
    summary = json.loads((out / "prepared.json").read_text())
    assert summary["recipe"] == {"word_vocab": 20} and summary["codes"] is None
    assert json.loads((out / ".done" / "recipe.json").read_text()) == {"recipe": {"word_vocab": 20}}
