"""The papers' own tests in the reproduction results: sacreBLEU's paired bootstrap (Koehn 2004) against the row's
reference system, corpus RIBES (Isozaki et al. 2010) by nltk on sacreBLEU's tokenization, and the markers and RIBES
columns of results/<table>.md."""
import math
import os

import pytest
from nltk.translate.ribes_score import corpus_ribes
from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

from syntrans.reproduce.results_tables import results_markdown, significance_marker
from syntrans.reproduce.scoring import ribes
from syntrans.reproduce.significance import paired_bootstrap
from syntrans.reproduce.tables import Dataset, Row, System, Table

pytestmark = pytest.mark.fast

REFS = ["the cat sat on the mat today", "a dog barked at the mailman", "we went to the market yesterday",
        "it is raining again in the city", "she reads a book every night", "the train leaves at nine",
        "my brother plays the guitar", "they built a house near the river"] * 3
BASE = ["the cat sat on a mat", "a dog barked at mailman", "we go to market yesterday", "it rains again in city",
        "she read book every night", "train leaves at nine", "my brother play guitar", "they build house near river"] * 3
# a little better than BASE in some sentences, worse in one: a p-value between the extremes
CLOSE = list(BASE)
CLOSE[0], CLOSE[9], CLOSE[7] = "the cat sat on the mat", "a dog barked at the mailman", "they built houses"


def direct_bs(baseline, system, refs, seed, tokenize="13a", lowercase=False, n=1000):
    """sacreBLEU's paired bootstrap called directly: baseline first, the seed through SACREBLEU_SEED."""
    before = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        _, res = PairedTest([("b", baseline), ("s", system)], {"BLEU": BLEU(tokenize=tokenize, lowercase=lowercase)},
                            [refs], test_type="bs", n_samples=n)()
    finally:
        os.environ.pop("SACREBLEU_SEED") if before is None else os.environ.__setitem__("SACREBLEU_SEED", before)
    return res["BLEU"][1].p_value


@pytest.mark.parametrize("seed", [12345, 7])
def test_paired_bootstrap_is_sacrebleus_test(seed):
    p, text = paired_bootstrap(BASE, CLOSE, REFS, "en", lowercase=False, seed=seed)
    expected = direct_bs(BASE, CLOSE, REFS, seed)
    assert 0.01 < expected < 0.99  # not an extreme: the seed and the resampling matter here
    assert p == expected
    assert f"1000 resamples, seed {seed}" in text and f"bs:1000|seed:{seed}|" in text and "tok:13a" in text


def test_paired_bootstrap_restores_the_seed_variable(monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", "99")
    paired_bootstrap(BASE, CLOSE, REFS, "en", lowercase=False, seed=3, n_samples=50)
    assert os.environ["SACREBLEU_SEED"] == "99"
    monkeypatch.delenv("SACREBLEU_SEED")
    paired_bootstrap(BASE, CLOSE, REFS, "en", lowercase=False, seed=3, n_samples=50)
    assert "SACREBLEU_SEED" not in os.environ


def test_a_clearly_better_system_is_significant():
    p, _ = paired_bootstrap(BASE, REFS, REFS, "en", lowercase=False, n_samples=200)
    assert p == direct_bs(BASE, REFS, REFS, 12345, n=200) == pytest.approx(1 / 201)


def test_identical_systems_get_p_1_where_sacrebleu_gives_its_smallest_p():
    assert direct_bs(BASE, BASE, REFS, 12345) == pytest.approx(1 / 1001)  # sacreBLEU 2.6's strict ">" count
    assert paired_bootstrap(BASE, list(BASE), REFS, "en", lowercase=False)[0] == 1.0


def test_paired_bootstrap_passes_lowercase_and_tokenize():
    upper = [h.upper() for h in REFS]
    assert paired_bootstrap(REFS, upper, REFS, "en", lowercase=True)[0] == 1.0  # equal BLEU once lowercased
    assert paired_bootstrap(REFS, upper, REFS, "en", lowercase=False)[0] < 0.01
    ja_refs, ja_base, ja_sys = ["今日は雨です", "猫が好きです", "駅まで歩く"] * 4, ["今日は晴れ", "犬が好き", "駅へ歩いた"] * 4, \
        ["今日は雨", "猫が好き", "駅まで歩いた"] * 4
    p, text = paired_bootstrap(ja_base, ja_sys, ja_refs, "ja", lowercase=False, tokenize="char", n_samples=100)
    assert p == direct_bs(ja_base, ja_sys, ja_refs, 12345, tokenize="char", n=100) and "tok:char" in text


def test_paired_bootstrap_rejects_bad_input():
    with pytest.raises(ValueError, match="24 baseline hypotheses, 23 system hypotheses and 24 references"):
        paired_bootstrap(BASE, CLOSE[:-1], REFS, "en", lowercase=False)
    with pytest.raises(ValueError, match="seed must be an integer ≥ 1"):
        paired_bootstrap(BASE, CLOSE, REFS, "en", lowercase=False, seed=0)
    with pytest.raises(ValueError, match="n_samples must be a positive integer"):
        paired_bootstrap(BASE, CLOSE, REFS, "en", lowercase=False, n_samples=0)


def test_ribes_is_nltks_corpus_ribes_on_sacrebleus_tokens():
    hyps = ["Hello, world! It's fine.", "the dog barked at the cat", ""]
    refs = ["Hello world, it's fine!", "the cat barked at the dog", "nothing here"]
    # 13a splits punctuation off words, except the apostrophe inside "It's"
    tokens_h = [["Hello", ",", "world", "!", "It's", "fine", "."], "the dog barked at the cat".split(), []]
    tokens_r = [["Hello", "world", ",", "it's", "fine", "!"], "the cat barked at the dog".split(), ["nothing", "here"]]
    score, sig = ribes(hyps, refs, "en")
    assert score == pytest.approx(100 * corpus_ribes([[r] for r in tokens_r], tokens_h))
    assert sig.startswith("RIBES|nltk 3.") and "corpus_ribes alpha=0.25 beta=0.10|tok:13a|case:mixed|x100" in sig
    # Japanese with character tokens: every character but spaces
    ja_h, ja_r = ["今日は 雨です。", "猫が好き"], ["今日は雨でした。", "私は猫が好きです"]
    score, sig = ribes(ja_h, ja_r, "ja", tokenize="char")
    chars = lambda s: [c for c in s if not c.isspace()]  # noqa: E731
    assert score == pytest.approx(100 * corpus_ribes([[chars(r)] for r in ja_r], [chars(h) for h in ja_h]))
    assert "|tok:char|" in sig


def test_ribes_by_hand():
    """NKT × P^0.25 × BP^0.10 per sentence, averaged, ×100 (nltk's definition of Isozaki et al. 2010)."""
    refs = ["John hit Bob yesterday", "the boy read the book", "a b c d", "x y", "p q r"]
    hyps = ["Bob hit John yesterday", "the book was read by the boy", "a b", "", "s t"]
    by_hand = [
        0.5,  # ranks [2, 1, 0, 3]: 3 of 6 pairs increasing, τ = 0, NKT = 0.5; P = 1, BP = 1
        0.2 * (5 / 7) ** 0.25,  # ranks [3, 4, 2, 0, 1]: 2 of 10 increasing, NKT = 0.2; P = 5/7; BP = 1 (7 > 5 words)
        math.exp(1 - 4 / 2) ** 0.10,  # ranks [0, 1]: NKT = 1, P = 1, BP = exp(1 − 4/2)
        0.0,  # empty hypothesis
        0.0,  # no word in common: no ranks, NKT = 0
    ]
    score, _ = ribes(hyps, refs, "en")
    assert score == pytest.approx(100 * sum(by_hand) / 5)


def test_ribes_rejects_unpaired_input():
    with pytest.raises(ValueError, match="2 hypotheses for 1 references"):
        ribes(["a", "b"], ["a"], "en")


@pytest.mark.parametrize("p_values,scores,ref,expected", [
    ([0.001, 0.004], [30.0, 31.0], [29.0, 29.5], "† (p ≤ 0.004)"),
    ([0.001, 0.002], [28.0, 28.5], [29.0, 29.5], "‡ (p ≤ 0.002)"),
    ([0.001, 0.002], [30.0, 28.5], [29.0, 29.5], "mixed (p ≤ 0.002)"),
    ([0.21, 0.05], [30.0, 30.0], [29.0, 29.0], "n.s. (p = 0.21)"),
    ([0.001, 0.03, 0.004], [30.0, 30.0, 30.0], [29.0, 29.0, 29.0], "n.s. (p = 0.03; 2/3 seeds p < 0.01)"),
    ([], [30.0], [29.0], "—"),
])
def test_significance_marker(p_values, scores, ref, expected):
    assert significance_marker(p_values, scores, ref, 0.01) == expected


def test_significance_marker_needs_a_score_pair_per_p_value():
    with pytest.raises(ValueError, match="3 p-values for 3 system and 2 reference scores"):
        significance_marker([0.001] * 3, [30.0] * 3, [29.0] * 2, 0.01)


def _cells(md: str, dataset: str, system: str) -> list:
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {dataset} | {system} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_markdown_shows_markers_and_ribes():
    ds, ds2 = Dataset("wat_en_ja", "aspec", "en", "ja", "WAT en→ja"), Dataset("nc_en_de", "nc11", "en", "de", "NC en→de")
    table = Table("t", "A table", "Paper 2020, Table 1", (
        Row(ds, (System("baseline", "b.args", 43.1, published_more=(("RIBES", 83.46),)),
                 System("PASCAL", "p.args", 44.0, published_more=(("RIBES", 85.21),)),
                 System("LISA", "l.args", 43.2))),
        Row(ds2, (System("baseline", "b.args", 25.0), System("PASCAL", "p.args", 25.9)))),
        significance=(0.01, "Paper 2020, Table 1 caption"), ribes=True)
    outcomes = {
        ("wat_en_ja", "baseline"): {"scores": [43.0, 44.0], "ribes": [83.0, 84.0], "ribes_signature": "RIBES|sig"},
        ("wat_en_ja", "PASCAL"): {"scores": [44.5, 45.5], "p_values": [0.001, 0.004], "ribes": [85.0, 86.0],
                                  "test": "paired bootstrap (desc)", "ribes_signature": "RIBES|sig"},
        ("wat_en_ja", "LISA"): {"scores": [43.5, 43.0], "p_values": [0.2, 0.5], "ribes": [84.0]},
        ("nc_en_de", "baseline"): {"skipped": "no data"},
    }
    md = results_markdown(table, outcomes, ["head"], ["foot"])
    assert ("| dataset | system | published BLEU | ours (sacreBLEU, mean ± sd) | Δ published | Δ ours | "
            "significance (p < 0.01) | published RIBES | ours (RIBES, mean ± sd) |") in md
    assert _cells(md, "WAT en→ja", "baseline") == ["WAT en→ja", "baseline", "43.10", "43.50 ± 0.71 (n=2)", "", "", "",
                                                  "83.46", "83.50 ± 0.71 (n=2)"]
    assert _cells(md, "WAT en→ja", "PASCAL") == ["WAT en→ja", "PASCAL", "44.00", "45.00 ± 0.71 (n=2)", "+0.90",
                                                "+1.50", "† (p ≤ 0.004)", "85.21", "85.50 ± 0.71 (n=2)"]
    assert _cells(md, "WAT en→ja", "LISA")[6:] == ["n.s. (p = 0.5)", "—", "84.00 (n=1)"]
    assert _cells(md, "NC en→de", "PASCAL")[3:] == ["not run: not requested", "+0.90", "—", "—", "—", "—"]
    legend = md[md.index("- Significance"):]
    assert "level p < 0.01 (Paper 2020, Table 1 caption)" in legend and "† = every seed pair k" in legend
    assert "- Test: paired bootstrap (desc)" in md and md.count("- RIBES: RIBES|sig") == 1
    assert md.rstrip().endswith("foot")


def test_markdown_without_tests_or_ribes_keeps_the_bleu_columns():
    ds = Dataset("iwslt14_de_en", "iwslt14", "de", "en", "IWSLT14 de→en")
    table = Table("t", "T", "P", (Row(ds, (System("baseline", "b", 34.56), System("distance-mask", "d", 35.74))),))
    md = results_markdown(table, {("iwslt14_de_en", "baseline"): {"scores": [34.0]},
                                  ("iwslt14_de_en", "distance-mask"): {"scores": [35.0]}}, [], [])
    assert _cells(md, "IWSLT14 de→en", "distance-mask") == ["IWSLT14 de→en", "distance-mask", "35.74", "35.00 (n=1)",
                                                           "+1.18", "+1.00", "—"]
    assert "RIBES" not in md and "Significance" not in md and "significance (p < 0.05)" in md


# ------------------------------------------------------------------------------------------------------------
# Japanese and Chinese tokenization: one tokenizer per language on every machine, or a clear stop


def test_the_tokenizer_of_a_language_does_not_depend_on_what_is_installed(monkeypatch):
    """ja → ja-mecab, zh → zh, else 13a, also where MeCab cannot be imported (simulated absence)."""
    import sys

    from syntrans.reproduce.scoring import sacrebleu_tokenizer

    for present in (True, False):
        if not present:
            monkeypatch.setitem(sys.modules, "MeCab", None)  # import MeCab raises ImportError
        assert [sacrebleu_tokenizer(x) for x in ("ja", "zh", "en", "de")] == ["ja-mecab", "zh", "13a", "13a"]


@pytest.mark.parametrize("module", ["MeCab", "ipadic"])
def test_a_missing_japanese_tokenizer_stops_scoring_with_what_to_install(monkeypatch, module):
    """No switch to character BLEU: BLEU, RIBES and the paired bootstrap of Japanese stop and name the pinned
    packages of the reproduce extra."""
    import sys

    from syntrans.reproduce.scoring import JA_MECAB_PACKAGES, TokenizerMissing, bleu

    monkeypatch.setitem(sys.modules, module, None)
    want = r"ja-mecab .*pip install 'syntrans\[reproduce\]' \(or pip install mecab-python3==1\.0\.12 ipadic==1\.0\.0\)"
    with pytest.raises(TokenizerMissing, match=want):
        bleu(["猫が好き"], ["猫が好きです"], "ja", lowercase=False)
    with pytest.raises(TokenizerMissing, match=f"import {module}"):
        ribes(["猫が好き"], ["猫が好きです"], "ja")
    with pytest.raises(TokenizerMissing, match="ja-mecab"):
        paired_bootstrap(["a"], ["b"], ["c"], "ja", lowercase=False)
    assert JA_MECAB_PACKAGES == ("mecab-python3==1.0.12", "ipadic==1.0.0")
    # other languages, and an explicit character tokenizer, are not affected
    assert bleu(["猫が好き"], ["猫が好きです"], "ja", lowercase=False, tokenize="char")[0] > 0


def _mecab_importable() -> bool:
    try:
        import ipadic  # noqa: F401
        import MeCab  # noqa: F401
        return True
    except ImportError:
        return False


@pytest.mark.skipif(not _mecab_importable(), reason="MeCab and ipadic are not installed (pip install 'syntrans[reproduce]')")
def test_japanese_bleu_is_sacrebleus_ja_mecab():
    """With the reproduce extra: MeCab (IPA dictionary) splits the words by hand-known boundaries, and BLEU is
    sacreBLEU's own with that tokenizer."""
    import sacrebleu

    from syntrans.reproduce.scoring import bleu, bleu_metric

    assert bleu_metric("ja", False).tokenizer("今日は良い天気です。") == "今日 は 良い 天気 です 。"
    hyps, refs = ["今日は良い天気です。", "猫が好きです"], ["今日は天気です。", "私は猫が好きです"]
    score, signature = bleu(hyps, refs, "ja", lowercase=False)
    assert score == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="ja-mecab").score, abs=1e-9)
    assert "tok:ja-mecab-0.996-IPA" in signature and 0 < score < 100


def test_setup_pins_the_japanese_tokenizer_in_the_reproduce_extra(monkeypatch):
    """setup.py as pip runs it: the reproduce extra holds the exact pins scoring names, and matplotlib for the figures."""
    import runpy
    from pathlib import Path

    import setuptools

    from syntrans.reproduce.scoring import JA_MECAB_PACKAGES

    root = Path(__file__).resolve().parents[1]
    got = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: got.update(kw))
    monkeypatch.chdir(root)
    runpy.run_path(str(root / "setup.py"), run_name="__main__")
    extra = got["extras_require"]["reproduce"]
    assert set(JA_MECAB_PACKAGES) <= set(extra) and "matplotlib" in extra
    assert not any(p.startswith("torch") for p in extra)
    assert '".[test,plot,reproduce]"' in (root / "Makefile").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------------------------
# several references per segment (NIST MT03-05: four)


def test_multi_reference_bleu_is_sacrebleus_and_rewards_any_reference():
    """A hypothesis that equals the second reference of every segment scores 100 with all references and less with the
    first alone; the score is sacreBLEU's own corpus_bleu over the reference streams, and the paired bootstrap takes
    them too (a system equal to the second references beats one equal to neither)."""
    import sacrebleu

    from syntrans.reproduce.scoring import bleu

    first = ["the cat sat on the mat today", "a dog barked at the mailman again", "we went to the big market"]
    second = ["a cat was sitting on the mat", "the dog was barking at the postman", "we walked to the market"]
    third = ["today the cat sat on a mat", "again a dog barked at the mail carrier", "we visited the market"]
    hyps = list(second)
    assert bleu(hyps, first, "en", lowercase=False, more_refs=[second, third])[0] == pytest.approx(100.0)
    one, sig1 = bleu(hyps, first, "en", lowercase=False)
    multi, sig3 = bleu(hyps[:2] + ["we went to the market"], first, "en", lowercase=False, more_refs=[second, third])
    assert one < 50 and "nrefs:1" in sig1 and "nrefs:3" in sig3
    want = sacrebleu.corpus_bleu(hyps[:2] + ["we went to the market"], [first, second, third]).score
    assert multi == pytest.approx(want, abs=1e-9)
    with pytest.raises(ValueError, match="3 hypotheses but reference 2 has 2 lines"):
        bleu(hyps, first, "en", lowercase=False, more_refs=[second[:2]])
    good, bad = second * 8, ["nothing like it at all"] * 24
    p, text = paired_bootstrap(bad, good, first * 8, "en", lowercase=False, more_refs=[second * 8, third * 8],
                               n_samples=200)
    assert p < 0.01 and "nrefs:3" in text
