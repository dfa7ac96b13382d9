"""The papers' data preparation and evaluation settings (syntrans.reproduce.published_data): one entry per dataset of
every reproduced table, each setting with its source, each recipe fitting its corpus; and BLEU with an evaluation's
tokenizer and case, checked against sacreBLEU's own API."""
import pytest

from syntrans.prep import CORPORA
from syntrans.prep.recipe import apply_recipe
from syntrans.reproduce import tables
from syntrans.reproduce.published_data import PUBLISHED_DATA, SETTINGS, data_settings
from syntrans.reproduce.scoring import bleu
from syntrans.reproduce.tables import TABLES

pytestmark = pytest.mark.fast

DATASETS = {d.key: d for d in vars(tables).values() if isinstance(d, tables.Dataset)}


def test_every_dataset_of_every_table_has_settings():
    missing = [(t.key, r.dataset.key) for t in TABLES.values() for r in t.rows
               if (t.key, r.dataset.key) not in PUBLISHED_DATA]
    assert missing == []
    for table, dataset in PUBLISHED_DATA:  # and nothing for a table or dataset that does not exist
        assert table in TABLES and dataset in DATASETS, (table, dataset)


@pytest.mark.parametrize("key", sorted(PUBLISHED_DATA), ids="/".join)
def test_every_setting_has_a_source_and_the_recipe_fits_the_corpus(key):
    table, dataset = key
    s = PUBLISHED_DATA[key]
    assert [name for name, _ in s.sources] == list(SETTINGS)
    author = TABLES[table].paper.split()[0]  # "Hou", "Bugliarello", "Deguchi", "Ma"
    for name, where in s.sources:
        assert isinstance(where, str) and where.strip(), name
        assert where.startswith(("not stated: ours", "not applicable")) or author in where, (name, where)
        if where.startswith("not applicable"):
            value = s.evaluation.tokenize if name == "eval_tokenize" else getattr(s.recipe, name, None)
            assert value is None, (name, value)
    ds = DATASETS[dataset]
    pair = CORPORA[ds.corpus].find_pair(ds.src, ds.tgt)
    prepared = apply_recipe(pair, s.recipe)  # raises when the recipe does not fit the pair
    if s.recipe.word_vocab is None:
        assert set(prepared.merges()) == set(pair.langs) and all(n >= 1 for n in prepared.merges().values())
    from sacrebleu.metrics.bleu import _TOKENIZERS

    assert s.evaluation.tokenize is None or s.evaluation.tokenize in _TOKENIZERS
    assert isinstance(s.evaluation.lowercase, bool)


def test_settings_the_papers_state():
    # Ma et al. 2019 §4.1: word-level data, 50k vocabulary, top-N pairs, character-level BLEU for ja/zh targets
    en_ja, ja_en = data_settings("nsd_table1", "aspec_en_ja"), data_settings("nsd_table1", "aspec_ja_en")
    assert en_ja.recipe.word_vocab == 50000 and en_ja.recipe.bpe_ops is None and en_ja.recipe.train_limit == 100_000
    assert (en_ja.evaluation.tokenize, en_ja.evaluation.lowercase) == ("char", False)
    assert ja_en.recipe.train_limit == 1_000_000 and ja_en.evaluation.lowercase
    # Hou et al. 2022 App. A: separate dictionaries for ASPEC zh→ja
    zh_ja = apply_recipe(CORPORA["aspec"].find_pair("zh", "ja"), data_settings("distance_table1", "aspec_zh_ja").recipe)
    assert not zh_ja.joint and zh_ja.merges() == {"zh": 61000, "ja": 46000}
    # Deguchi et al. 2021 App. A: the language filter on WMT14 only; the first 1.5M ASPEC pairs
    assert data_settings("syncattn_table1", "wmt14_en_de").recipe.langid
    assert data_settings("syncattn_table1", "wmt16_en_ro").recipe.langid is False
    aspec = data_settings("syncattn_table1", "aspec_ja_en").recipe
    assert aspec.train_limit == 1_500_000 and len(aspec.train_parts) == 2


def test_an_unknown_pair_is_a_key_error_naming_what_is_known():
    with pytest.raises(KeyError, match="dataset 'wmt14_en_de' of table 'nsd_table1'; its datasets: aspec_en_ja, "
                                       "aspec_ja_en, ldc_en_zh, ldc_zh_en"):
        data_settings("nsd_table1", "wmt14_en_de")
    with pytest.raises(KeyError, match="no published data settings for table 'table9'; tables: distance_figure2, "
                                       "distance_table1"):
        data_settings("table9", "iwslt14_de_en")


def test_bleu_with_an_evaluations_tokenizer_and_case():
    import sacrebleu

    hyps = ["猫はソファで寝ている。", "The Cat sat ON the mat."]
    refs = ["猫はソファの上で寝ている。", "the cat sat on the mat ."]
    score, signature = bleu(hyps, refs, "en", lowercase=True, tokenize="char")
    expected = sacrebleu.corpus_bleu(hyps, [refs], tokenize="char", lowercase=True).score
    assert score == pytest.approx(expected, abs=1e-9) and 0 < score < 100
    assert "tok:char" in signature and "case:lc" in signature
    # the defaults are unchanged: the target language's tokenizer, case as asked
    default, signature = bleu(hyps, refs, "en", lowercase=False)
    assert default == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="13a").score, abs=1e-9)
    assert "tok:13a" in signature and "case:mixed" in signature and default != pytest.approx(score)
