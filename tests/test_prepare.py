"""syntrans-prepare: tokenization and cleaning, extraction formats, fetch (offline, checksums, resume),
the resumable pipeline on the synthetic corpus, a fake IWSLT14 archive, and a multi30k smoke run."""
import hashlib
import http.server
import io
import json
import tarfile
import threading
import urllib.error
from pathlib import Path

import pytest
from helpers import SHARED_DATA

from syntrans.prep import CORPORA, PrepError, prepare_corpus
from syntrans.prep.checksums import SUMS_NAME, ChecksumError, read_sums, verify_file
from syntrans.prep.clean import REASONS, clean_pairs, drop_reason, is_holdout
from syntrans.prep.corpora import Download, Part
from syntrans.prep.extract import column_pairs, iwslt_tags, one_line, seg_texts, tmx_pairs, write_split
from syntrans.prep.tokenization import TokenizerSpec, looks_unsegmented, tokenize_line

pytestmark = pytest.mark.usefixtures("single_threaded_tools")

# ---------------------------------------------------------------------------------------------
# tokenization + cleaning on a hand-checked fixture

# (German, English) raw pairs
RAW = [
    ('Das ist\'s, sagte er: "Äpfel & Birnen".', 'That\'s it, he said: "apples & pears".'),
    ("Ist 3 < 5?", "Is 3 < 5?"),
    ("", "Hello."),
    ("eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn",
     "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"),
    ("Ja.", "Yes, of course I will do that."),
    ('Er sagte: "Es kostet 3,50 Euro."', 'He said: "It costs 3.50 euros."'),
    ("Wie geht's dir?", "How's it going?"),
]

# worked out by hand from tokenizer.perl's rules: characters other than letters, digits, space, . ' ` , -
# are split off; a comma is split off unless between digits; German splits every apostrophe (' → ' '),
# English attaches it to the following letters (That's → That 's); a final period (or one before a
# closing quote that is not lowercase) becomes its own token; then & ' " < are escaped.
TOKENIZED = [
    ("Das ist &apos; s , sagte er : &quot; Äpfel &amp; Birnen &quot; .",
     "That &apos;s it , he said : &quot; apples &amp; pears &quot; ."),
    ("Ist 3 &lt; 5 ?", "Is 3 &lt; 5 ?"),
    ("", "Hello ."),
    ("eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn",
     "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"),
    ("Ja .", "Yes , of course I will do that ."),
    ("Er sagte : &quot; Es kostet 3,50 Euro . &quot;", "He said : &quot; It costs 3.50 euros . &quot;"),
    ("Wie geht &apos; s dir ?", "How &apos;s it going ?"),
]


@pytest.mark.fast
def test_moses_tokenization_matches_hand_checked_output():
    de, en = TokenizerSpec("de"), TokenizerSpec("en")
    for (d, e), (td, te) in zip(RAW, TOKENIZED):
        assert tokenize_line(d, de) == td
        assert tokenize_line(e, en) == te


@pytest.mark.fast
def test_lowercase_after_escaping_and_dash_splits():
    assert tokenize_line(RAW[0][0], TokenizerSpec("de", lowercase=True)) == \
        "das ist &apos; s , sagte er : &quot; äpfel &amp; birnen &quot; ."
    assert tokenize_line(RAW[0][1], TokenizerSpec("en", lowercase=True)) == \
        "that &apos;s it , he said : &quot; apples &amp; pears &quot; ."
    assert tokenize_line("a well-known fact", TokenizerSpec("en")) == "a well-known fact"
    assert tokenize_line("a well-known fact", TokenizerSpec("en", aggressive_dashes=True)) == "a well @-@ known fact"
    # pre-segmented text keeps its fields, escaped like Moses escapes them
    assert tokenize_line("日本 の  A&B 'x'", TokenizerSpec("ja", segmented=True)) == "日本 の A&amp;B &apos;x&apos;"


@pytest.mark.fast
def test_clean_pairs_keeps_and_drops_the_right_lines():
    kept, dropped = clean_pairs(TOKENIZED, min_len=1, max_len=14, ratio=1.5)
    # 1: 14/13 tokens; 2: 5/5; 6: 10/10; 7: 6/5 are kept, in order
    assert kept == [TOKENIZED[0], TOKENIZED[1], TOKENIZED[5], TOKENIZED[6]]
    # 3: empty German side; 4: 15 tokens > 14; 5: 2 vs 9 tokens, ratio 4.5 > 1.5
    assert dropped == {"empty": 1, "too_short": 0, "too_long": 1, "ratio": 1}
    assert list(dropped) == list(REASONS)


@pytest.mark.fast
def test_filter_boundaries_follow_clean_corpus_n():
    assert drop_reason(3, 2, ratio=1.5) is None  # exactly the ratio is kept
    assert drop_reason(4, 2, ratio=1.5) == "ratio"
    assert drop_reason(175, 175, max_len=175) is None
    assert drop_reason(176, 3, max_len=175) == "too_long"  # length before ratio
    assert drop_reason(1, 3, min_len=2) == "too_short"
    assert drop_reason(0, 0, min_len=2) == "empty"
    assert [k for k in range(1, 70) if is_holdout(k, 23)] == [23, 46, 69]


@pytest.mark.fast
def test_unsegmented_text_is_detected():
    assert looks_unsegmented(["これは日本語の文章です。", "もう一つの長い文章があります。", ""])
    assert not looks_unsegmented(["これ は 日本語 の 文章 です 。", "短い"])


# ---------------------------------------------------------------------------------------------
# extraction formats


@pytest.mark.fast
def test_iwslt_train_tags_drop_metadata_and_strip_title_tags():
    lines = ["<url>http://www.ted.com/talks/x.html</url>\n", "<keywords>talks, science</keywords>\n",
             "<speaker>Jane Doe</speaker>\n", "<talkid>1</talkid>\n", "<title>Jane Doe: A talk</title>\n",
             "<description>TED Talk Subtitles: About things.</description>\n", "Thank you so much.\n",
             '<reviewer href="x">R</reviewer>\n', '<translator href="y">T</translator>\n', "It's great.\n"]
    assert [one_line(x) for x in iwslt_tags(lines)] == [
        "Jane Doe: A talk", "TED Talk Subtitles: About things.", "Thank you so much.", "It's great."]


@pytest.mark.fast
def test_seg_texts_of_iwslt_xml_and_wmt_sgm():
    xml = ['<?xml version="1.0" encoding="UTF-8"?>', "<mteval>", '<srcset setid="dev2010" srclang="german">',
           '<doc docid="535" genre="lectures">', "<url>http://www.ted.com/x</url>", "<talkid>535</talkid>",
           "<title>T</title>", '<seg id="1"> Es ist \u2019schön\u2019 hier. </seg>',
           '<seg id="2">Zweiter   Satz.</seg>', "</doc>", "</srcset>", "</mteval>"]
    assert list(seg_texts(xml, fix_quotes=True)) == ["Es ist 'schön' hier.", "Zweiter Satz."]
    sgm = ['<srcset setid="newstest2016" srclang="any">', '<doc sysid="ref" docid="a" genrelang="de" origlang="de">',
           "<p>", '<seg id="1">Obama &amp; Netanyahu</seg>', '<seg id="2">it\u2019s  fine </seg>', "</p>", "</doc>"]
    # entities stay as written (sacreBLEU keeps them); ’ is only normalised for IWSLT xml
    assert list(seg_texts(sgm)) == ["Obama &amp; Netanyahu", "it\u2019s fine"]
    with pytest.raises(ValueError, match="line 2"):
        list(seg_texts(["<p>", '<seg id="1">no end']))


@pytest.mark.fast
def test_tmx_pairs_and_skipped_units():
    tmx = b"""<?xml version="1.0" encoding="utf-8"?>
<tmx version="1.4"><header srclang="en"/><body>
<tu><tuv xml:lang="en-US"><seg>Hello &amp; welcome</seg></tuv><tuv xml:lang="de-DE"><seg>Hallo und willkommen</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>orphan</seg></tuv></tu>
<tu><tuv xml:lang="de"><seg>Zwei <ph>x</ph> Wege</seg></tuv><tuv xml:lang="en"><seg>Two  ways</seg></tuv></tu>
</body></tmx>"""
    skipped = []
    got = list(tmx_pairs(io.BytesIO(tmx), ("de", "en"), skipped))
    assert got == [("Hallo und willkommen", "Hello & welcome"), ("Zwei x Wege", "Two ways")]
    assert skipped == [2]


@pytest.mark.fast
def test_tsv_and_aspec_columns():
    assert list(column_pairs(["a\tb\n", "c\td\n"], ("en", "de"), ("de", "en"))) == [("b", "a"), ("d", "c")]
    with pytest.raises(ValueError, match="line 2: expected 2 fields"):
        list(column_pairs(["a\tb\n", "only one\n"], ("en", "de"), ("de", "en")))
    aspec = ["0.93 ||| A-1 ||| 1 ||| 日本 語 の 文 ||| A Japanese sentence\n", "A-2 ||| 2 ||| 二 つ 目 ||| The second\n"]
    assert list(column_pairs(aspec, ("ja", "en"), ("en", "ja"), "|||", last=True)) == [
        ("A Japanese sentence", "日本 語 の 文"), ("The second", "二 つ 目")]


@pytest.mark.fast
def test_unequal_sides_are_an_error_naming_both_files(tmp_path):
    (tmp_path / "a.de").write_text("eins\nzwei\ndrei\n", encoding="utf-8")
    (tmp_path / "a.en").write_text("one\ntwo\n", encoding="utf-8")
    part = Part("plain", (("de", ("a.de",)), ("en", ("a.en",))))

    class Sources:  # files straight from tmp_path
        def resolve(self, part, names):
            return tmp_path / names[0], str(tmp_path / names[0])

    out = {"de": tmp_path / "out.de", "en": tmp_path / "out.en"}
    with pytest.raises(PrepError) as e:
        write_split([part], ("de", "en"), Sources(), out)
    msg = str(e.value)
    assert "a.de gives 3 lines of de" in msg and "a.en gives 2 lines of en" in msg
    assert not out["de"].exists() and not (tmp_path / "out.de.tmp").exists()


# ---------------------------------------------------------------------------------------------
# fetch: offline, licensed files, checksums, resume


@pytest.mark.fast
def test_offline_message_names_files_and_raw_dir(tmp_path, monkeypatch, capsys):
    from syntrans.cli.prepare import main
    from syntrans.prep import download

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(download, "urlopen", no_network)
    assert main(["wmt14", "--pair", "en-de", "--out", str(tmp_path / "w14")]) == 2
    err = capsys.readouterr().err
    raw = tmp_path / "w14" / "raw"
    assert "network is unreachable" in err and "Traceback" not in err
    assert f"--raw-dir {raw}" in err
    for d in CORPORA["wmt14"].downloads:
        assert f"{raw / d.name}" in err and d.url in err


@pytest.mark.fast
def test_licensed_corpus_without_files(tmp_path, capsys):
    from syntrans.cli.prepare import main

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["aspec", "--pair", "ja-en", "--out", str(tmp_path / "o"), "--raw-dir", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "licensed" in err and str(empty / "ASPEC-JE" / "train" / "train-1.txt") in err
    assert "ASPEC-JC" in err  # the documented layout
    assert not any(empty.iterdir())  # nothing written into the user's folder


@pytest.mark.fast
def test_unknown_pair_is_rejected_with_the_corpus_pairs(tmp_path):
    with pytest.raises(PrepError, match="wmt16 has no pair fr-en; its pairs: en-de .*en-ro"):
        prepare_corpus("wmt16", "fr", "en", tmp_path)


@pytest.mark.fast
def test_checksum_first_use_then_mismatch(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    f = raw / "data.tgz"
    f.write_bytes(b"original bytes")
    good = hashlib.sha256(b"original bytes").hexdigest()
    verify_file(f, raw / SUMS_NAME)
    assert read_sums(raw / SUMS_NAME) == {"data.tgz": good}
    f.write_bytes(b"corrupted bytes")
    with pytest.raises(ChecksumError) as e:
        verify_file(f, raw / SUMS_NAME)
    msg = str(e.value)
    bad = hashlib.sha256(b"corrupted bytes").hexdigest()
    assert str(f) in msg and f"expected {good}" in msg and f"found {bad}" in msg and SUMS_NAME in msg
    # a known md5 from the registry is checked too
    with pytest.raises(ChecksumError, match="md5 mismatch"):
        verify_file(f, tmp_path / "other-sums", known_md5="0" * 32)


@pytest.mark.fast
def test_fetch_skips_verified_archive_and_rejects_corrupt_one(tmp_path):
    from syntrans.prep.download import fetch_downloads

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.tgz").write_bytes(b"archive")
    d = Download("a.tgz", "http://127.0.0.1:9/a.tgz")  # never contacted: the file is there
    log = []
    fetch_downloads(CORPORA["wmt14"], [d], raw, [], {}, log.append)
    assert "a.tgz: already downloaded, skipped" in log
    (raw / "a.tgz").write_bytes(b"archivX")
    with pytest.raises(ChecksumError, match="a.tgz: sha256 mismatch"):
        fetch_downloads(CORPORA["wmt14"], [d], raw, [], {}, log.append)
    # --checksums: a user-supplied sum is checked as well
    sums = {"a.tgz": hashlib.sha256(b"something else").hexdigest()}
    (raw / SUMS_NAME).unlink()
    with pytest.raises(ChecksumError, match="--checksums"):
        fetch_downloads(CORPORA["wmt14"], [d], raw, [(sums, "--checksums S")], {}, log.append)


class _RangeHandler(http.server.BaseHTTPRequestHandler):
    payload = bytes(range(256)) * 40
    ranges: list = []
    honour_range = True

    def do_GET(self):
        rng = self.headers.get("Range")
        type(self).ranges.append(rng)
        start = int(rng.split("=")[1].rstrip("-")) if rng and self.honour_range else 0
        if start >= len(self.payload):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(self.payload)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.payload[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(self.payload) - 1}/{len(self.payload)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    _RangeHandler.ranges = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _RangeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/file.tgz"
    server.shutdown()
    server.server_close()


def test_download_resumes_a_part_file_with_a_range_request(tmp_path, http_server, monkeypatch):
    from syntrans.prep.download import download

    dest = tmp_path / "file.tgz"
    payload = _RangeHandler.payload
    (tmp_path / "file.tgz.part").write_bytes(payload[:1000])
    download(http_server, dest, log=lambda m: None, progress=False)
    assert _RangeHandler.ranges == ["bytes=1000-"]
    assert dest.read_bytes() == payload and not (tmp_path / "file.tgz.part").exists()
    # a .part that already holds the whole file: HTTP 416 with the same size completes it
    dest.unlink()
    (tmp_path / "file.tgz.part").write_bytes(payload)
    download(http_server, dest, log=lambda m: None, progress=False)
    assert dest.read_bytes() == payload and _RangeHandler.ranges[-1] == f"bytes={len(payload)}-"
    # a server that ignores Range sends everything again: the file is still right
    monkeypatch.setattr(_RangeHandler, "honour_range", False)
    dest.unlink()
    (tmp_path / "file.tgz.part").write_bytes(b"junk" * 10)
    download(http_server, dest, log=lambda m: None, progress=False)
    assert dest.read_bytes() == payload


# ---------------------------------------------------------------------------------------------
# the pipeline


SMALL = {"train": 120, "valid": 20, "test": 20}


def _mtimes(d: Path) -> dict:
    return {p.name: p.stat().st_mtime_ns for p in sorted(d.iterdir())}


def test_pipeline_resume_skips_every_step_and_force_redoes(tmp_path):
    out = tmp_path / "syn"
    log1 = []
    p = prepare_corpus("synthetic", "src", "tgt", out, smoke=True, smoke_sizes=SMALL, log=log1.append)
    assert p.sizes == SMALL and p.parsers == {"src": "gold", "tgt": "gold"} and p.joint
    assert (p.data_bin / "train.src-tgt.src.head.bin").exists()
    assert p.ref_test.read_text().splitlines() == (out / "raw" / "test.tgt").read_text().splitlines()
    before = _mtimes(p.data_bin)

    log2 = []
    p2 = prepare_corpus("synthetic", "src", "tgt", out, smoke=True, smoke_sizes=SMALL, log=log2.append)
    for step in ("fetch", "extract", "tokenize", "bpe", "parse", "binarize", "reference"):
        assert f"step {step}: done before, skipped" in log2
    assert not any("running" in m for m in log2)
    assert _mtimes(p2.data_bin) == before
    summary = json.loads((out / "prepared.json").read_text())
    assert summary["sizes"] == SMALL and summary["paths"]["data_bin"] == str(p.data_bin)

    # other BPE settings redo bpe and what follows, not the steps before
    log3 = []
    prepare_corpus("synthetic", "src", "tgt", out, smoke=True, smoke_sizes=SMALL, bpe_ops=50, log=log3.append)
    assert "step tokenize: done before, skipped" in log3 and "step parse: done before, skipped" in log3
    assert any(m.startswith("step bpe: running (its settings changed") for m in log3)
    assert any(m.startswith("step binarize: running") for m in log3)

    log4 = []
    prepare_corpus("synthetic", "src", "tgt", out, smoke=True, smoke_sizes=SMALL, bpe_ops=50, force=True,
                   log=log4.append)
    assert all(f"step {s}: running (--force)" in log4 for s in ("fetch", "extract", "binarize", "reference"))
    after = _mtimes(p.data_bin)
    assert after.keys() == before.keys() and all(after[k] > before[k] for k in after)


def _tags(lang: str, lines: list) -> str:
    head = ("<url>http://www.ted.com/talks/x.html</url>\n<keywords>talks</keywords>\n<talkid>1</talkid>\n"
            f"<title>Titel {lang}</title>\n<description>Beschreibung {lang}</description>\n")
    return head + "".join(x + "\n" for x in lines)


def _xml(lines: list) -> str:
    segs = "".join(f'<seg id="{k}"> {x} </seg>\n' for k, x in enumerate(lines, 1))
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<mteval>\n<doc docid="1">\n{segs}</doc>\n</mteval>\n'


def test_iwslt14_from_a_local_archive(tmp_path):
    """The IWSLT14 pipeline on a fake de-en.tgz: tags removed, lowercase, valid = every 23rd cleaned pair."""
    de = [f"Satz Nummer {k} ist Da." for k in range(1, 61)] + ["zu lang " * 100]
    en = [f"Sentence number {k} is There." for k in range(1, 61)] + ["too long " * 100]
    files = {"de-en/train.tags.de-en.de": _tags("de", de), "de-en/train.tags.de-en.en": _tags("en", en)}
    tests = {}
    for s in ("TED.dev2010", "TEDX.dev2012", "TED.tst2010", "TED.tst2011", "TED.tst2012"):
        tests[s] = ([f"Test {s} Eins\u2019s."], [f"Test {s} One."])
        files[f"de-en/IWSLT14.{s}.de-en.de.xml"] = _xml(tests[s][0])
        files[f"de-en/IWSLT14.{s}.de-en.en.xml"] = _xml(tests[s][1])
    raw = tmp_path / "raw"
    raw.mkdir()
    with tarfile.open(raw / "iwslt14-de-en.tgz", "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    log = []
    p = prepare_corpus("iwslt14", "de", "en", tmp_path / "out", raw_dir=raw, smoke=True, parser="flat", log=log.append)
    # 62 text lines (title, description, 60 sentences), the long one dropped; 61 kept → 2 held out (23rd, 46th)
    assert p.sizes == {"train": 60, "valid": 2, "test": 5} and p.lowercase
    assert p.dropped == {"empty": 0, "too_short": 0, "too_long": 1, "ratio": 0}
    tok_valid = (p.out_dir / "tok" / "valid.en").read_text().splitlines()
    assert tok_valid == ["sentence number 21 is there .", "sentence number 44 is there ."]
    assert (p.out_dir / "text" / "valid.de").read_text().splitlines() == ["Satz Nummer 21 ist Da.", "Satz Nummer 44 ist Da."]
    assert (p.out_dir / "tok" / "train.de").read_text().splitlines()[:2] == ["titel de", "beschreibung de"]
    order = ("TED.dev2010", "TEDX.dev2012", "TED.tst2010", "TED.tst2011", "TED.tst2012")
    assert p.ref_test.read_text().splitlines() == [tests[s][1][0].lower() for s in order]
    assert p.src_test_raw.read_text().splitlines() == [f"test {s.lower()} eins's." for s in order]
    assert p.parsers == {"de": "flat", "en": "flat"}
    assert read_sums(raw / SUMS_NAME).keys() == {"iwslt14-de-en.tgz"}  # trust on first use


@pytest.mark.fast
def test_auto_parser_without_models_outside_smoke_is_an_error():
    from syntrans.prep.parse_step import resolve_parsers

    with pytest.raises(PrepError, match="stanza.download"):
        resolve_parsers("auto", ("de", "en"), smoke=False, gold=False, installed=lambda lang: False)
    parsers, notes = resolve_parsers("auto", ("de", "en"), smoke=True, gold=False, installed=lambda lang: lang == "en")
    assert parsers == {"de": "right-branching", "en": "stanza"}
    assert notes == ["no stanza model for de installed: using the right-branching parser (smoke run)"]


MULTI30K = SHARED_DATA / "multi30k"


def test_multi30k_smoke(tmp_path):
    if not (MULTI30K / "test_2016_flickr.en").exists():
        pytest.skip(f"{MULTI30K} is absent (the shared real-data folder is optional)")
    from syntrans.prep.parse_step import stanza_installed

    log = []
    p = prepare_corpus("multi30k", "de", "en", tmp_path / "m30", raw_dir=MULTI30K, smoke=True,
                       smoke_sizes={"train": 300, "valid": 50, "test": 50}, log=log.append)
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            base = p.data_bin / f"{split}.de-en.{lang}"
            for suffix in (".bin", ".idx", ".word.bin", ".head.bin", ".dist.bin", ".dist.idx"):
                assert Path(f"{base}{suffix}").exists(), f"{base}{suffix}"
    assert p.sizes["valid"] == 50 and p.sizes["test"] == 50 and 0 < p.sizes["train"] <= 300
    assert p.sizes["train"] + sum(p.dropped.values()) == 300
    raw_test = (MULTI30K / "test_2016_flickr.en").read_text(encoding="utf-8").splitlines()[:50]
    assert p.ref_test.read_text(encoding="utf-8").splitlines() == raw_test
    assert (MULTI30K / SUMS_NAME).exists() is False  # the user's folder is left alone
    for lang in ("de", "en"):
        if not stanza_installed(lang):
            assert p.parsers[lang] == "right-branching"
            assert f"no stanza model for {lang} installed: using the right-branching parser (smoke run)" in log


def test_sharded_parse_equals_the_in_process_parse(tmp_path):
    from syntrans.prep.parse_step import run_parse

    tok = tmp_path / "tok"
    tok.mkdir()
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            (tok / f"{split}.{lang}").write_text("ein kleiner Test .\n\nnoch ein Satz mit &apos; s\nc\nd e\n", encoding="utf-8")
    parsers = {"de": "left-branching", "en": "left-branching"}
    log = []
    run_parse(tok, tmp_path / "one", ("de", "en"), parsers, "left-branching", False, shards=1, log=log.append)
    run_parse(tok, tmp_path / "two", ("de", "en"), parsers, "left-branching", False, shards=2, log=log.append)
    one, two = (tmp_path / "one" / "train.de.conllu").read_text(), (tmp_path / "two" / "train.de.conllu").read_text()
    assert two == one and "# line = 5" in one
    assert (tmp_path / "two" / "train.de.conllu.shard1of2").exists()  # the shards are kept beside the merge


def _sgm(lines: list) -> str:
    segs = "".join(f'<seg id="{k}">{x}</seg>\n' for k, x in enumerate(lines, 1))
    return f'<refset setid="x" srclang="any">\n<doc docid="d" genre="news">\n<p>\n{segs}</p>\n</doc>\n</refset>\n'


@pytest.mark.fast
def test_extract_wmt18_en_tr_from_zip_and_tgz(tmp_path):
    """The registry's wmt18 entry read from fake archives: SETIMES2 zip (plain), WMT test tgz (sgm), per direction."""
    import zipfile

    from syntrans.prep.extract import extract_text

    raw = tmp_path / "raw"
    raw.mkdir()
    with zipfile.ZipFile(raw / "setimes2-en-tr.txt.zip", "w") as z:
        z.writestr("SETIMES.en-tr.en", "Hello.\nA\u2028B\n")
        z.writestr("SETIMES.en-tr.tr", "Merhaba.\nC\n")
        z.writestr("README", "x")

    def tgz(name, files):
        with tarfile.open(raw / name, "w:gz") as tf:
            for member, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))

    tgz("wmt16-test.tgz", {"test/newstest2016-entr-src.en.sgm": _sgm(["v en"]),
                           "test/newstest2016-entr-ref.tr.sgm": _sgm(["v tr"]),
                           "test/newstest2016-tren-src.tr.sgm": _sgm(["V tr", "W tr"]),
                           "test/newstest2016-tren-ref.en.sgm": _sgm(["V en", "W en"])})
    tgz("wmt17-test.tgz", {"test/newstest2017-entr-src.en.sgm": _sgm(["t &amp; en"]),
                           "test/newstest2017-entr-ref.tr.sgm": _sgm(["t tr"]),
                           "test/newstest2017-tren-src.tr.sgm": _sgm(["T tr"]),
                           "test/newstest2017-tren-ref.en.sgm": _sgm(["T en"])})
    pair = CORPORA["wmt18"].find_pair("tr", "en")
    text = tmp_path / "text"
    assert extract_text(pair, "en-tr", raw, text, log=lambda m: None) == {"train": 2, "valid": 1, "test": 1}
    assert (text / "train.en").read_text() == "Hello.\nA B\n"  # U+2028 would split the line for other tools
    assert (text / "test.en").read_text() == "t &amp; en\n" and (text / "test.tr").read_text() == "t tr\n"
    assert extract_text(pair, "tr-en", raw, text, log=lambda m: None)["valid"] == 2
    assert (text / "valid.tr").read_text() == "V tr\nW tr\n"
    assert not (text / ".members").exists()
