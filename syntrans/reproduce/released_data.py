"""What the authors' released code does to each dataset (data preparation and scoring), as facts with their files.

:func:`released_data` gives, for one (table, dataset) of a paper with released code, {setting: text}: the settings
are those of :data:`syntrans.reproduce.published_data.SETTINGS`, plus ``steps`` for a preparation step that no
setting of ours names (a re-tokenizer, a text normalisation). Each text gives the value the code uses and the file
that sets it, and where ours differs, what we do and why (a preparation no maintained Python library performs is
printed, not built). The Deviations block of every results file prints these beside each setting's value.

The training side (lr, betas, dropouts, embeddings, decoding, checkpoint) is per config:
:mod:`syntrans.reproduce.released_code`.
"""
from __future__ import annotations

from typing import Dict, Tuple

from .released_code import DBSA_REPO, DISTANCE_REPO, PASCAL_REPO

BO = "Bugliarello & Okazaki's released code"
HOU = "Hou et al.'s released code"
DEG = "Deguchi et al.'s released code (the DBSA plugin)"

#: the settings that hold a preparation step of the code with no setting of ours
STEPS = "steps"

_CORENLP = ("after Moses, scripts/corenlp_tok.py re-tokenizes both sides with Stanford CoreNLP's tokenizer (a Java "
            "server), after html.unescape and with sentences glued at '[.!?][A-Z]' split apart: not followed, no "
            "maintained Python library reproduces CoreNLP's tokenizer; ours keeps Moses' tokens")


def _bo(d: str, *, filt: bool, bpe: int, nwords: bool, truecased: bool, max_len: str, ratio: str) -> Dict[str, str]:
    """Bugliarello & Okazaki's scripts for one WMT-style dataset folder ``d`` of experiments/."""
    prep = f"experiments/{d}/prepare{'_filt' if filt else ''}_data.sh"
    binar = f"experiments/{d}/binarize{'_filt' if filt else ''}_data.sh"
    out = {
        "max_len": f"{max_len} ({prep})",
        "ratio": f"{ratio} ({prep})",
        "bpe_ops": f"{bpe:,} merges learned on both sides together (subword-nmt learn_bpe.py -s {bpe}, {prep})",
        "joint": f"one BPE model and one joined dictionary{' of 16,384 words' if nwords else ''} ({binar}: "
                 f"--joined-dictionary{' --nwordssrc 16384 --nwordstgt 16384' if nwords else ''}), the "
                 "--share-all-embeddings of every train.sh",
        "eval_tokenize": f"Moses-detokenized output (detokenizer.perl, then sed fixes of ' / and @-@), scored by "
                         f"sacrebleu -t <test set> -l <pair>: 13a, as ours ({f'experiments/{d}/<model>/eval.sh'})",
        "eval_lowercase": f"case-sensitive (sacreBLEU's default, experiments/{d}/<model>/eval.sh), as ours",
        "parser": "Stanford CoreNLP through nltk's CoreNLPParser (scripts/bpe_tags_*.py, bpe_lin_parses.py)",
    }
    if truecased:
        out["lowercase"] = (f"WMT's preprocessed, tokenized and truecased files (corpus.tc.*, newstest*.tc.*; {prep}), "
                            "their sizes Table 4's, and the truecased output scored without detruecasing: not "
                            "followed, we prepare the raw corpora, cased, with the paper's 80-token filter (WMT's "
                            "truecasing model is not released with the files)")
        out[STEPS] = (f"the English side re-tokenized with CoreNLP (scripts/corenlp_tok.py or corenlp_tok_en.py, "
                      f"{prep}) on top of WMT's tokenization: not followed, no maintained Python library reproduces "
                      "CoreNLP's tokenizer; ours tokenizes the raw text with Moses")
    else:
        out["lowercase"] = f"cased: Moses tokenizer.perl without lowercasing ({prep}), as ours"
        out[STEPS] = _CORENLP + f" ({prep})"
    if filt:
        out["langid"] = (f"langdetect on the English side (scripts/langdetect_corenlp_tok.py, {prep}); ours: the "
                         "langid filter of both sides")
    else:
        out["langid"] = f"none ({prep})"
    return out


_BO_NC11 = _bo("nc11en2de", filt=True, bpe=16000, nwords=True, truecased=False, max_len="80",
               ratio="9, clean-corpus-n.perl's default (… 1 80)")
_BO_WMT16 = _bo("wmt16en2de", filt=True, bpe=32000, nwords=False, truecased=False, max_len="80",
                ratio="9, clean-corpus-n.perl's default (… 1 80)")
_BO_WMT17 = _bo("wmt17en2de", filt=False, bpe=32000, nwords=False, truecased=True,
                max_len="none: WMT's files as they come, no clean-corpus-n", ratio="none")
_BO_WMT18 = _bo("wmt18en2tr", filt=False, bpe=16000, nwords=True, truecased=True,
                max_len="none: WMT's files as they come, no clean-corpus-n", ratio="none")
_BO_WAT = {
    "max_len": "none (experiments/wat18en2ja/prepare_data.sh: no length filter; Table 4's 3,008,500 pairs are all "
               "of ASPEC-JE)",
    "ratio": "none (experiments/wat18en2ja/prepare_data.sh)",
    "train_parts": "train-1.txt, train-2.txt, train-3.txt (experiments/wat18en2ja/prepare_data.sh), as ours",
    "bpe_ops": "32,000 merges learned on both sides together (learn_joint_bpe_and_vocab.py -s 32000, "
               "experiments/wat18en2ja/prepare_data.sh)",
    "bpe_ops_by_lang": "none: one joint BPE (experiments/wat18en2ja/prepare_data.sh)",
    "joint": "one BPE model, applied with a vocabulary filter per language (apply_bpe.py --vocabulary "
             "vocab.32000.<lang>), one joined dictionary (binarize_data.sh: --joined-dictionary), "
             "--share-all-embeddings; the vocabulary filter is not followed (our BPE has no such option)",
    "eval_tokenize": "KyTea-tokenized output and references, sacrebleu -tok none, and RIBES.py "
                     "(experiments/wat18en2ja/<model>/eval.sh)",
    "eval_lowercase": "case-sensitive (experiments/wat18en2ja/<model>/eval.sh)",
    "parser": "Stanford CoreNLP (English source)",
    STEPS: "date expressions removed from the end of Japanese training and development lines (a regex of "
           "WAT's baseline, commented in experiments/wat18en2ja/prepare_data.sh), the English side Moses- and "
           "CoreNLP-tokenized, the Japanese side tokenized by Cabocha (scripts/cabocha_tok.py): not followed, "
           "ours takes the corpus' pre-segmented Japanese and Moses' English (Cabocha and CoreNLP have no "
           "maintained Python library)",
}
_BO_BY_DATASET = {"nc11_en_de": _BO_NC11, "nc11_de_en": {k: v.replace("nc11en2de", "nc11de2en")
                                                         for k, v in _BO_NC11.items()},
                  "wmt16_en_de": _BO_WMT16, "wmt17_en_de": _BO_WMT17, "wmt18_en_tr": _BO_WMT18,
                  "aspec_en_ja": _BO_WAT}

_HOU_FAIRSEQ_BLEU = ("fairseq-generate's BLEU4 of the tokenized, BPE-removed output against the tokenized "
                     "references (run/train_*.sh print 'BLEU4 = …'), not sacreBLEU")
_HOU_IWSLT = {
    "max_len": "175 (preprocess/prepare-iwslt14.sh, fairseq's), as ours",
    "ratio": "1.5 (preprocess/prepare-iwslt14.sh), as ours",
    "lowercase": "lowercased (lowercase.perl, preprocess/prepare-iwslt14.sh), as ours",
    "bpe_ops": "10,000 merges on both sides together (preprocess/prepare-iwslt14.sh), as ours",
    "joint": "one joined dictionary (preprocess/preprocess_iwslt14de2en.sh: --joined-dictionary), as ours",
    "valid_split": "every 23rd training pair (preprocess/prepare-iwslt14.sh), as ours",
    "eval_tokenize": _HOU_FAIRSEQ_BLEU,
    "eval_lowercase": "the lowercased text scored as it is (fairseq-generate's BLEU4)",
}
_HOU_NC11 = {
    "max_len": "80 (clean-corpus-n.perl … 1 80, preprocess/prepare_nc11.sh), as ours",
    "ratio": "9, clean-corpus-n.perl's default (preprocess/prepare_nc11.sh)",
    "lowercase": "cased: no lowercasing anywhere in preprocess/prepare_nc11.sh (the paper's 'uncased' is read as "
                 "lowercased here: printed, not followed)",
    "langid": "langdetect on the English side (scripts/langdetect_corenlp_tok.py, preprocess/prepare_nc11.sh); ours: "
              "langid on both sides",
    "bpe_ops": "16,000 merges on both sides together (preprocess/prepare_nc11.sh), as ours",
    "joint": "one joined dictionary (preprocess/preprocess_nc11en2de.sh: --joined-dictionary), as ours",
    "eval_tokenize": _HOU_FAIRSEQ_BLEU,
    "eval_lowercase": "cased text scored as it is (fairseq-generate's BLEU4)",
    STEPS: _CORENLP + " (preprocess/prepare_nc11.sh)",
}
_HOU_ASPEC = {
    "joint": "one joined dictionary for zh and ja (preprocess/preprocess_aspecch2ja.sh: --joined-dictionary), not "
             "App. A's separate 61k and 46k dictionaries, which ours keeps",
    "eval_tokenize": _HOU_FAIRSEQ_BLEU,
    "eval_lowercase": "the text scored as it is (fairseq-generate's BLEU4)",
    STEPS: "preprocess/prepare-aspec.sh holds only a pointer to WAT 2020's data preparation page",
}
_HOU_WMT14 = {
    "max_len": "250 (clean-corpus-n.perl, after BPE; preprocess/prepare-wmt14.sh), as ours",
    "ratio": "1.5 (preprocess/prepare-wmt14.sh), as ours",
    "normalize_punctuation": "normalize-punctuation.perl (preprocess/prepare-wmt14.sh), as ours",
    "remove_non_printing": "remove-non-printing-char.perl (preprocess/prepare-wmt14.sh), as ours",
    "aggressive_dashes": "Moses -a (preprocess/prepare-wmt14.sh), as ours",
    "bpe_ops": "40,000 merges on both sides together (preprocess/prepare-wmt14.sh), as ours",
    "joint": "one joined dictionary (preprocess/preprocess_wmt14en2de.sh), the decoder's input and output "
             "embeddings tied (run/train_wmt_en2de.sh)",
    "valid_split": "every 100th training line held out (awk 'NR%100 == 0', preprocess/prepare-wmt14.sh): App. A's "
                   "'1% of training data'",
    "train_parts": "Europarl v7, Common Crawl and News Commentary v12 (the WMT17 set: prepare-wmt14.sh without "
                   "--icml17 writes wmt17_en_de; with it, v9 as fairseq's) with the newstest2014 test set",
    "eval_tokenize": _HOU_FAIRSEQ_BLEU,
    "eval_lowercase": "cased text scored as it is (fairseq-generate's BLEU4)",
}
_HOU_BY_DATASET = {"iwslt14_de_en": _HOU_IWSLT, "iwslt14_en_de": _HOU_IWSLT, "nc11_de_en": _HOU_NC11,
                   "nc11_en_de": _HOU_NC11, "aspec_zh_ja": _HOU_ASPEC, "wmt14_en_de": _HOU_WMT14}
_GATED_WMT18 = {STEPS: "the gated paper's code is not released, and the distance-mask code has no WMT18 en→tr "
                       "preparation"}
_GATED = (" (the same authors' distance-mask preparation, whose settings §5.1 of the gated paper says it takes; "
          "the gated model's own code is not released)")

_DEG_ASPEC = {
    "train_limit": "the first 1,500,000 lines of train-1…3.txt (head -n 1500000, scripts/prepare-aspec.sh), as ours",
    "max_len": "100 (nlpack parallel-cleaner --max-len 100, scripts/prepare-aspec.sh), as ours",
    "ratio": "2.0 (nlpack parallel-cleaner --ratio 2.0, scripts/prepare-aspec.sh), as ours",
    "bpe_ops_by_lang": "16,000 fastBPE merges per side (scripts/prepare-aspec.sh), as ours",
    "joint": "separate codes and vocabularies per side (scripts/prepare-aspec.sh), as ours",
    "aggressive_dashes": "Moses -a -no-escape on English (scripts/prepare-aspec.sh); ours: -a, with Moses' escaping",
    "normalize_punctuation": "normalize-punctuation.perl on English (scripts/prepare-aspec.sh), as ours",
    "valid_split": "ASPEC's dev.txt (scripts/prepare-aspec.sh), as ours",
    "parser": "Stanza for both sides (scripts/run_stanza.py --depparse -l ja/en; the EDA lines are commented out)",
    STEPS: "date expressions removed from the end of Japanese training and development lines, English normalised "
           "full-width to half-width (nlpack normalizer -t z2h) and Moses-escaping turned off (-no-escape), Japanese "
           "tokenized with KyTea (scripts/prepare-aspec.sh): not followed, ours takes the corpus' pre-segmented "
           "Japanese and has no date or z2h step (printed here, left for a recipe option of its own)",
}
_DEG_WMT = {STEPS: "the released DBSA plugin prepares ASPEC ja→en only (scripts/prepare-aspec.sh); no WMT "
                   "preparation is released"}
_DEG_BY_DATASET = {"aspec_ja_en": _DEG_ASPEC, "wmt14_en_de": _DEG_WMT, "wmt16_en_ro": _DEG_WMT}


def _who(table: str) -> Tuple[str, str, Dict[str, Dict[str, str]]]:
    """(whose code, repository, records per dataset) of a table, or ("", "", {}) for one without released code."""
    if table.startswith("pascal"):
        return BO, PASCAL_REPO, _BO_BY_DATASET
    if table.startswith("distance") or table == "cross_paper":
        return HOU, DISTANCE_REPO, _HOU_BY_DATASET
    if table.startswith("gated"):
        gated = {k: {s: t + _GATED for s, t in v.items()} for k, v in _HOU_BY_DATASET.items() if k[:4] in ("iwsl", "nc11")}
        return HOU, DISTANCE_REPO, {**gated, "wmt18_en_tr": _GATED_WMT18}
    if table.startswith("syncattn"):
        return DEG, DBSA_REPO, _DEG_BY_DATASET
    return "", "", {}


def released_data(table: str, dataset: str) -> Dict[str, str]:
    """{setting: what the authors' released code does, its file named} for one (table, dataset); {} for a paper
    without released code (Ma et al. 2019) or our own tables' datasets without one (Multi30k)."""
    who, repo, records = _who(table)
    record = records.get(dataset, {})
    return {name: f"{who} ({repo}): {text}" for name, text in record.items()}


def has_released_code(table: str) -> bool:
    """Whether ``table`` reproduces a paper whose authors released code (or, for the cross-paper table, whose data
    preparation is the distance-mask authors')."""
    return bool(_who(table)[0])


__all__ = ["STEPS", "has_released_code", "released_data"]
