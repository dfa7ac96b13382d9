"""Subword segmentations chosen as fairseq chooses them: ``--bpe subword_nmt|sentencepiece|gpt2`` and their flags.

Each segmenter encodes a line into the pieces fairseq's text files hold (what ``fairseq-preprocess`` reads)
and aligns pieces of a line to the parse words of the same text by characters
(:mod:`syntrans.syntax.char_align`):

========================  ==========================================  ==========================================
``--bpe``                 model flags (fairseq's names)               pieces and their text
========================  ==========================================  ==========================================
``subword_nmt``           ``--bpe-codes`` [``--bpe-separator @@``]     ``dog@@ s``: a piece ending in the separator
                                                                      continues its word; the line is the
                                                                      tokenized text
``sentencepiece``         ``--sentencepiece-model``                   ``▁dog s``: ``▁`` opens a word; the text of
                                                                      each piece is SentencePiece's own offsets
                                                                      into the line when the pieces are what it
                                                                      encodes, else the piece with ``▁`` as space
``gpt2``                  ``--gpt2-encoder-json --gpt2-vocab-bpe``    ``3290 82``: encoder.json ids of byte-level
                                                                      pieces (:mod:`syntrans.syntax.byte_bpe`)
========================  ==========================================  ==========================================

fairseq's gpt2 flags default to URLs (``DEFAULT_GPT2_FILES``); nothing is downloaded here: the files must be
local (download them once from those addresses).
"""
from __future__ import annotations

import argparse
from typing import ClassVar, Dict, List, Optional, Sequence, Type

from ..syntax.byte_bpe import ByteLevelBPE
from ..syntax.char_align import CharAlignment, align_piece_bytes, align_piece_texts, align_spans
from ..syntax.piece_spans import Span, byte_offsets_to_spans, marker_piece_texts

#: where fairseq's ``--bpe gpt2`` fetches its files by default
DEFAULT_GPT2_FILES = {"gpt2_encoder_json": "https://dl.fbaipublicfiles.com/fairseq/gpt2_bpe/encoder.json",
                      "gpt2_vocab_bpe": "https://dl.fbaipublicfiles.com/fairseq/gpt2_bpe/vocab.bpe"}

SPACE_MARK = "\u2581"  # SentencePiece's ▁


class Segmenter:
    """One segmentation: :meth:`encode` a line into pieces, :meth:`align` pieces to parse words."""

    name: ClassVar[str]

    @staticmethod
    def add_args(group: argparse._ArgumentGroup) -> None:
        """Add this segmentation's model flags (fairseq's names)."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Segmenter":
        raise NotImplementedError

    def encode(self, line: str) -> List[str]:
        """The pieces of ``line``, as fairseq's text file holds them (joined by spaces)."""
        raise NotImplementedError

    def align(self, line: str, words: Sequence[str], word_spans: Sequence[Span], pieces: Optional[Sequence[str]] = None,
              where: str = "line") -> CharAlignment:
        """Each piece's parse word (``pieces`` default: :meth:`encode` of ``line``); ``word_spans`` index ``line``."""
        raise NotImplementedError


def _required(args: argparse.Namespace, flag: str, name: str) -> str:
    value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
    if not value:
        raise ValueError(f"--bpe {name} needs {flag}")
    return value


class SubwordNmtSegmenter(Segmenter):
    """subword-nmt BPE (``--bpe-codes``): pieces of the tokenized line, ``@@`` continuing a word."""

    name = "subword_nmt"

    def __init__(self, codes: str, separator: str = "@@"):
        from .bpe_codes import read_bpe  # subword-nmt lazily, as the other segmenters' packages

        self.bpe = read_bpe(codes, separator=separator)  # checked first: subword-nmt would exit, naming nothing
        self.separator = separator

    @staticmethod
    def add_args(group):
        group.add_argument("--bpe-codes", metavar="FILE", help="subword_nmt: the BPE codes (subword-nmt learn-bpe)")
        group.add_argument("--bpe-separator", default="@@", metavar="STR",
                           help="subword_nmt: the continuation marker (default: %(default)s)")

    @classmethod
    def from_args(cls, args):
        return cls(_required(args, "--bpe-codes", cls.name), getattr(args, "bpe_separator", None) or "@@")

    def encode(self, line):
        return self.bpe.process_line(line).split()

    def align(self, line, words, word_spans, pieces=None, where="line"):
        pieces = self.encode(line) if pieces is None else pieces
        return align_piece_texts(line, words, word_spans, marker_piece_texts(pieces, self.separator), where,
                                 pieces)


class SentencePieceSegmenter(Segmenter):
    """SentencePiece (``--sentencepiece-model``): ``▁`` opens a word."""

    name = "sentencepiece"

    def __init__(self, model: str):
        import sentencepiece  # lazy: only --bpe sentencepiece needs it

        self.sp = sentencepiece.SentencePieceProcessor(model_file=model)

    @staticmethod
    def add_args(group):
        group.add_argument("--sentencepiece-model", metavar="FILE", help="sentencepiece: the model file")

    @classmethod
    def from_args(cls, args):
        return cls(_required(args, "--sentencepiece-model", cls.name))

    def encode(self, line):
        return self.sp.encode(line, out_type=str)

    def align(self, line, words, word_spans, pieces=None, where="line"):
        """The characters of each piece: SentencePiece's own byte offsets into ``line`` when ``pieces`` are what
        it encodes ``line`` into (exact also where its normalisation changed characters: ``…`` → ``...``);
        otherwise the pieces' text (``▁`` as a space), which must then spell ``line``."""
        proto = self.sp.encode(line, out_type="proto")
        if pieces is None or list(pieces) == [p.piece for p in proto.pieces]:
            spans = byte_offsets_to_spans(line, [(p.begin, p.end) for p in proto.pieces], where)
            return align_spans(line, words, word_spans, spans, where)
        return align_piece_texts(line, words, word_spans, [p.replace(SPACE_MARK, " ") for p in pieces], where,
                                 pieces)


class Gpt2Segmenter(Segmenter):
    """fairseq's byte-level GPT-2 BPE (``--gpt2-encoder-json --gpt2-vocab-bpe``): pieces are encoder.json ids."""

    name = "gpt2"

    def __init__(self, encoder_json: str, vocab_bpe: str):
        self.bpe = ByteLevelBPE.load(encoder_json, vocab_bpe)

    @staticmethod
    def add_args(group):
        group.add_argument("--gpt2-encoder-json", metavar="FILE",
                           help=f"gpt2: encoder.json (a local copy of {DEFAULT_GPT2_FILES['gpt2_encoder_json']})")
        group.add_argument("--gpt2-vocab-bpe", metavar="FILE",
                           help=f"gpt2: vocab.bpe (a local copy of {DEFAULT_GPT2_FILES['gpt2_vocab_bpe']})")

    @classmethod
    def from_args(cls, args):
        files = [_required(args, flag, cls.name) for flag in ("--gpt2-encoder-json", "--gpt2-vocab-bpe")]
        remote = [f for f in files if "://" in f]
        if remote:
            raise ValueError(f"--bpe gpt2: {remote[0]} is an address; give a local copy of the file")
        return cls(*files)

    def encode(self, line):
        return [str(i) for i in self.bpe.encode(line)]

    def align(self, line, words, word_spans, pieces=None, where="line"):
        pieces = self.encode(line) if pieces is None else pieces
        data = []
        for k, p in enumerate(pieces):
            if not p.isdigit():
                raise ValueError(f"{where}: gpt2 piece {k} {p!r} is not an encoder.json id")
            data.append(self.bpe.piece_bytes(int(p)))
        return align_piece_bytes(line, words, word_spans, data, where)


#: ``--bpe`` name → segmenter class
SEGMENTERS: Dict[str, Type[Segmenter]] = {c.name: c for c in (SubwordNmtSegmenter, SentencePieceSegmenter,
                                                                 Gpt2Segmenter)}


def add_segmenter_args(parser: argparse.ArgumentParser) -> None:
    """``--bpe`` and every segmentation's model flags, in one argument group."""
    group = parser.add_argument_group("subword segmentation (fairseq's --bpe and its flags)")
    group.add_argument("--bpe", choices=sorted(SEGMENTERS), default="subword_nmt",
                       help="the segmentation (default: %(default)s)")
    for cls in SEGMENTERS.values():
        cls.add_args(group)


def make_segmenter(args: argparse.Namespace) -> Segmenter:
    """The segmenter ``args.bpe`` names, built from its flags; ValueError naming a missing flag."""
    if args.bpe not in SEGMENTERS:
        raise ValueError(f"--bpe {args.bpe}: expected one of {', '.join(sorted(SEGMENTERS))}")
    return SEGMENTERS[args.bpe].from_args(args)
