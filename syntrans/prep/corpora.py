"""The corpus registry of ``syntrans-prepare``: what to fetch, what to extract, how to clean, BPE size.

One :class:`Corpus` per name in :data:`CORPORA`; each holds one :class:`PairData` per language pair
it has (canonical order, e.g. ``de-en``; either direction may be asked for). A pair names, per
direction and split, the :class:`Part` files whose concatenation (in order) is that split's parallel
text, and its cleaning, lowercasing, tokenization and BPE settings.

Settings the papers state (each paper's data section) are marked "stated"; every other choice is
marked "not stated: ours". The URLs are the usual public locations (statmt.org, data.statmt.org,
fairseq's dl.fbaipublicfiles.com mirror of IWSLT14, OPUS for SETIMES2); they could not be checked
from the machine this was written on (no network), nor could the member names inside the training
archives (members are matched by base name, so a different top folder does not matter). Known
checksums: the md5 values of the WMT dev/test archives are those sacreBLEU 2.6.0 verifies for the
same URLs (``sacrebleu/dataset/__init__.py``); no sha256 value is published for any of these files,
so every other archive is verified trust-on-first-use (see :mod:`syntrans.prep.checksums`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import PrepError

SPLITS = ("train", "valid", "test")

#: formats :mod:`syntrans.prep.extract` reads; the first four hold one language per file
ONE_LANGUAGE_FORMATS = ("plain", "iwslt-tags", "iwslt-xml", "sgm")
TWO_LANGUAGE_FORMATS = ("tmx", "tsv", "aspec")


@dataclass(frozen=True)
class Download:
    """One archive to download into ``--raw-dir``: its local file name, URL and any published checksum."""

    name: str
    url: str
    sha256: str | None = None
    md5: str | None = None


@dataclass(frozen=True)
class Part:
    """One file (or one file per language) of a split, in one format.

    ``files``: ((language, candidate names), ...) for one-language formats; (("*", candidates),) for
    two-language formats, whose ``columns`` give the language of each column (tsv: all columns, in
    order; aspec: the last two ``|||`` fields). The first candidate that exists is read. A name is a
    member of ``archive`` (matched by base name or path suffix), or, with ``archive`` None, a path
    relative to ``--raw-dir``.
    """

    fmt: str
    files: tuple[tuple[str, tuple[str, ...]], ...]
    archive: str | None = None
    columns: tuple[str, ...] = ()

    def candidates(self, lang: str) -> tuple[str, ...]:
        """The candidate names holding ``lang`` (or both languages, for two-language formats)."""
        for key, names in self.files:
            if key in (lang, "*"):
                return names
        raise KeyError(f"part {self} has no file for language {lang!r}")


@dataclass(frozen=True)
class Clean:
    """Training-set filters (Moses clean-corpus-n semantics, on tokens after tokenization).

    A pair is dropped when a side is empty, has fewer than ``min_len`` or more than ``max_len``
    tokens, or when one side has more than ``ratio`` times the tokens of the other.
    """

    min_len: int = 1
    max_len: int | None = None
    ratio: float | None = None


@dataclass(frozen=True)
class PairData:
    """Everything about one language pair of a corpus.

    ``splits[direction][split]``: the parts of a split (direction ``"de-en"`` = source de, target en).
    ``valid_every``: when > 0 the valid split is every N-th pair of the *cleaned* training text (the
    rest is train), and the valid parts are empty. ``segmented``: languages whose text is already
    word-segmented (no Moses tokenizer; the tokens are the whitespace fields). ``tokenize`` False:
    the text is already tokenized (synthetic). ``gold_parses``: parses come with the corpus.

    The fields after ``notes`` are off in every registry entry; a paper's :class:`~syntrans.prep.recipe.Recipe`
    sets them: ``normalize_punctuation``/``remove_non_printing`` (Moses scripts before tokenization),
    ``langid`` (the language filter of training pairs), ``train_limit`` (the first N training pairs only),
    ``bpe_ops_by_lang`` (((lang, merges), ...) for separate BPE; empty: ``bpe_ops`` for every side) and
    ``word_vocab`` (no BPE: words, a dictionary of the N most frequent per language) and ``multitask`` (the
    +MULTI-TASK data of :mod:`syntrans.prep.multitask`: translation and source-parse pairs, no sidecars), with
    ``multitask_target`` its parse target (``constituency``, the authors' skeleton, or ``dependency``).
    """

    langs: tuple[str, str]
    splits: dict = field(compare=False)
    clean: Clean | None
    lowercase: bool
    bpe_ops: int
    joint: bool = True
    aggressive_dashes: bool = False
    segmented: tuple[str, ...] = ()
    valid_every: int = 0
    tokenize: bool = True
    gold_parses: bool = False
    notes: str = ""
    normalize_punctuation: bool = False
    remove_non_printing: bool = False
    langid: bool = False
    train_limit: int | None = None
    bpe_ops_by_lang: tuple[tuple[str, int], ...] = ()
    word_vocab: int | None = None
    multitask: bool = False
    multitask_target: str = "constituency"
    #: more references of the test set per target language, ((lang, (file in --raw-dir, ...)), ...): a test set with
    #: several references (NIST's four) is scored against all of them; a direction whose target has none, one
    more_refs: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def reference_files(self, tgt: str) -> tuple[str, ...]:
        """The files of the test set's further references when ``tgt`` is the target (empty: one reference)."""
        return dict(self.more_refs).get(tgt, ())

    def merges(self) -> dict[str, int]:
        """{lang: BPE merges} of each side: ``bpe_ops_by_lang`` where given, else ``bpe_ops`` for both."""
        return dict(self.bpe_ops_by_lang) if self.bpe_ops_by_lang else dict.fromkeys(self.langs, self.bpe_ops)


@dataclass(frozen=True)
class Corpus:
    """A corpus: its name, kind (download, licensed, local, synthetic), pairs and downloads."""

    name: str
    description: str
    kind: str
    pairs: dict = field(compare=False)  # "de-en" -> PairData
    downloads: tuple[Download, ...] = ()
    layout: str = ""  # licensed and local corpora: where the files come from, the expected layout

    def pair_names(self) -> list[str]:
        return list(self.pairs)

    def find_pair(self, src: str, tgt: str) -> PairData:
        """The pair data for direction src→tgt (either order of a registered pair); PrepError if absent."""
        for name, data in self.pairs.items():
            if set(data.langs) == {src, tgt} and src != tgt:
                return data
        have = ", ".join(f"{p} (either direction)" for p in self.pairs)
        raise PrepError(f"corpus {self.name} has no pair {src}-{tgt}; its pairs: {have}. "
                        f"Pass one of them with --pair (e.g. --pair {next(iter(self.pairs))}).")

    def download(self, name: str) -> Download:
        for d in self.downloads:
            if d.name == name:
                return d
        raise KeyError(name)


# --------------------------------------------------------------------------------------------
# helpers to write the registry compactly


def _plain(archive: str | None, **files: str) -> Part:
    return Part("plain", tuple((lang, (name,)) for lang, name in files.items()), archive)


def _per_lang(fmt: str, archive: str | None, pattern: str, langs: tuple[str, str]) -> Part:
    return Part(fmt, tuple((lang, (pattern.format(lang=lang),)) for lang in langs), archive)


def _local_files(langs: tuple[str, str], train: str, valid: str, test: str) -> dict:
    """splits[direction][split] of a corpus of plain files in --raw-dir, one a split and language (``{lang}`` in each
    pattern)."""
    return _directional(langs, *([_per_lang("plain", None, pattern, langs)] for pattern in (train, valid, test)))


def _newstest(archive: str, test: str, l1: str, l2: str, code: str | None = None) -> dict[str, Part]:
    """{direction: sgm Part}: direction s-t reads ``{test}-{st}-src.{s}.sgm`` and ``{test}-{st}-ref.{t}.sgm``.

    These are the files sacreBLEU reads for ``-t wmtYY -l s-t`` (``code`` overrides ``st``: newstest2014
    has only the ``deen`` set, with an English source for en→de).
    """
    out = {}
    for s, t in ((l1, l2), (l2, l1)):
        c = code or f"{s}{t}"
        out[f"{s}-{t}"] = Part("sgm", ((s, (f"{test}-{c}-src.{s}.sgm",)), (t, (f"{test}-{c}-ref.{t}.sgm",))), archive)
    return out


def _directional(langs: tuple[str, str], train: list[Part], valid: dict[str, Part] | list[Part],
                 test: dict[str, Part] | list[Part]) -> dict:
    """splits[direction][split] for both directions; dict arguments differ by direction, lists do not."""
    l1, l2 = langs
    out = {}
    for d in (f"{l1}-{l2}", f"{l2}-{l1}"):
        out[d] = {"train": tuple(train),
                  "valid": (valid[d],) if isinstance(valid, dict) else tuple(valid),
                  "test": (test[d],) if isinstance(test, dict) else tuple(test)}
    return out


# --------------------------------------------------------------------------------------------
# downloads (file name in --raw-dir, URL, published checksum if any)

_DL = {d.name: d for d in (
    Download("iwslt14-de-en.tgz", "https://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz"),
    Download("wmt13-europarl-v7.tgz", "https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz"),
    Download("wmt13-commoncrawl.tgz", "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz"),
    Download("wmt14-nc-v9.tgz", "https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz"),
    Download("wmt16-nc-v11.tgz", "https://data.statmt.org/wmt16/translation-task/training-parallel-nc-v11.tgz"),
    Download("wmt17-nc-v12.tgz", "https://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz"),
    Download("wmt17-rapid2016.tgz", "https://data.statmt.org/wmt17/translation-task/rapid2016.tgz"),
    Download("wmt16-europarl-v8.tgz", "https://data.statmt.org/wmt16/translation-task/training-parallel-ep-v8.tgz"),
    Download("setimes2-en-ro.txt.zip", "https://object.pouta.csc.fi/OPUS-SETIMES/v2/moses/en-ro.txt.zip"),
    Download("setimes2-en-tr.txt.zip", "https://object.pouta.csc.fi/OPUS-SETIMES/v2/moses/en-tr.txt.zip"),
    # dev/test archives: md5 as verified by sacreBLEU 2.6.0 for the same URLs
    Download("wmt13-test.tgz", "https://statmt.org/wmt13/test.tgz", md5="48eca5d02f637af44e85186847141f67"),
    Download("wmt14-test-full.tgz", "https://statmt.org/wmt14/test-full.tgz", md5="a8cd784e006feb32ac6f3d9ec7eb389a"),
    Download("wmt15-test.tgz", "https://statmt.org/wmt15/test.tgz", md5="67e3beca15e69fe3d36de149da0a96df"),
    Download("wmt16-test.tgz", "https://data.statmt.org/wmt16/translation-task/test.tgz",
             md5="3d809cd0c2c86adb2c67034d15c4e446"),
    Download("wmt16-dev.tgz", "https://data.statmt.org/wmt16/translation-task/dev.tgz",
             md5="4a3dc2760bb077f4308cce96b06e6af6"),
    Download("wmt17-test.tgz", "https://data.statmt.org/wmt17/translation-task/test.tgz",
             md5="86a1724c276004aa25455ae2a04cef26"),
)}


def _dls(*names: str) -> tuple[Download, ...]:
    return tuple(_DL[n] for n in names)


DE_EN = ("de", "en")
EN_DE = ("en", "de")

# training parts shared by the WMT en-de corpora (member base names; not verified, see the module docs)
_EUROPARL_V7 = _per_lang("plain", "wmt13-europarl-v7.tgz", "europarl-v7.de-en.{lang}", EN_DE)
_COMMONCRAWL = _per_lang("plain", "wmt13-commoncrawl.tgz", "commoncrawl.de-en.{lang}", EN_DE)
_NC_V9 = _per_lang("plain", "wmt14-nc-v9.tgz", "news-commentary-v9.de-en.{lang}", EN_DE)
_NC_V11 = _per_lang("plain", "wmt16-nc-v11.tgz", "news-commentary-v11.de-en.{lang}", EN_DE)
_NC_V12 = _per_lang("plain", "wmt17-nc-v12.tgz", "news-commentary-v12.de-en.{lang}", EN_DE)
_RAPID = _per_lang("plain", "wmt17-rapid2016.tgz", "rapid2016.de-en.{lang}", EN_DE)

# newstest2013 has one file per language ("src" for every language), no direction
_NEWSTEST2013 = Part("sgm", (("en", ("newstest2013-src.en.sgm",)), ("de", ("newstest2013-src.de.sgm",))),
                     "wmt13-test.tgz")

#: IWSLT14 de-en test: the concatenation fairseq's prepare-iwslt14.sh builds (6,750 lines)
_IWSLT_TEST = tuple(_per_lang("iwslt-xml", "iwslt14-de-en.tgz", f"IWSLT14.{s}.de-en.{{lang}}.xml", DE_EN)
                    for s in ("TED.dev2010", "TEDX.dev2012", "TED.tst2010", "TED.tst2011", "TED.tst2012"))

# common filter settings
_IWSLT_CLEAN = Clean(1, 175, 1.5)   # stated (fairseq's prepare-iwslt14.sh: clean-corpus-n 1 175, ratio 1.5)
_WMT_CLEAN = Clean(1, 100, 1.5)     # not stated: ours (Moses' usual 1-80 and fairseq's 1-250 after BPE lie either side)
_CJK_CLEAN = Clean(1, 100, 3.0)     # not stated: ours (a wide ratio: token counts differ across scripts)


CORPORA: dict[str, Corpus] = {}


def _register(c: Corpus) -> None:
    CORPORA[c.name] = c


_register(Corpus(
    "iwslt14", "IWSLT14 TED de-en, the fairseq pipeline (160k/7.3k/6.7k)", "download",
    {"de-en": PairData(
        DE_EN,
        _directional(DE_EN, [_per_lang("iwslt-tags", "iwslt14-de-en.tgz", "train.tags.de-en.{lang}", DE_EN)],
                     [], list(_IWSLT_TEST)),
        _IWSLT_CLEAN, lowercase=True,  # stated (fairseq's prepare-iwslt14.sh lowercases)
        bpe_ops=10000, joint=True,     # stated: joint BPE 10k
        # ours: valid = every 23rd line of the cleaned train, as fairseq's prepare-iwslt14.sh (the split sizes Hou et
        # al. report); their text says "randomly select 5%" (syntrans.reproduce.published_data: valid_split)
        valid_every=23,
        notes="train.tags lines with <url>, <talkid>, <keywords> (and other metadata elements) dropped, "
              "<title>/<description> tags stripped; xml: <seg> text, ’ → ' (as fairseq)")},
    _dls("iwslt14-de-en.tgz")))

_register(Corpus(
    "nc11", "News Commentary v11 de-en (valid newstest2015, test newstest2016)", "download",
    {"de-en": PairData(
        DE_EN,
        _directional(DE_EN, [_NC_V11], _newstest("wmt15-test.tgz", "newstest2015", "de", "en"),
                     _newstest("wmt16-test.tgz", "newstest2016", "de", "en")),
        _IWSLT_CLEAN,              # not stated: ours (the IWSLT14 filter, 1-175 tokens, ratio 1.5)
        lowercase=False,           # not stated: ours (cased)
        bpe_ops=16000, joint=True)},  # stated: 16k; joint: ours
    _dls("wmt16-nc-v11.tgz", "wmt15-test.tgz", "wmt16-test.tgz")))

_register(Corpus(
    "wmt14", "WMT14 en-de: Europarl v7 + CommonCrawl + News Commentary v9 (valid newstest2013, test newstest2014)",
    "download",
    {"en-de": PairData(
        EN_DE,
        _directional(EN_DE, [_EUROPARL_V7, _COMMONCRAWL, _NC_V9], [_NEWSTEST2013],
                     _newstest("wmt14-test-full.tgz", "newstest2014", "en", "de", code="deen")),
        _WMT_CLEAN, lowercase=False,
        bpe_ops=40000, joint=True,  # stated: joint 40k
        aggressive_dashes=True)},   # not stated: ours (fairseq's prepare-wmt14en2de.sh tokenizes with -a)
    _dls("wmt13-europarl-v7.tgz", "wmt13-commoncrawl.tgz", "wmt14-nc-v9.tgz", "wmt13-test.tgz",
         "wmt14-test-full.tgz")))

_register(Corpus(
    "wmt16", "WMT16 en-de (Europarl v7 + CommonCrawl + NC v11; valid newstest2015, test newstest2016) and "
             "en-ro (Europarl v8 + SETIMES2; valid newsdev2016, test newstest2016)", "download",
    {"en-de": PairData(
        EN_DE,
        _directional(EN_DE, [_EUROPARL_V7, _COMMONCRAWL, _NC_V11],
                     # valid: stated (Bugliarello & Okazaki 2020, App. A: "using newstest2015 and newstest2016 as
                     # validation and test sets")
                     _newstest("wmt15-test.tgz", "newstest2015", "en", "de"),
                     _newstest("wmt16-test.tgz", "newstest2016", "en", "de")),
        _WMT_CLEAN, lowercase=False,
        bpe_ops=32000, joint=True,  # not stated: ours (Vaswani et al.'s joint 32k-ish vocabulary)
        aggressive_dashes=True),    # not stated: ours (as wmt14)
     "en-ro": PairData(
        ("en", "ro"),
        _directional(("en", "ro"),
                     [_per_lang("plain", "wmt16-europarl-v8.tgz", "europarl-v8.ro-en.{lang}", ("en", "ro")),
                      _per_lang("plain", "setimes2-en-ro.txt.zip", "SETIMES.en-ro.{lang}", ("en", "ro"))],
                     _newstest("wmt16-dev.tgz", "newsdev2016", "en", "ro"),
                     _newstest("wmt16-test.tgz", "newstest2016", "en", "ro")),
        _WMT_CLEAN, lowercase=False,
        bpe_ops=40000, joint=True)},  # not stated: ours
    _dls("wmt13-europarl-v7.tgz", "wmt13-commoncrawl.tgz", "wmt16-nc-v11.tgz", "wmt15-test.tgz", "wmt16-test.tgz",
         "wmt16-europarl-v8.tgz", "setimes2-en-ro.txt.zip", "wmt16-dev.tgz")))

_register(Corpus(
    "wmt17", "WMT17 en-de: Europarl v7 + CommonCrawl + NC v12 + Rapid 2016 (valid newstest2016, test newstest2017)",
    "download",
    {"en-de": PairData(
        EN_DE,
        _directional(EN_DE, [_EUROPARL_V7, _COMMONCRAWL, _NC_V12, _RAPID],
                     # valid: stated (Bugliarello & Okazaki 2020, App. A: "On WMT17, we use newstest2016 and
                     # newstest2017 as validation and test sets")
                     _newstest("wmt16-test.tgz", "newstest2016", "en", "de"),
                     _newstest("wmt17-test.tgz", "newstest2017", "en", "de")),
        _WMT_CLEAN, lowercase=False,
        bpe_ops=32000, joint=True,  # not stated: ours
        aggressive_dashes=True)},   # not stated: ours (as wmt14)
    _dls("wmt13-europarl-v7.tgz", "wmt13-commoncrawl.tgz", "wmt17-nc-v12.tgz", "wmt17-rapid2016.tgz",
         "wmt16-test.tgz", "wmt17-test.tgz")))

_register(Corpus(
    "wmt18", "WMT18 en-tr: SETIMES2 (valid newstest2016, test newstest2017)", "download",
    {"en-tr": PairData(
        ("en", "tr"),
        _directional(("en", "tr"), [_per_lang("plain", "setimes2-en-tr.txt.zip", "SETIMES.en-tr.{lang}", ("en", "tr"))],
                     _newstest("wmt16-test.tgz", "newstest2016", "en", "tr"),   # stated
                     _newstest("wmt17-test.tgz", "newstest2017", "en", "tr")),  # stated
        Clean(1, 100, 2.0),  # not stated: ours (ratio 2: Turkish has about a quarter fewer tokens than English)
        lowercase=False,
        bpe_ops=16000, joint=True)},  # not stated: ours (a 200k-pair corpus, like NC11)
    _dls("setimes2-en-tr.txt.zip", "wmt16-test.tgz", "wmt17-test.tgz")))

_ASPEC_LAYOUT = """\
ASPEC is licensed (https://jipsti.jst.go.jp/aspec/, after signing its agreement) and never downloaded.
Put its folders into --raw-dir (or point --raw-dir at the distribution's ASPEC/ folder):
  ASPEC-JE/train/train-1.txt       score ||| id ||| no ||| ja ||| en   (train: train-1.txt, the first 1M pairs)
  ASPEC-JE/train/train-2.txt       (only for a recipe that takes more than the first 1M pairs; train-3.txt likewise)
  ASPEC-JE/dev/dev.txt             id ||| no ||| ja ||| en
  ASPEC-JE/test/test.txt
  ASPEC-JC/train/train.txt         id ||| ja ||| zh
  ASPEC-JC/dev/dev.txt
  ASPEC-JC/test/test.txt
The Japanese and Chinese sides must already be word-segmented (e.g. KyTea or MeCab for ja, Jieba or the
Stanford segmenter for zh, as WAT does): tokens are their whitespace fields; only English gets the Moses
tokenizer. Replace the ja/zh field of each line by its segmented form, keeping the layout."""


def _aspec_part(sub: str, path: str, columns: tuple[str, str]) -> Part:
    return Part("aspec", (("*", (f"{sub}/{path}", f"ASPEC/{sub}/{path}")),), None, columns)


def aspec_je_train(files: int) -> tuple[Part, ...]:
    """ASPEC-JE's first ``files`` training files (train-1.txt … train-N.txt, a million pairs each, best-aligned first)."""
    if not 1 <= files <= 3:
        raise PrepError(f"ASPEC-JE has train-1.txt to train-3.txt: expected 1 to 3 files, found {files}")
    return tuple(_aspec_part("ASPEC-JE", f"train/train-{k}.txt", ("ja", "en")) for k in range(1, files + 1))


_register(Corpus(
    "aspec", "ASPEC ja-en and zh-ja (licensed: --raw-dir with the files, see the layout)", "licensed",
    {"ja-en": PairData(
        ("ja", "en"),
        _directional(("ja", "en"), [_aspec_part("ASPEC-JE", "train/train-1.txt", ("ja", "en"))],
                     [_aspec_part("ASPEC-JE", "dev/dev.txt", ("ja", "en"))],
                     [_aspec_part("ASPEC-JE", "test/test.txt", ("ja", "en"))]),
        _CJK_CLEAN, lowercase=False,
        bpe_ops=16000, joint=False,  # not stated: ours (separate codes: the scripts share nothing)
        segmented=("ja",)),
     "zh-ja": PairData(
        ("zh", "ja"),
        _directional(("zh", "ja"), [_aspec_part("ASPEC-JC", "train/train.txt", ("ja", "zh"))],
                     [_aspec_part("ASPEC-JC", "dev/dev.txt", ("ja", "zh"))],
                     [_aspec_part("ASPEC-JC", "test/test.txt", ("ja", "zh"))]),
        _CJK_CLEAN, lowercase=False,
        bpe_ops=32000, joint=True,  # not stated: ours (joint: the Han characters are shared)
        segmented=("ja", "zh"))},
    layout=_ASPEC_LAYOUT))

_LDC_LAYOUT = """\
The LDC zh-en corpora are licensed (https://catalog.ldc.upenn.edu; usually LDC2002E18, LDC2003E07,
LDC2003E14, LDC2004T07 (Hansards part), LDC2004T08 and LDC2005T06, about 1.25M pairs) and never
downloaded. Their distributions differ in format, so extract them yourself into plain parallel text
(one segment per line, line i of .zh and .en translations of each other) in --raw-dir:
  train.zh  train.en      the training pairs
  valid.zh  valid.en      the development set of your choice (ours: e.g. NIST MT02; its first English reference in valid.en)
  test.zh                 NIST MT03 + MT04 + MT05 concatenated, in that order: Ma et al. 2019's test set (§4.1)
  test.en                 their first English reference, line by line
  test.en.2 test.en.3 test.en.4   their second, third and fourth English references, line by line
zh→en is scored against all four references (sacreBLEU's multi-reference BLEU; ours: Ma et al. 2019 do not state
how many references their BLEU uses); en→zh translates test.en (the first reference) into the Chinese source, the
one reference of that direction. A single reference would give a far lower BLEU than four.
The Chinese side must already be word-segmented (e.g. Jieba or the Stanford segmenter)."""

_register(Corpus(
    "ldc", "LDC zh-en (licensed: --raw-dir with extracted plain text, see the layout)", "licensed",
    {"zh-en": PairData(
        ("zh", "en"),
        _local_files(("zh", "en"), "train.{lang}", "valid.{lang}", "test.{lang}"),
        _CJK_CLEAN, lowercase=False,
        bpe_ops=32000, joint=False,  # not stated: ours
        segmented=("zh",),
        more_refs=(("en", ("test.en.2", "test.en.3", "test.en.4")),))},  # NIST MT03-05: four English references
    layout=_LDC_LAYOUT))

_MULTI30K_LAYOUT = """\
Multi30k (task 1, raw captions) is a local corpus for smoke runs: put its gunzipped raw files
(github.com/multi30k/dataset, data/task1/raw/*.gz) into --raw-dir:
  train.de  train.en  val.de  val.en  test_2016_flickr.de  test_2016_flickr.en"""

_register(Corpus(
    "multi30k", "Multi30k de-en captions, raw (local files in --raw-dir; for smoke runs)", "local",
    {"de-en": PairData(
        DE_EN,
        _local_files(DE_EN, "train.{lang}", "val.{lang}", "test_2016_flickr.{lang}"),
        Clean(1, 80, 1.5),  # not stated: ours
        lowercase=False,
        bpe_ops=10000, joint=True)},  # not stated: ours
    layout=_MULTI30K_LAYOUT))

_register(Corpus(
    "synthetic", "the project's synthetic corpus with gold parses (generated, seed 1; for smoke runs)", "synthetic",
    {"src-tgt": PairData(
        ("src", "tgt"),
        _local_files(("src", "tgt"), "train.{lang}", "valid.{lang}", "test.{lang}"),
        None,  # no filters: the gold parses must stay line-aligned
        lowercase=False,
        bpe_ops=500, joint=True,  # ours (as make demo)
        tokenize=False, gold_parses=True)},
    layout="generated into OUT/raw by syntrans.synth.write_corpus (seed 1); --raw-dir is not used"))
