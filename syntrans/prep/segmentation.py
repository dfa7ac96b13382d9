"""Step 4 (bpe) with another segmentation than subword-nmt: SentencePiece or fairseq's byte-level GPT-2 BPE.

``--bpe sentencepiece``: with ``--sentencepiece-model M`` that model (copied to ``OUT/bpe/spm.model``); without it a
unigram model trained on the tokenized training text: one ``OUT/bpe/spm.model`` on both sides when the BPE is joint,
``OUT/bpe/spm.{lang}.model`` per side otherwise, its vocabulary size the number of merges (``--bpe-ops``, a recipe's
or the corpus's; a soft limit: a tiny corpus gets what it has), identity normalisation (the pieces spell the text
exactly, so that they align with the parse words by characters), every character covered. ``--bpe gpt2``: the
encoder.json ids of fairseq's byte-level BPE (``--gpt2-encoder-json``/``--gpt2-vocab-bpe``, local files). Applied to
the tokenized text of every split into ``OUT/bpe/{split}.{lang}`` (pieces joined by spaces): the parse of the same
tokenized text is aligned to them by characters (:mod:`syntrans.data.piece_routes`).
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ..atomic_write import atomic_file, atomic_path
from .checksums import file_digest
from .corpora import SPLITS
from .errors import PrepError

SEGMENTATIONS = ("subword_nmt", "sentencepiece", "gpt2")  # syntrans.data.piece_routes.SEGMENTATIONS (no fairseq here)


def check_sentencepiece_model(path: str) -> None:
    """PrepError naming ``path`` (the file as given, before it is copied into ``OUT/bpe``) unless SentencePiece loads
    it: a corrupt model was reported only after tokenizing, under the name of the copy."""
    import sentencepiece  # lazy: only a given model needs it

    try:
        sentencepiece.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError, ValueError) as e:
        why = " ".join(str(e).split())[:200]
        raise PrepError(f"--sentencepiece-model {path}: SentencePiece cannot load it ({why}): expected a model file "
                        "written by spm_train (NAME.model)") from None


@dataclass(frozen=True)
class Segmentation:
    """The segmentation a corpus is prepared with (``--bpe`` and its model flags, fairseq's names)."""

    bpe: str = "subword_nmt"
    sentencepiece_model: str | None = None
    gpt2_encoder_json: str | None = None
    gpt2_vocab_bpe: str | None = None
    raw_text: bool = False  # --no-moses: SentencePiece on the raw text, stanza's own tokenizer for the parse

    def __post_init__(self):
        if self.bpe not in SEGMENTATIONS:
            raise PrepError(f"--bpe {self.bpe}: expected one of {', '.join(SEGMENTATIONS)}")
        given = {"--sentencepiece-model": self.sentencepiece_model, "--gpt2-encoder-json": self.gpt2_encoder_json,
                 "--gpt2-vocab-bpe": self.gpt2_vocab_bpe}
        own = {"subword_nmt": (), "sentencepiece": ("--sentencepiece-model",),
               "gpt2": ("--gpt2-encoder-json", "--gpt2-vocab-bpe")}[self.bpe]
        stray = [flag for flag, value in given.items() if value and flag not in own]
        if stray:
            raise PrepError(f"{', '.join(stray)} goes with --bpe {'sentencepiece' if 'sentence' in stray[0] else 'gpt2'}"
                            f", not --bpe {self.bpe}")
        if self.bpe == "gpt2":
            for flag in own:
                value = given[flag]
                if not value or "://" in value or not Path(value).is_file():
                    raise PrepError(f"--bpe gpt2 needs {flag} FILE, a local file (download it once from fairseq's "
                                    f"address); found {value or 'nothing'}")
        if self.raw_text and self.bpe != "sentencepiece":
            raise PrepError(f"--no-moses applies SentencePiece to the raw text: expected --bpe sentencepiece, found "
                            f"--bpe {self.bpe}")
        if self.sentencepiece_model and not Path(self.sentencepiece_model).is_file():
            raise PrepError(f"--sentencepiece-model {self.sentencepiece_model}: no such file")
        if self.sentencepiece_model:
            check_sentencepiece_model(self.sentencepiece_model)

    @property
    def default(self) -> bool:
        return self.bpe == "subword_nmt"

    def settings(self) -> dict:
        """What the bpe and binarize steps' markers record: the segmentation and the sha256 of each model file it is
        given (a changed model redoes them); a trained model is named by the vocabulary size (the step's ``ops``)."""
        out = {"bpe": self.bpe}
        if self.raw_text:  # named only when set: a folder prepared before keeps its markers
            out["raw_text"] = True
        for name, value in asdict(self).items():
            if name not in ("bpe", "raw_text") and value:
                out[name] = file_digest(Path(value)).sha256
        if self.bpe == "sentencepiece" and not self.sentencepiece_model:
            out["sentencepiece_model"] = "trained on the training text"
        return out

    @property
    def text_route(self) -> str:
        """What the pieces are of: ``raw`` (``--no-moses``) or ``moses`` (the Moses-tokenized text), as
        ``prepared.json`` records it."""
        return "raw" if self.raw_text else "moses"

    def record(self) -> dict:
        """The fields, for ``prepared.json``'s ``again`` record (paths as given; ``raw_text`` only when set)."""
        out = asdict(self)
        if not self.raw_text:
            del out["raw_text"]
        return out

    def preprocess_argv(self) -> list[str]:
        """syntrans-preprocess's flags for this segmentation (none for subword_nmt: its default)."""
        if self.default:
            return []
        argv = ["--bpe", self.bpe] + (["--char-spans"] if self.raw_text else [])
        if self.bpe == "gpt2":
            argv += ["--gpt2-encoder-json", str(Path(self.gpt2_encoder_json).resolve()),
                     "--gpt2-vocab-bpe", str(Path(self.gpt2_vocab_bpe).resolve())]
        return argv


def add_segmentation_args(parser: argparse.ArgumentParser, merges_flag: str = "--bpe-ops") -> None:
    """``--bpe`` and the model flags of sentencepiece and gpt2 (fairseq's names)."""
    g = parser.add_argument_group("subword segmentation (fairseq's --bpe and its flags)")
    g.add_argument("--bpe", choices=SEGMENTATIONS, default="subword_nmt",
                   help="subword_nmt (default: subword-nmt BPE learned on the tokenized training text, @@ pieces), "
                        "sentencepiece (pieces aligned to the parse words by characters) or gpt2 (fairseq's byte-level "
                        "BPE: encoder.json ids)")
    g.add_argument("--sentencepiece-model", metavar="FILE",
                   help=f"--bpe sentencepiece: this model; default: a unigram model trained on the tokenized training "
                        f"text, its vocabulary size {merges_flag} (the number of merges otherwise)")
    g.add_argument("--gpt2-encoder-json", metavar="FILE", help="--bpe gpt2: encoder.json (a local file)")
    g.add_argument("--gpt2-vocab-bpe", metavar="FILE", help="--bpe gpt2: vocab.bpe (a local file)")
    g.add_argument("--no-moses", action="store_true",
                   help="--bpe sentencepiece on the raw text: no Moses tokenization (tok/ holds the cleaned raw text), "
                        "stanza tokenizes each line itself for the parse, keeping each word's character span, and the "
                        "pieces are aligned to the words by those spans; the length filters count whitespace-separated "
                        "words of the raw text")


def segmentation_from_args(args: argparse.Namespace) -> Segmentation:
    return Segmentation(args.bpe, args.sentencepiece_model, args.gpt2_encoder_json, args.gpt2_vocab_bpe,
                        bool(getattr(args, "no_moses", False)))


def model_paths(bpe_dir: Path, langs: tuple[str, str], joint: bool, given: bool) -> dict[str, Path]:
    """{lang: SentencePiece model}: one ``spm.model`` when given or joint, else ``spm.{lang}.model``."""
    return {lang: bpe_dir / ("spm.model" if joint or given else f"spm.{lang}.model") for lang in langs}


def train_sentencepiece(inputs: list[Path], model: Path, vocab: int, workers: int = 1) -> None:
    """A unigram model of about ``vocab`` pieces trained on ``inputs`` into ``model`` (and its ``.vocab``)."""
    import sentencepiece  # lazy: only --bpe sentencepiece needs it

    with tempfile.TemporaryDirectory(dir=model.parent) as tmp:
        joined = Path(tmp) / "input.txt"
        with open(joined, "wb") as out:
            for p in inputs:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        prefix = Path(tmp) / "spm"
        try:
            sentencepiece.SentencePieceTrainer.train(
                input=str(joined), model_prefix=str(prefix), vocab_size=vocab, hard_vocab_limit=False,
                model_type="unigram", character_coverage=1.0, normalization_rule_name="identity",
                num_threads=workers, minloglevel=2)
        except RuntimeError as e:
            raise PrepError(f"SentencePiece training on {', '.join(map(str, inputs))} failed: {e}") from None
        with atomic_path(model) as path:
            shutil.copyfile(f"{prefix}.model", path)
        with atomic_path(model.with_suffix(".vocab")) as path:
            shutil.copyfile(f"{prefix}.vocab", path)


def encode_file(encode: Callable[[str], list], inp: Path, out: Path) -> None:
    """Each line of ``inp`` as the pieces ``encode`` gives, joined by spaces, into ``out`` (written atomically)."""
    with open(inp, encoding="utf-8") as fin, atomic_file(out) as fout:
        for line in fin:
            fout.write(" ".join(map(str, encode(line.rstrip("\n")))) + "\n")


def run_segmentation(seg: Segmentation, tok_dir: Path, bpe_dir: Path, langs: tuple[str, str],
                     ops: int | Mapping[str, int], joint: bool, workers: int = 1,
                     log: Callable[[str], None] = print) -> dict[str, Path]:
    """Segment every split with ``seg`` (module docs); returns {lang: model file} (gpt2: its encoder.json)."""
    per_lang = dict(ops) if isinstance(ops, Mapping) else dict.fromkeys(langs, ops)
    bpe_dir.mkdir(parents=True, exist_ok=True)
    for old in list(bpe_dir.glob("codes*")) + list(bpe_dir.glob("spm*")):  # another segmentation's models
        old.unlink()
    if seg.bpe == "gpt2":
        from ..syntax.byte_bpe import ByteLevelBPE

        table = ByteLevelBPE.load(seg.gpt2_encoder_json, seg.gpt2_vocab_bpe)
        encoders = dict.fromkeys(langs, table.encode)
        models = dict.fromkeys(langs, Path(seg.gpt2_encoder_json).resolve())
        log(f"bpe: gpt2 byte-level BPE of {seg.gpt2_encoder_json} and {seg.gpt2_vocab_bpe}")
    else:
        import sentencepiece  # lazy: only --bpe sentencepiece needs it

        models = model_paths(bpe_dir, langs, joint, bool(seg.sentencepiece_model))
        if seg.sentencepiece_model:
            with atomic_path(models[langs[0]]) as path:
                shutil.copyfile(seg.sentencepiece_model, path)
            log(f"bpe: SentencePiece model {seg.sentencepiece_model} -> {models[langs[0]]}")
        elif joint:
            if len(set(per_lang.values())) > 1:
                raise PrepError(f"joint SentencePiece learns one model: expected one vocabulary size, found {per_lang}")
            n = per_lang[langs[0]]
            train_sentencepiece([tok_dir / f"train.{lang}" for lang in langs], models[langs[0]], n, workers)
            log(f"bpe: trained a joint SentencePiece model of {n} pieces on train.{{{','.join(langs)}}} -> "
                f"{models[langs[0]]}")
        else:
            for lang in langs:
                train_sentencepiece([tok_dir / f"train.{lang}"], models[lang], per_lang[lang], workers)
                log(f"bpe: trained a SentencePiece model of {per_lang[lang]} pieces on train.{lang} -> {models[lang]}")
        encoders = {}
        for lang in langs:
            sp = sentencepiece.SentencePieceProcessor(model_file=str(models[lang]))
            encoders[lang] = lambda line, sp=sp: sp.encode(line, out_type=str)
    for split in SPLITS:
        for lang in langs:
            encode_file(encoders[lang], tok_dir / f"{split}.{lang}", bpe_dir / f"{split}.{lang}")
    log(f"bpe: {seg.bpe} applied to {', '.join(SPLITS)} -> {bpe_dir}/{{split}}.{{lang}}")
    return models
