"""The reproduction tables: every system's config exists and decodes with the paper's flags; the published numbers are
those of an independent transcription of the papers' tables (when the shared notes are present); the scoring and
report helpers."""
import re

import pytest
from helpers import SHARED_DATA

from syntrans.reproduce.config_file import CONFIG_DIR, ConfigError, read_args_file
from syntrans.reproduce.report import _delta, mean_sd
from syntrans.reproduce.scoring import bleu, detokenize, generate_hypotheses
from syntrans.reproduce.tables import TABLES

pytestmark = pytest.mark.fast

SYSTEMS = [(t, r, s) for t in TABLES.values() for r in t.rows for s in r.systems]


@pytest.mark.parametrize("table,row,system", SYSTEMS, ids=lambda x: getattr(x, "key", None) or getattr(x, "name", None))
def test_every_system_has_a_config_with_decoding_flags(table, row, system):
    cfg = read_args_file(CONFIG_DIR / system.config)
    assert "--arch" in cfg.flags and cfg.value("--task") == "syntax_translation"
    assert cfg.value("--max-update") or cfg.value("--max-epoch"), f"{system.config}: no training length"
    assert "--beam" in cfg.decode, f"{system.config}: no '# decode:' line with --beam"
    # the baseline is the stock Transformer; every other system switches a syntax method on
    arch = cfg.value("--arch")
    if system.name in ("baseline", "row 1"):
        assert arch.startswith("transformer_"), arch
    else:
        assert not arch.startswith("transformer_"), arch


def test_first_system_of_every_row_is_the_reference():
    for t in TABLES.values():
        for r in t.rows:
            assert r.systems[0].name == t.reference, (t.key, r.dataset.key)
            assert len({s.name for s in r.systems}) == len(r.systems)


NOTES = SHARED_DATA.parent / "PUBLISHED_SETTINGS.md"


@pytest.mark.skipif(not NOTES.exists(), reason=f"{NOTES} absent (the shared transcription is not in the clone)")
def test_published_numbers_match_an_independent_transcription():
    """Every published number of a table appears in the transcription's section for that paper."""
    sections = {"distance": "## 0.", "gated": "## 3.", "pascal": "## 4.", "syncattn": "## 2.", "nsd": "## 1."}
    text = NOTES.read_text(encoding="utf-8")
    checked = 0
    for t in TABLES.values():
        head = sections[t.key.split("_")[0]]
        body = text.split(head, 1)[1].split("\n## ", 1)[0]
        numbers = {float(n) for n in re.findall(r"\d+\.\d+", body)}
        for r in t.rows:
            for s in r.systems:
                if s.published is not None:
                    assert s.published in numbers, (t.key, r.dataset.key, s.name, s.published)
                    checked += 1
    assert checked >= 140


def test_args_file_reading(tmp_path):
    p = tmp_path / "x.args"
    p.write_text("# title\n# decode: --beam 4 --lenpen 0.6   (the paper)\n# tokens per update: 4000   (stated: §1)\n"
                 "--arch a   # ours: why\n\n--adam-betas (0.9,0.98)\n--lr 1\n--lr 2  # stated: Table 7\n--share-all\n")
    cfg = read_args_file(p)
    assert cfg.flags == ["--arch", "a", "--adam-betas", "(0.9,0.98)", "--lr", "1", "--lr", "2", "--share-all"]
    assert cfg.decode == ["--beam", "4", "--lenpen", "0.6"]
    assert cfg.tokens_per_update == 4000
    assert cfg.notes == {"decode": "the paper", "tokens-per-update": "stated: §1", "--arch": "ours: why",
                         "--lr": "stated: Table 7"}
    assert cfg.value("--lr") == "2" and cfg.value("--nope") is None and cfg.value("--share-all") == ""
    p.write_text("--arch a\nbeam 4\n")
    with pytest.raises(ConfigError, match=r"x.args, line 2: expected a flag"):
        read_args_file(p)
    with pytest.raises(ConfigError, match="does not exist"):
        read_args_file(tmp_path / "missing.args")


def test_generate_hypotheses_in_sentence_order(tmp_path):
    out = tmp_path / "gen.txt"
    out.write_text("S-1\tb\nH-1\t-0.5\tsecond one\nD-1\t-0.5\tsecond one\nH-0\t-0.1\tfirst\nH-2\t-1\t\n")
    assert generate_hypotheses(out, 3) == ["first", "second one", ""]
    with pytest.raises(ValueError, match="expected hypotheses for sentences 0…3, found 3 \\(first missing: 3\\)"):
        generate_hypotheses(out, 4)
    out.write_text("H-0\t-0.1\ta\nH-0\t-0.1\tb\n")
    with pytest.raises(ValueError, match="line 2: a second hypothesis for sentence 0"):
        generate_hypotheses(out, 1)


def test_detokenize_and_bleu():
    assert detokenize(["Tom &apos;s cat , &quot; Rex &quot; &amp; co ."], "en") == ['Tom\'s cat, "Rex" & co.']
    refs = ["the cat sat on the mat .", "a dog barked loudly today"]
    score, sig = bleu(refs, refs, "en", lowercase=False)
    assert score == pytest.approx(100.0) and "tok:13a" in sig and "case:mixed" in sig
    score_lc, sig_lc = bleu([r.upper() for r in refs], refs, "en", lowercase=True)
    assert score_lc == pytest.approx(100.0) and "case:lc" in sig_lc
    assert bleu([r.upper() for r in refs], refs, "en", lowercase=False)[0] < 10.0  # only the punctuation matches


def test_mean_sd():
    assert mean_sd([1.0, 2.0, 3.0]) == "2.00 ± 1.00 (n=3)"
    assert mean_sd([27.5]) == "27.50 (n=1)"
    assert mean_sd([]) == "—"
    assert (_delta(2.42, 2.4249), _delta(35.74, 34.56), _delta(None, 1.0)) == ("+0.00", "+1.18", "—")
