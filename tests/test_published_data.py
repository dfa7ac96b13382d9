"""The papers' data preparation and evaluation settings (syntrans.reproduce.published_data): one entry per dataset of
every reproduced table, each setting with its source, each recipe fitting its corpus; and BLEU with an evaluation's
tokenizer and case, checked against sacreBLEU's own API."""
import re
from pathlib import Path

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
    with pytest.raises(KeyError, match="no published data settings for table 'table9'; tables: cross_paper, "
                                       "distance_figure2, distance_table1"):
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


# ------------------------------------------------------------------------------------------------------------
# the records: each paper's parser, the IWSLT14 validation split, and the quotes they rest on

PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"
#: the text file of each paper, by the first word of its name in syntrans.reproduce.published / tables
PAPER_FILES = {"Hou et al. 2022": "hou2022_distance_mask.txt", "Hou et al. (gated": "hou_gated.txt",
               "Bugliarello": "bugliarello2020_pascal.txt", "Deguchi": "deguchi2021_syncattn.txt",
               "Ma et al.": "ma2019_nsd.txt"}


def paper_text(source: str) -> str:
    """The whitespace-normalised text of the paper a source string names first, twice: a word broken at a line end
    in the extraction (``gen-`` / ``erated``) joined, and kept hyphenated (``character-`` / ``level``)."""
    first = min((source.find(k), f) for k, f in PAPER_FILES.items() if k in source)[1]
    raw = (PAPERS / first).read_text(encoding="utf-8")
    joined = re.sub(r"(\w)-\n(\w)", r"\1\2", raw)
    kept = re.sub(r"(\w)-\n(\w)", r"\1-\2", raw)
    return " ".join(joined.split()) + " \n " + " ".join(kept.split())


def quotes(source: str):
    return re.findall(r'"([^"]+)"', source)


@pytest.mark.parametrize("table,paper_parser", [
    ("distance_table1", "Stanford CoreNLP constituency"), ("gated_table3", "Stanford CoreNLP (constituency"),
    ("pascal_table1", "Stanford CoreNLP (dependencies"), ("syncattn_table1", "Stanza (English, German, Romanian) and EDA"),
    ("nsd_table1", "Kitaev & Klein 2018 (constituency")])
def test_each_paper_names_its_parser(table, paper_parser):
    """The parser record of every dataset of a table: the one its paper names, with the paper's words."""
    for row in TABLES[table].rows:
        s = data_settings(table, row.dataset.key)
        assert s.parser.startswith(paper_parser), (row.dataset.key, s.parser)
        assert quotes(s.source("parser")), s.source("parser")


def test_the_iwslt_validation_split_is_marked_as_a_deviation():
    """Hou et al. 2022 (App. A) and the gated paper (§5.1) select 5% of training at random; we hold out every 23rd
    pair (fairseq's script, the paper's split sizes), and the record says so. Other corpora use their own files."""
    from syntrans.prep.corpora import CORPORA

    assert CORPORA["iwslt14"].find_pair("de", "en").valid_every == 23
    for table in ("distance_table1", "gated_table3"):
        s = data_settings(table, "iwslt14_de_en")
        assert s.valid_split.startswith("every 23rd pair")
        assert s.source("valid_split").startswith("deviates from") and "randomly select 5%" in s.source("valid_split")
    assert data_settings("pascal_table1", "nc11_de_en").valid_split is None


@pytest.mark.skipif(not PAPERS.is_dir(), reason=f"the papers' text is not at {PAPERS}")
@pytest.mark.parametrize("key", sorted(PUBLISHED_DATA), ids="/".join)
def test_the_records_quote_their_paper_word_for_word(key):
    s = PUBLISHED_DATA[key]
    for name, source in s.sources:
        if not quotes(source) or not any(k in source for k in PAPER_FILES):
            continue
        text = paper_text(source)
        for q in quotes(source):
            for piece in q.split("…"):  # "a … b": both pieces, in the paper's words
                assert " ".join(piece.split()) in text, (name, q)


def test_the_pascal_tables_follow_the_released_checkpoint_rule():
    """Bugliarello & Okazaki 2020 state no checkpoint rule; the authors' released evaluation scripts decode
    checkpoint_last.pt, and so does every table of theirs here, naming the file."""
    from syntrans.reproduce.published import protocol

    for table in ("pascal_table1", "pascal_table3a", "pascal_table5", "pascal_appendixb", "pascal_figure2"):
        p = protocol(table, "nc11_de_en")
        assert p.checkpoint == "last" and "checkpoint_last.pt" in p.where and "authors' code" in p.where
        assert "eval.sh" in p.where


def test_nsd_ldc_rows_test_on_mt03_to_05_with_four_references():
    """Ma et al. 2019, §4.1: "The test set is a concatenation of NIST MT 2003, 2004, and 2005"; zh→en is scored against
    the sets' four English references, en→zh against the one Chinese source; the corpus' layout asks for the files."""
    from syntrans.prep.corpora import CORPORA

    zh_en, en_zh = data_settings("nsd_table1", "ldc_zh_en"), data_settings("nsd_table1", "ldc_en_zh")
    assert (zh_en.references, en_zh.references) == (4, 1)
    for s in (zh_en, en_zh):
        assert any("NIST MT 2003, 2004, and 2005" in n for n in s.notes)
    pair = CORPORA["ldc"].find_pair("zh", "en")
    assert pair.reference_files("en") == ("test.en.2", "test.en.3", "test.en.4") and pair.reference_files("zh") == ()
    layout = CORPORA["ldc"].layout
    assert "NIST MT03 + MT04 + MT05" in layout and "test.en.2 test.en.3 test.en.4" in layout and "MT03-06" not in layout
    assert all(data_settings(t.key, r.dataset.key).references == 1 for t in TABLES.values() for r in t.rows
               if r.dataset.corpus != "ldc")


# ------------------------------------------------------------------ every label reaches the results file's reader

def stub_results(table_key: str, tmp_path) -> str:
    """The results file of ``table_key`` written in-process by the runner's own writer (a smoke run's options, every
    system skipped: no training), as a reader finds it."""
    from syntrans.reproduce.runner import Options, Reproduction

    opts = Options(table=table_key, work_dir=tmp_path / "work", results_dir=tmp_path / "results", smoke=True,
                   synthetic=True)
    rep = Reproduction(opts, log=lambda m: None)
    outcomes = {(r.dataset.key, s.name): {"skipped": "not run (stub)"} for r in rep.table.rows for s in r.systems}
    return rep.write(outcomes, 0.0).read_text(encoding="utf-8")


def test_every_label_of_the_record_is_in_the_results_file_of_its_table(tmp_path):
    """Each (table, dataset) record of published_data: every setting's source (what the paper says, ours where it is
    silent, or the deviation and why), the paper's parser and every note appear in that table's results file; the
    block reads the record the run reads (a table drawn from another's runs: that table's, equal to its own)."""
    texts = {}
    for (table, dataset), s in sorted(PUBLISHED_DATA.items()):
        if table not in texts:
            texts[table] = stub_results(table, tmp_path / table)
            assert "## Deviations" in texts[table]
        text = texts[table]
        for name in SETTINGS:
            assert s.source(name) in text, (table, dataset, name)
        assert s.parser in text, (table, dataset)
        for note in s.notes:
            assert note in text, (table, dataset, note)
        title = next(r.dataset.title for r in TABLES[table].rows if r.dataset.key == dataset)
        assert any(line.startswith("- ") and title in line.split(": ", 1)[0] and s.source("valid_split") in line
                   for line in text.splitlines()), (table, dataset)


def test_the_labels_the_issue_names_reach_their_results_files(tmp_path):
    """The IWSLT validation split (Hou et al.'s "randomly select 5%"), Deguchi et al.'s WAT scoring, the LDC references
    and development set, as the reader of each results file sees them, each with its mark."""
    distance = stub_results("distance_table1", tmp_path / "d")
    assert "`valid_split` = every 23rd pair" in distance and "[deviates]: deviates from Hou et al. 2022" in distance
    sync = stub_results("syncattn_table1", tmp_path / "s")
    line = next(ln for ln in sync.splitlines() if ln.startswith("- ASPEC ja→en: `eval_tokenize`"))
    assert "[deviates]" in line and "App. D" in line and "WAT Automatic Evaluation Systems" in line
    nsd = stub_results("nsd_table1", tmp_path / "n")
    refs = next(ln for ln in nsd.splitlines() if ln.startswith("- LDC zh→en: `references` = 4"))
    assert "[ours]" in refs and "not stated" in refs
    valid = next(ln for ln in nsd.splitlines() if "LDC" in ln.split(":")[0] and "`valid_split`" in ln)
    assert "[ours]" in valid and "the development set" in valid and "not applicable" not in valid


def test_the_ldc_reference_error_names_the_records_label(tmp_path, monkeypatch):
    """A zh→en preparation with one reference per segment stops the run before training, and the message gives the
    record's label (four references: ours, not stated by Ma et al.), not a claim about the paper."""
    from types import SimpleNamespace

    from syntrans.reproduce.runner import Options, Reproduction, RunError

    monkeypatch.setattr(Reproduction, "prepare", lambda self, ds, system=None, views=None:
                        SimpleNamespace(ref_test_more=[], tgt="en"))
    monkeypatch.setattr(Reproduction, "views", lambda self, system: {"source": (), "target": ()})
    rep = Reproduction(Options(table="nsd_table1", work_dir=tmp_path, datasets=["ldc_zh_en"], systems=["baseline"]),
                       log=lambda m: None)
    with pytest.raises(RunError) as err:
        rep.plan()
    message = str(err.value)
    assert "the recipe scores against 4 references per segment" in message and "has 1" in message
    assert data_settings("nsd_table1", "ldc_zh_en").source("references") in message
    assert "the paper's test set has" not in message


def test_the_authors_released_code_is_printed_beside_ours(tmp_path):
    """Each results file of a paper with released code prints, per row and system, every value the authors' scripts
    set beside ours and the paper's (the files named): Bugliarello & Okazaki's baselines' lr 0.001, +MULTI-TASK's
    betas per dataset (NC11 de→en (0.9,0.98), NC11 en→de (0.9,0.997)), eps 1e-09, checkpoint_last.pt, the +MULTI-TASK
    data entries; Hou et al.'s scripts (IWSLT14 de→en lr 0.007 with 6,000 warm-up updates beside App. A's 0.001,
    WMT14's 262,144 tokens per update and checkpoints 211–220); Li et al.'s SLA code for the gated paper's SLA."""
    pascal = stub_results("pascal_table1", tmp_path / "p").split("## Deviations", 1)[1]
    lines = pascal.splitlines()
    for needle in ("binarize_lin_parses.sh", "scripts/bpe_lin_parses.py", "n't → not",
                   "experiments/nc11en2de/transformer/train.sh", "experiments/nc11de2en/transformer_multitask/train.sh"):
        assert needle in pascal, needle
    lr = next(ln for ln in lines if "`--lr` = 0.001 [authors' code]" in ln)
    assert lr.startswith("- NC11 en→de: baseline; NC11 de→en: baseline;") and "PASCAL" not in lr
    betas = next(ln for ln in lines if "`--adam-betas` = (0.9,0.98) [authors' code]" in ln)
    assert "NC11 de→en: LISA, MULTI-TASK" in betas and "NC11 en→de" not in betas
    betas = next(ln for ln in lines if "`--adam-betas` = (0.9,0.997) [authors' code]" in ln)
    assert "NC11 en→de: baseline, LISA, MULTI-TASK, S&H" in betas
    assert any("`--adam-eps` = 1e-09 [authors' code]" in ln and "every row and system" in ln for ln in lines)
    assert any("`checkpoint` = checkpoint_last.pt [authors' code]" in ln for ln in lines)
    assert any("`tokens-per-update` = 32000 [stated]" in ln and "authors' code: 32768" in ln for ln in lines)
    assert "Deviations" in stub_results("pascal_table5", tmp_path / "p5")  # Transformer rows: the baseline's config
    gated = stub_results("gated_table3", tmp_path / "g").split("## Deviations", 1)[1]
    for needle in ("src/dataset.py", "i−1 and i+1 taken unconditionally", "--sla-window neighbours-unrestricted",
                   "[CLS] and [SEP]", "--sla-boundary-visible", "--sla-token-gate", "quote_idx",
                   "the gated paper's code is not released"):
        assert needle in gated, needle
    assert "Bugliarello & Okazaki 2020's rows follow" not in gated
    cross = stub_results("cross_paper", tmp_path / "c").split("## Deviations", 1)[1]
    assert "IWSLT14 de→en: SLA" in cross and "IWSLT14 de→en: +MULTI-TASK" in cross
    distance = stub_results("distance_table1", tmp_path / "d").split("## Deviations", 1)[1]
    lines = distance.splitlines()
    assert ("- IWSLT14 de→en: distance-mask: `--lr` = 0.001 [stated]; the paper: 0.001 (App. A); the authors' code: "
            "0.007 (train_iwslt_de2en.sh)") in lines
    assert ("- IWSLT14 de→en: baseline: `--warmup-updates` = 4000 [stated]; the paper: 4000 (App. A); the authors' "
            "code: 6000 (train_iwslt_de2en_baseline.sh)") in lines
    assert any(ln.startswith("- IWSLT14 de→en: distance-mask; WMT14 en→de: distance-mask: "
                             "`--encoder-normalize-before` = on [authors' code]") for ln in lines)  # their --arch's
    assert any(ln.startswith("- IWSLT14 en→de: distance-mask; NC11 de→en: distance-mask; NC11 en→de: distance-mask; "
                             "ASPEC zh→ja: distance-mask: `--encoder-normalize-before` = absent [authors' code]")
               for ln in lines)  # post-norm, as their --arch
    assert any("`tokens-per-update` = 262144 [authors' code]" in ln for ln in lines)
    assert "checkpoint211.pt … checkpoint220.pt" in distance and "run/train_wmt_en2de.sh" in distance
    assert "no WMT14 baseline script" in distance
    assert "fairseq-generate's BLEU4" in distance  # their scoring, beside ours


# ------------------------------------------------------------------ the authors' released code, dataset by system

RELEASED_TABLES = [t for t in TABLES.values() if t.key.startswith(("pascal", "distance", "gated", "syncattn"))]


@pytest.mark.parametrize("table", RELEASED_TABLES, ids=lambda t: t.key)
def test_every_dataset_and_system_has_its_released_code_entries(table):
    """Bugliarello & Okazaki, Hou et al. and Deguchi et al.: every dataset of every table has the record of what the
    authors' data and scoring scripts do (or says none is released), and every system of every row has the record
    of their training script (or says why there is none and what ours follows), each value with its file."""
    from syntrans.reproduce.released_code import released
    from syntrans.reproduce.released_data import released_data

    for row in table.rows:
        data = released_data(table.key, row.dataset.key)
        assert data, (table.key, row.dataset.key)
        assert all("github.com/" in text for text in data.values())
        for system in row.systems:
            code = released(system.config)
            assert code is not None, (table.key, row.dataset.key, system.name)
            assert code.none or code.values, system.config
            for key, (value, where) in code.values.items():
                assert any(ext in where for ext in (".sh", ".yaml", ".rst", ".py")), (key, where)
            if not code.none:  # the training values every script sets, at least
                assert {"--lr", "decode --beam", "checkpoint"} <= set(code.values), system.config


def test_no_bare_corpus_setting_in_a_results_file(tmp_path):
    """Every value the Deviations block prints is the value itself: a setting left to the corpus shows the corpus'
    value (e.g. "False (the corpus' setting)"), never only "the corpus' setting"."""
    for table in ("pascal_table1", "distance_table1", "syncattn_table1", "nsd_table1", "gated_table3"):
        text = stub_results(table, tmp_path / table).split("## Deviations", 1)[1]
        assert "= the corpus' setting" not in text and "= the corpus' validation files [" not in text, table
