"""Each paper's data preparation and evaluation settings, per (table, dataset) of :mod:`syntrans.reproduce.tables`.

:func:`data_settings` gives a :class:`DataSettings`: the :class:`~syntrans.prep.recipe.Recipe` to prepare the
dataset with (``prepare_corpus(..., recipe=...)``), the :class:`Evaluation` to score it with
(``scoring.bleu(..., lowercase=..., tokenize=...)``), and for every one of those settings where it comes from:
the paper's section or appendix, or ``"not stated: ours (...)"`` where the paper is silent and the choice is
ours (a ``None`` recipe field keeps the corpus' setting of :mod:`syntrans.prep.corpora`), or
``"not applicable (...)"`` for a setting the others make moot (per-language merges under joint BPE). Settings a
paper states are set explicitly, even where they equal the corpus' own.

Where the paper is silent and the authors' released code sets a value (Bugliarello & Okazaki's, Hou et al.'s,
Deguchi et al.'s: :mod:`syntrans.reproduce.released_data`), ours is the code's and the source starts with "authors'
code" and names the file; what the code does for every other setting is printed beside ours in the Deviations block.

Where a stated setting cannot be taken literally, the source string says what we do and why: the length ratio
"within 1" of Hou et al. (no pair of unequal lengths would survive it) and their dictionary sizes given for
separate BPE without merges. Where we depart from a stated setting, the source starts with "deviates from" and
quotes the paper.

Three settings are records, not switches: ``parser``, the parser(s) the paper parsed the dataset with (ours is
syntrans-prepare's ``--parser``: stanza by default, or the paper's parser's own output through ``--parser
imported``, docs/reproduce.md); ``valid_split``, how the validation set is made where the corpus makes one from
its training text (None: the corpus' own validation files, :mod:`syntrans.prep.corpora`); and ``references``, the
references per test segment BLEU is scored against (the corpus supplies them: :mod:`syntrans.prep.corpora`,
``PairData.more_refs``).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Dict, Optional, Tuple

from ..prep.corpora import aspec_je_train
from ..prep.recipe import OFF, Recipe


@dataclass(frozen=True)
class Evaluation:
    """How a paper scores: sacreBLEU's ``tokenize`` (None: :func:`~syntrans.reproduce.scoring.sacrebleu_tokenizer`
    of the target language) and ``lowercase`` (True: case-insensitive BLEU)."""

    tokenize: Optional[str]
    lowercase: bool


#: the settings every entry names a source for: the Recipe fields, then the evaluation's, then the records
#: recipe fields a table sets per system (System.data), never per dataset: the +MULTI-TASK baseline's data
SYSTEM_ONLY = ("multitask", "multitask_target")
RECIPE_SETTINGS = tuple(f.name for f in fields(Recipe) if f.name not in SYSTEM_ONLY)
EVAL_SETTINGS = ("eval_tokenize", "eval_lowercase")
RECORD_SETTINGS = ("parser", "valid_split", "references")
SETTINGS = RECIPE_SETTINGS + EVAL_SETTINGS + RECORD_SETTINGS


@dataclass(frozen=True)
class DataSettings:
    """One (table, dataset): its recipe, its evaluation, and {setting: source} for every name of :data:`SETTINGS`."""

    recipe: Recipe
    evaluation: Evaluation
    sources: Tuple[Tuple[str, str], ...]
    notes: Tuple[str, ...] = ()
    parser: str = ""  # the paper's parser(s) for this dataset, e.g. "Stanford CoreNLP (constituency)"
    valid_split: Optional[str] = None  # how the validation set is made (None: the corpus' validation files)
    references: int = 1  # references per test segment BLEU is scored against (NIST: 4)

    def source(self, setting: str) -> str:
        """Where ``setting`` (a name of :data:`SETTINGS`) comes from."""
        for name, where in self.sources:
            if name == setting:
                return where
        raise KeyError(f"no source for {setting!r}; settings: {', '.join(SETTINGS)}")


def _settings(values: Dict[str, tuple]) -> DataSettings:
    """A DataSettings from {setting: (value, source)} naming every setting of :data:`SETTINGS` exactly once."""
    missing = [s for s in SETTINGS if s not in values]
    extra = [s for s in values if s not in SETTINGS and s != "notes"]
    if missing or extra:
        raise ValueError(f"published data entry: expected every setting of {SETTINGS}, missing {missing}, unknown {extra}")
    recipe = Recipe(**{name: values[name][0] for name in RECIPE_SETTINGS})
    evaluation = Evaluation(tokenize=values["eval_tokenize"][0], lowercase=values["eval_lowercase"][0])
    return DataSettings(recipe, evaluation, tuple((s, values[s][1]) for s in SETTINGS), tuple(values.get("notes", ())),
                        parser=values["parser"][0], valid_split=values["valid_split"][0],
                        references=values["references"][0])


# ------------------------------------------------------------------------------------------------------------
# sources, and the settings no paper here states

HOU = "Hou et al. 2022 (distance-mask), App. A"
GATED = "Hou et al. (gated self-attention), §5.1"
PASCAL = "Bugliarello & Okazaki 2020, App. A"
SYNC = "Deguchi et al. 2021, App. A"
SYNC_EVAL_D = "Deguchi et al. 2021, App. D"
NSD = "Ma et al. 2019, §4.1"

CORPUS = "not stated: ours (the corpus' setting in syntrans.prep.corpora)"
NO_LANGID = "not stated: ours (no language filter)"
ALL_PAIRS = "not stated: ours (every training pair of the corpus' training files)"
JOINT_ONLY = "not applicable (joint BPE: one number of merges)"
BPE_ONLY = "not applicable (BPE, no word-level vocabulary)"
WORDS_ONLY = "not applicable (word-level data, no BPE)"
SACRE_13A = "not stated: ours (sacreBLEU's default tokenizer, 13a)"
SACRE_CASED = "not stated: ours (sacreBLEU's default: case-sensitive)"
RATIO_1 = ('"within 1" cannot be meant literally (only pairs of equal length would pass)')

_UNSTATED = {
    "max_len": (None, CORPUS), "ratio": (None, CORPUS), "lowercase": (None, CORPUS),
    "aggressive_dashes": (None, CORPUS), "normalize_punctuation": (None, CORPUS),
    "remove_non_printing": (None, CORPUS), "langid": (None, NO_LANGID), "train_limit": (None, ALL_PAIRS),
    "train_parts": (None, ALL_PAIRS), "bpe_ops": (None, CORPUS), "bpe_ops_by_lang": (None, JOINT_ONLY),
    "joint": (None, CORPUS), "word_vocab": (None, BPE_ONLY),
    "eval_tokenize": ("13a", SACRE_13A), "eval_lowercase": (False, SACRE_CASED),
    "valid_split": (None, "not applicable (the corpus' own validation files, syntrans.prep.corpora)"),
    "references": (1, "not applicable (one reference per test segment)"),
}

# ------------------------------------------------------------------------------------------------------------
# the papers' parsers (ours: syntrans-prepare --parser; stanza unless the paper's parser's output is imported)

_HOU_PARSER = ("Stanford CoreNLP constituency parser (version not stated), on the words of each sentence",
               'Hou et al. 2022 (distance-mask), §2.2 ("analyze the syntax tree structure using the Stanford corenlp '
               'toolkit") and §4.1 ("The Stanford CoreNLP parser is utilized to generate constituency grammar tree")')
_GATED_PARSER = ("Stanford CoreNLP (constituency, for the gated model); the parser of the dependency baselines "
                 "(LISA, PASCAL, SLA) is not stated",
                 'Hou et al. (gated self-attention), §5.1 ("The Stanford CoreNLP parser [17] is used to parse the '
                 'constituency tree")')
_PASCAL_PARSER = ("Stanford CoreNLP (dependencies of the source sentences; +MULTI-TASK: its constituency parses, "
                  "linearised by the authors' released scripts/bpe_lin_parses.py)",
                  'Bugliarello & Okazaki 2020, §3.1 ("We rely on Stanford CoreNLP (Manning et al., 2014) to parse '
                  'source sentences")')
_SYNC_PARSER = ("Stanza (English, German, Romanian) and EDA (Japanese): dependencies of both sides",
                'Deguchi et al. 2021, §5.1 ("We used dependency structures generated by Stanza (Qi et al., 2020) for '
                'English, German, and Romanian sentences, and EDA² for Japanese sentences")')
_NSD_PARSER = ("Kitaev & Klein 2018 (constituency: dS, dG, dR) and Dyer et al. 2015 (dependencies: dD), English only",
               'Ma et al. 2019, §4.1 ("Constituent trees are generated by the parser of Kitaev and Klein (2018)", '
               '"dependency trees are generated by the parser of Dyer et al. (2015)")')

#: Hou et al. 2022, App. A, on IWSLT14's validation set, and what we do instead
_IWSLT_VALID = ("every 23rd pair of the cleaned training text (fairseq's prepare-iwslt14.sh)",
                'deviates from Hou et al. 2022, App. A ("randomly select 5% of training as the validation set"): we '
                "hold out every 23rd pair, as fairseq's prepare-iwslt14.sh, whose split sizes (160,239 training and "
                "7,283 validation pairs) are the ones the paper's Table 3 reports; a random 5% would give other "
                "sentences and sizes")


def _entry(**values) -> dict:
    return {**_UNSTATED, **values}


# ------------------------------------------------------------------------------------------------------------
# Hou et al. 2022, syntax-guided localized self-attention (distance-mask): App. A

_HOU_EVAL = {"eval_tokenize": ("13a", "not stated: ours (App. A: BLEU with sacreBLEU, its tokenizer not stated: 13a)"),
             "eval_lowercase": (False, "not stated: ours (App. A: BLEU with sacreBLEU, case not stated: case-sensitive)")}

_HOU_IWSLT = _entry(
    max_len=(175, f"{HOU}: length ≤ 175"),
    ratio=(1.5, f"{HOU}: length ratio 1.5"),
    lowercase=(True, f'{HOU}: "uncased word tokenization" (lowercased: our reading, as fairseq\'s prepare-iwslt14.sh, '
                     "whose split sizes the paper's match)"),
    aggressive_dashes=(None, "not stated: ours (the corpus' setting: off, as fairseq's prepare-iwslt14.sh)"),
    bpe_ops=(10000, f'{HOU}: shared BPE, "dictionary of size 10k" (as 10,000 merges: ours, as fairseq\'s '
                    "prepare-iwslt14.sh)"),
    joint=(True, f"{HOU}: shared BPE"),
    parser=_HOU_PARSER,
    valid_split=_IWSLT_VALID,
    **_HOU_EVAL)

_HOU_NC11 = _entry(
    max_len=(80, f'{HOU}: "total length does not exceed 80" (per side, as Moses clean-corpus-n: our reading)'),
    ratio=(9.0, f'{HOU}: "source-target length ratio is within 1"; {RATIO_1}: ours is the authors\' code\'s, Moses '
                "clean-corpus-n.perl's default ratio 9 (preprocess/prepare_nc11.sh, github.com/LUMIA-Group/"
                "distance_transformer), which keeps nearly every pair, as the paper's 238,843"),
    lowercase=(True, f'{HOU}: "uncased"'),
    langid=(True, f'{HOU}: "we dropout the pairs which do not have a correct language" (tool not stated: langid, ours)'),
    bpe_ops=(16000, f"{HOU}: shared BPE, a dictionary of 16k (as 16,000 merges: ours)"),
    joint=(True, f"{HOU}: shared BPE"),
    parser=_HOU_PARSER,
    **_HOU_EVAL)

_HOU_ASPEC_ZH_JA = _entry(
    bpe_ops=(None, "not applicable (separate BPE: merges per language)"),
    bpe_ops_by_lang=({"zh": 61000, "ja": 46000},
                     f"{HOU}: separate dictionaries, zh 61k and ja 46k entries (merges not stated: ours, as many merges "
                     "as dictionary entries)"),
    joint=(False, f"{HOU}: separate dictionaries for zh and ja"),
    eval_tokenize=("ja-mecab", "not stated: ours (App. A: BLEU with sacreBLEU, its Japanese tokenizer not stated: "
                               "sacreBLEU's ja-mecab, MeCab with the IPA dictionary, pinned by syntrans[reproduce])"),
    eval_lowercase=_HOU_EVAL["eval_lowercase"],
    parser=_HOU_PARSER,
    notes=(f"{HOU}: Moses scripts for sentence extraction, zh and ja pre-segmented (the corpus' layout: the user "
           "supplies segmented text).",))

_HOU_WMT14 = _entry(
    max_len=(250, f"{HOU}: length ≤ 250"),
    ratio=(1.5, f"{HOU}: length ratio {RATIO_1}; ours: 1.5, the ratio of fairseq's prepare-wmt14en2de.sh, whose "
                "length limit (250) and steps (punctuation normalisation, non-printing characters removed) the "
                "paper's match"),
    normalize_punctuation=(True, f"{HOU}: punctuation normalised (Moses)"),
    remove_non_printing=(True, f"{HOU}: non-printing characters removed (Moses)"),
    aggressive_dashes=(None, "not stated: ours (the corpus' setting: on, as fairseq's prepare-wmt14en2de.sh)"),
    bpe_ops=(40000, f"{HOU}: shared BPE of 40000"),
    joint=(True, f"{HOU}: shared BPE"),
    parser=_HOU_PARSER,
    valid_split=(None, f'deviates from {HOU} ("We sample 1% of training data as validation set"; the authors\' code '
                       "holds out every 100th training line, preprocess/prepare-wmt14.sh): ours is the corpus' "
                       "validation file, newstest2013 (3,000 pairs), the size the paper's Table 3 reports"),
    **_HOU_EVAL)

# ------------------------------------------------------------------------------------------------------------
# Hou et al., gated self-attention: §5.1 (IWSLT14 and NC11 as in the distance-mask paper)

_GATED_EVAL = {"eval_tokenize": ("13a", "not stated: ours (§5.1: sacreBLEU, its tokenizer not stated: 13a)"),
               "eval_lowercase": (False, f'{GATED}: "case-sensitive 4-gram BLEU … using Sacre-BLEU"')}

_GATED_IWSLT = {**_HOU_IWSLT, **_GATED_EVAL, "parser": _GATED_PARSER,
                "valid_split": (_IWSLT_VALID[0], f'deviates from {GATED} ("we randomly select 5% of training data as '
                                                 "the validation set\"): every 23rd pair, as fairseq's "
                                                 "prepare-iwslt14.sh, whose sizes (160,239 / 7,283) are the paper's "
                                                 "Table 1's"),
                "lowercase": (True, f'{GATED}: "uncased word tokenization" (lowercased: our reading, as for the '
                                    f"distance-mask paper)"),
                "max_len": (175, f"{HOU}: length ≤ 175 (the same authors' IWSLT14 preparation, which §5.1 of the "
                                 "gated paper uses)"),
                "ratio": (1.5, f"{HOU}: length ratio 1.5 (the same authors' IWSLT14 preparation)"),
                "bpe_ops": (10000, f'{HOU}: shared BPE, "dictionary of size 10k" (the same authors\' IWSLT14 '
                                   "preparation; as 10,000 merges: ours)"),
                "joint": (True, f"{HOU}: shared BPE (the same authors' IWSLT14 preparation)")}

_GATED_NC11 = {**_HOU_NC11, **_GATED_EVAL, "parser": _GATED_PARSER,
               "max_len": (80, f'{GATED}: "total length within 80" (per side, as Moses clean-corpus-n: our reading)'),
               "ratio": (9.0, f'{GATED}: ratio "within 1"; {RATIO_1}: ours is the same authors\' code\'s for NC11, '
                              "Moses clean-corpus-n.perl's default ratio 9 (preprocess/prepare_nc11.sh, "
                              "github.com/LUMIA-Group/distance_transformer)"),
               "lowercase": (True, f'{GATED}: "uncased word tokenization"'),
               "langid": (True, f"not stated in §5.1: ours (the language filter of the same authors' NC11 "
                                f"preparation, {HOU}; langid)"),
               "bpe_ops": (16000, f"{HOU}: shared BPE of 16k (the same authors' NC11 preparation; as merges: ours)"),
               "joint": (True, f"{HOU}: shared BPE (the same authors' NC11 preparation)")}

_GATED_WMT18 = _entry(
    max_len=(80, f"{GATED}: length ≤ 80 (per side, as Moses clean-corpus-n: our reading)"),
    ratio=(OFF, f'{GATED}: ratio "within 1"; {RATIO_1}: ours, no ratio filter, as for NC11'),
    lowercase=(True, f'{GATED}: "uncased word segmentation"'),
    bpe_ops=(16000, f'{GATED}: BPE "dictionary size is 16K" (as 16,000 merges: ours)'),
    joint=(True, "not stated: ours (one shared BPE model, as for the paper's other datasets)"),
    parser=_GATED_PARSER,
    **_GATED_EVAL)

# ------------------------------------------------------------------------------------------------------------
# Bugliarello & Okazaki 2020, PASCAL: §3.1 and App. A

_PASCAL_EVAL = {"eval_tokenize": ("13a", f"{PASCAL}: SacreBLEU signature BLEU+c.mixed+#.1+s.exp+tok.13a+v.1.2.12"),
                "eval_lowercase": (False, f"{PASCAL}: SacreBLEU case-sensitive (c.mixed)")}


#: Bugliarello & Okazaki's released code (github.com/e-bug/pascal), for the settings the paper leaves unstated
PASCAL_CODE = "authors' code (Bugliarello & Okazaki 2020's, github.com/e-bug/pascal"


def _pascal(langid: tuple, folder: str, bpe: int, ratio) -> dict:
    prep = f"experiments/{folder}/prepare{'_filt' if ratio != OFF else ''}_data.sh"
    return _entry(
        max_len=(80, f'{PASCAL}: "remove sentences longer than 80 tokens in either source or target side"'),
        ratio=(ratio, f"{PASCAL_CODE}, {prep}): " + (
            "clean-corpus-n.perl … 1 80, its default ratio 9 (App. A names only the length filter)" if ratio != OFF
            else "no ratio filter, the script runs no clean-corpus-n (App. A names only the length filter)")),
        lowercase=(False, f"{PASCAL_CODE}, {prep}): cased (the paper is silent; its evaluation is case-sensitive)"),
        **({} if ratio == OFF else {  # NC11, WMT16: the scripts tokenize raw text with Moses, no -a, no normalisation
            "aggressive_dashes": (False, f"{PASCAL_CODE}, {prep}): Moses tokenizer.perl without -a"),
            "normalize_punctuation": (False, f"{PASCAL_CODE}, {prep}): no normalize-punctuation.perl"),
            "remove_non_printing": (False, f"{PASCAL_CODE}, {prep}): no remove-non-printing-char.perl")}),
        langid=langid,
        bpe_ops=(bpe, f"{PASCAL_CODE}, {prep}): {bpe:,} merges learned on both sides together (the paper states "
                      "no BPE size)"),
        joint=(True, f"{PASCAL_CODE}, experiments/{folder}/binarize*_data.sh): one joined dictionary, shared by every "
                     "train.sh's --share-all-embeddings (the paper is silent)"),
        parser=_PASCAL_PARSER,
        **_PASCAL_EVAL)


_PASCAL_LANGID = (True, f"{PASCAL} and §3.1: a language filter with langdetect on NC11 and WMT16 (we use langid)")
_PASCAL_NO_LANGID = (False, f"{PASCAL}: the language filter is named for NC11 and WMT16 only")

_PASCAL_WAT = {
    **_pascal((False, f"{PASCAL}: WAT En→Ja follows WAT18's pre-processing, with no language filter"), "wat18en2ja",
              32000, OFF),
    "max_len": (80, f'{PASCAL}: "remove sentences longer than 80 tokens in either source or target side" (read as '
                    "applying to WAT En→Ja too: ours)"),
    "train_parts": (aspec_je_train(3), f"{PASCAL}, Table 4: 3,008,500 training pairs, all of ASPEC-JE "
                                       "(train-1.txt to train-3.txt)"),
    "bpe_ops_by_lang": (None, JOINT_ONLY),
    "eval_tokenize": ("ja-mecab", f'deviates from {PASCAL} ("computing BLEU scores after tokenizing target '
                                  "sentences using KyTea\"): sacreBLEU has no KyTea tokenizer; we tokenize with its "
                                  "ja-mecab (MeCab with the IPA dictionary, pinned by syntrans[reproduce]), so BLEU and "
                                  "RIBES differ from the paper's by the tokenizer as well"),
    "eval_lowercase": (False, "not stated: ours (case-sensitive, as the paper's other scores)"),
    "notes": (f"{PASCAL}: the Japanese target is processed with Cabocha; we take the pre-segmented ja text of the "
              "corpus' layout.",),
}

#: Table 1's preparation per dataset, shared by the paper's other tables (Tables 3, 5, 6, Figure 2, App. B)
_PASCAL_BY_DATASET = {
    "nc11_en_de": _pascal(_PASCAL_LANGID, "nc11en2de", 16000, 9.0),
    "nc11_de_en": _pascal(_PASCAL_LANGID, "nc11de2en", 16000, 9.0),
    "wmt16_en_de": _pascal(_PASCAL_LANGID, "wmt16en2de", 32000, 9.0),
    "wmt17_en_de": _pascal(_PASCAL_NO_LANGID, "wmt17en2de", 32000, OFF),
    "wmt18_en_tr": _pascal(_PASCAL_NO_LANGID, "wmt18en2tr", 16000, OFF), "aspec_en_ja": _PASCAL_WAT,
}

# ------------------------------------------------------------------------------------------------------------
# Deguchi et al. 2021, synchronous syntactic attention: App. A

_SYNC_EVAL = {"eval_tokenize": ("13a", "not stated: ours (sacreBLEU's default tokenizer, 13a)"),
              "eval_lowercase": (False, "not stated: ours (sacreBLEU's default: case-sensitive)")}


def _sync(**values) -> dict:
    return _entry(
        max_len=(100, f'{SYNC}: "removed sentences longer than 100 words" (before BPE)'),
        aggressive_dashes=(True, f"{SYNC}: Moses tokenizer with aggressive hyphen splitting"),
        normalize_punctuation=(True, f"{SYNC}: Moses normalize-punctuation"),
        parser=_SYNC_PARSER,
        **{**_SYNC_EVAL, **values})


_SYNC_WMT14 = _sync(
    ratio=(1.5, f"{SYNC}: length ratio 1.5"),
    langid=(True, f"{SYNC}: language filter with langid (WMT14 only)"),
    bpe_ops=(37000, f"{SYNC}: joint BPE of 37,000 merges"),
    joint=(True, f"{SYNC}: joint BPE"))

_SYNC_WMT16_EN_RO = _sync(
    ratio=(1.5, f"{SYNC}: length ratio 1.5"),
    langid=(False, f"{SYNC}: the language filter is applied to WMT14 only"),
    bpe_ops=(40000, f"{SYNC}: joint BPE of 40,000 merges"),
    joint=(True, f"{SYNC}: joint BPE"))

_SYNC_ASPEC_JA_EN = _sync(
    ratio=(2.0, f"{SYNC}: length ratio 2.0"),
    langid=(False, f"{SYNC}: the language filter is applied to WMT14 only"),
    train_limit=(1_500_000, f"{SYNC}: the first 1.5M training pairs"),
    train_parts=(aspec_je_train(2), f"{SYNC}: the first 1.5M training pairs (ASPEC-JE train-1.txt and train-2.txt)"),
    bpe_ops=(None, "not applicable (separate BPE: merges per language)"),
    bpe_ops_by_lang=({"ja": 16000, "en": 16000}, f"{SYNC}: separate BPE of 16,000 merges per side"),
    joint=(False, f"{SYNC}: separate BPE"),
    eval_tokenize=("13a", f'deviates from {SYNC_EVAL_D} ("As for the ASPEC Ja-En task, we followed the WAT Automatic '
                          "Evaluation Systems\", footnote 5): WAT scores English after the Moses tokenizer; ours is "
                          "sacreBLEU's 13a on the detokenized output, close to it but not the same, so BLEU differs "
                          "from the paper's by the scorer as well"),
    eval_lowercase=(False, f"deviates from {SYNC_EVAL_D} (WAT's automatic evaluation, footnote 5): ours is sacreBLEU, "
                           "case-sensitive, not WAT's evaluation script"),
    notes=(f"{SYNC}: normalize-punctuation is not applied to the pre-segmented Japanese side (it would change the "
           "segmentation).",))

# ------------------------------------------------------------------------------------------------------------
# Ma et al. 2019, neural syntactic distance: §4.1


def _nsd(target: str, **values) -> dict:
    if target in ("ja", "zh"):
        ev = {"eval_tokenize": ("char", f'{NSD}: "character-level BLEU" for Chinese and Japanese'),
              "eval_lowercase": (False, "not stated: ours (case-sensitive; §4.1 names case-insensitive BLEU for "
                                        "English only)")}
    else:
        ev = {"eval_tokenize": ("13a", "not stated: ours (sacreBLEU's default tokenizer, 13a)"),
              "eval_lowercase": (True, f'{NSD}: "case-insensitive BLEU for English"')}
    return _entry(
        max_len=(150, f'{NSD}: "sentences longer than 150 were filtered out"'),
        ratio=(OFF, "not stated: ours (§4.1 names only the length filter)"),
        bpe_ops=(None, WORDS_ONLY),
        bpe_ops_by_lang=(None, WORDS_ONLY),
        joint=(None, "not stated: ours (the corpus' setting: a dictionary per language)"),
        word_vocab=(50000, f"{NSD}: a vocabulary of 50,000 for all languages; no BPE is mentioned (word-level: our "
                           "reading)"),
        parser=_NSD_PARSER,
        **{**ev, **values})


#: Ma et al. 2019's LDC test set and its references
_NIST_TEST = (f'{NSD}: "The test set is a concatenation of NIST MT 2003, 2004, and 2005" (the LDC layout of '
              "syntrans.prep.corpora: test.zh, and test.en, test.en.2, test.en.3, test.en.4, its four English "
              "references)")
_NIST_ZH_EN = (f'not stated: ours ({NSD}: "The test set is a concatenation of NIST MT 2003, 2004, and 2005"; how '
               "many references its BLEU uses is not stated: ours scores against all four English references of the "
               "NIST sets, sacreBLEU's multi-reference BLEU, the usual practice for these sets; a single reference "
               "scores far lower)")
_LDC_VALID = (None, f'not stated: ours ({NSD} selects "the model which performs the best on the development set" '
                    "without naming the set: the LDC layout's valid.zh/valid.en, the user's choice, e.g. NIST MT02 "
                    "(ours), syntrans.prep.corpora)")
_ASPEC_VALID = (None, f'not stated: ours ({NSD} selects "the model which performs the best on the development set" '
                      "without naming the set: ASPEC's own dev.txt, 1,790 pairs, syntrans.prep.corpora)")
_NIST_EN_ZH = (f'not stated: ours ({NSD} names the test set, "NIST MT 2003, 2004, and 2005", not how the reverse '
               "direction uses it: the Chinese source is the one reference, the first English reference the source)")

#: the cross-paper table (ours): one preparation for every system, the same authors' (Hou et al. 2022) per dataset
_CROSS_PARSER = ("no single paper's: syntrans-prepare's --parser for every system, each prepared folder parsed into "
                 "the views its systems read (each paper's own parser: the tables of that paper)",
                 "not applicable (the systems come from five papers with four parsers; docs/reproduce.md, Parsers)")

def _m30k(what: str) -> str:
    """The source of one of the Multi30k table's settings: all ours."""
    return f"not stated: ours ({what}; no paper reports the Multi30k table)"


#: the Multi30k table (ours): the data of ``syntrans-prepare multi30k --pair en-de --bpe-ops 4000 --ratio off --max-len
#: off``, every setting that command sets given explicitly; the others are the corpus' (syntrans.prep.corpora)
_MULTI30K = _entry(
    max_len=(OFF, _m30k("no length filter, every caption kept: syntrans-prepare --max-len off")),
    ratio=(OFF, _m30k("no length-ratio filter, every caption kept: syntrans-prepare --ratio off")),
    lowercase=(None, _m30k("the corpus' setting: cased text")),
    aggressive_dashes=(None, _m30k("the corpus' setting: Moses tokenization without -a")),
    bpe_ops=(4000, _m30k("4,000 subword-nmt merges: syntrans-prepare --bpe-ops 4000; a small vocabulary keeps the "
                                 "output layer, most of a 128-dimension model's cost on a CPU, small")),
    joint=(True, _m30k("one BPE model and dictionary for both sides, the corpus' setting; shared embeddings")),
    eval_tokenize=("13a", _m30k("sacreBLEU's default BLEU tokenizer, 13a; chrF++ has none")),
    eval_lowercase=(False, _m30k("case-sensitive BLEU and chrF++ of the cased text")),
    parser=("no paper's: syntrans-prepare's --parser for every system (stanza by default), both sides parsed into "
            "dependencies and constituency trees whatever systems run (one parse serves every selection)",
            "not applicable (no paper reports the Multi30k table; docs/reproduce.md, Parsers)"),
    valid_split=(None, "not applicable (the corpus' own validation files: val.en and val.de, 1,014 captions)"),
    notes=("Multi30k task 1, raw captions (github.com/multi30k/dataset, data/task1/raw): train (29,000), val (1,014) and "
           "test_2016_flickr (1,000), read from --raw-dir DIR/multi30k.",))

# ------------------------------------------------------------------------------------------------------------

PUBLISHED_DATA: Dict[Tuple[str, str], DataSettings] = {key: _settings(values) for key, values in {
    ("distance_table1", "iwslt14_de_en"): _HOU_IWSLT,
    ("distance_table1", "iwslt14_en_de"): _HOU_IWSLT,
    ("distance_table1", "nc11_de_en"): _HOU_NC11,
    ("distance_table1", "nc11_en_de"): _HOU_NC11,
    ("distance_table1", "aspec_zh_ja"): _HOU_ASPEC_ZH_JA,
    ("distance_table1", "wmt14_en_de"): _HOU_WMT14,
    ("distance_table2", "iwslt14_de_en"): _HOU_IWSLT,
    ("distance_table2", "iwslt14_en_de"): _HOU_IWSLT,
    ("distance_table2", "nc11_de_en"): _HOU_NC11,
    ("distance_table2", "nc11_en_de"): _HOU_NC11,
    ("distance_figure2", "iwslt14_de_en"): _HOU_IWSLT,
    ("distance_table4", "iwslt14_de_en"): _HOU_IWSLT,
    ("distance_table4", "iwslt14_en_de"): _HOU_IWSLT,
    ("distance_table4", "nc11_de_en"): _HOU_NC11,
    ("distance_table4", "nc11_en_de"): _HOU_NC11,
    ("distance_table4", "aspec_zh_ja"): _HOU_ASPEC_ZH_JA,
    ("distance_table4", "wmt14_en_de"): _HOU_WMT14,
    **{(table, "iwslt14_de_en"): _GATED_IWSLT for table in ("gated_table4", "gated_table5", "gated_table7",
                                                           "gated_figure3", "gated_figure2a", "gated_figure2b")},
    **{(table, key): values for table in ("gated_table3", "gated_table6", "gated_table8") for key, values in (
        ("iwslt14_de_en", _GATED_IWSLT), ("iwslt14_en_de", _GATED_IWSLT), ("nc11_de_en", _GATED_NC11),
        ("nc11_en_de", _GATED_NC11), ("wmt18_en_tr", _GATED_WMT18))},
    **{(table, key): values for table in ("pascal_table1", "pascal_table5", "pascal_table6", "pascal_figure2")
       for key, values in _PASCAL_BY_DATASET.items()},
    # the NC11 ablations: Table 1's NC11 preparation
    **{(table, key): _PASCAL_BY_DATASET[key] for table in ("pascal_table3a", "pascal_table3b", "pascal_appendixb")
       for key in ("nc11_en_de", "nc11_de_en")},
    ("cross_paper", "iwslt14_de_en"): {**_HOU_IWSLT, "parser": _CROSS_PARSER},
    ("cross_paper", "nc11_de_en"): {**_HOU_NC11, "parser": _CROSS_PARSER},
    ("multi30k", "multi30k_en_de"): _MULTI30K,
    ("syncattn_table1", "wmt14_en_de"): _SYNC_WMT14,
    ("syncattn_table1", "wmt16_en_ro"): _SYNC_WMT16_EN_RO,
    ("syncattn_table1", "aspec_ja_en"): _SYNC_ASPEC_JA_EN,
    ("nsd_table1", "aspec_en_ja"): _nsd("ja", train_limit=(100_000, f'{NSD}: "top 100K sentence pairs" for en→ja'),
                                        valid_split=_ASPEC_VALID),
    ("nsd_table1", "aspec_ja_en"): _nsd("en", train_limit=(1_000_000, f'{NSD}: "top 1M" sentence pairs for ja→en'),
                                        valid_split=_ASPEC_VALID),
    ("nsd_table1", "ldc_en_zh"): _nsd("zh", train_limit=(None, f"{NSD}: the LDC training set, about 1.2M pairs (all)"),
                                      references=(1, _NIST_EN_ZH), valid_split=_LDC_VALID, notes=(_NIST_TEST,)),
    ("nsd_table1", "ldc_zh_en"): _nsd("en", train_limit=(None, f"{NSD}: the LDC training set, about 1.2M pairs (all)"),
                                      references=(4, _NIST_ZH_EN), valid_split=_LDC_VALID, notes=(_NIST_TEST,)),
}.items()}


def data_settings(table_key: str, dataset_key: str) -> DataSettings:
    """The published data settings of one dataset of one table; KeyError naming what is known otherwise."""
    try:
        return PUBLISHED_DATA[(table_key, dataset_key)]
    except KeyError:
        known = sorted(d for t, d in PUBLISHED_DATA if t == table_key)
        if not known:
            tables = sorted({t for t, _ in PUBLISHED_DATA})
            raise KeyError(f"no published data settings for table {table_key!r}; tables: {', '.join(tables)}") from None
        raise KeyError(f"no published data settings for dataset {dataset_key!r} of table {table_key!r}; its datasets: "
                       f"{', '.join(known)}") from None
