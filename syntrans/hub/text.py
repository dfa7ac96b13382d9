"""Text in and out of a translation model: Moses tokenization, subword-nmt BPE or SentencePiece, and their inverses.

The source side goes raw line → Moses tokens (sacremoses, XML-escaped like ``tokenizer.perl`` output, the
usual form of training data) → BPE pieces; the target side goes pieces → BPE removed (fairseq's
``--remove-bpe``, done by the dictionary) → Moses detokenized and unescaped. With a SentencePiece model the
tokenized line is encoded into its pieces (as ``syntrans-prepare --bpe sentencepiece`` encodes the tokenized text),
which are aligned to the parse words by characters, and the hypotheses are decoded as ``--post-process
sentencepiece`` decodes them. On the raw-text route (``raw_text``: a corpus prepared with ``syntrans-prepare
--bpe sentencepiece --no-moses``) nothing is Moses-tokenized: the line (its whitespace made single spaces) is encoded
as it is, its parse words are placed by their character spans, and the decoded hypotheses are the output as they are.
"""
from __future__ import annotations

import os
from typing import List


from ..data.piece_routes import PieceRoute
from ..prep.bpe_codes import read_bpe


class SourceText:
    """Tokenizes and BPE-encodes source lines.

    ``tokenize``: Moses-tokenize a raw line (``MosesTokenizer(lang).tokenize(line, escape=True)``); without it a
    line is already tokenized and its tokens are its whitespace-separated fields. ``lowercase`` lowercases the
    tokens (as a lowercased training corpus was). ``bpe_codes``: a subword-nmt codes file; ``marker`` its
    continuation marker (``@@``). ``raw_text``: the raw-text route (module docs; SentencePiece only, no tokenization):
    a line's "tokens" are its whitespace-separated fields, joined by single spaces into the text that is encoded
    and parsed.
    """

    def __init__(self, bpe_codes: str | None, lang: str = "en", tokenize: bool = True, lowercase: bool = False,
                 marker: str = "@@", sentencepiece_model: str | None = None, raw_text: bool = False):
        if raw_text and (tokenize or sentencepiece_model is None):
            raise ValueError("the raw-text route encodes the raw line with a SentencePiece model: expected a "
                             "sentencepiece_model and no Moses tokenization")
        self.raw_text = raw_text
        self.marker = marker
        self.lowercase = lowercase
        self.moses = None
        if tokenize:
            from sacremoses import MosesTokenizer  # lazy: a slow import, needed only when tokenizing

            self.moses = MosesTokenizer(lang=lang)
        self.sp = None
        if sentencepiece_model is not None:
            if not os.path.isfile(sentencepiece_model):
                raise FileNotFoundError(f"{sentencepiece_model}: expected a SentencePiece model file, found nothing")
            import sentencepiece  # lazy: only a SentencePiece model needs it

            self.sp = sentencepiece.SentencePieceProcessor(model_file=sentencepiece_model)
            #: how pieces map to parse words, and what fairseq's post-processing removes from hypotheses
            self.route, self.remove_bpe = PieceRoute("sentencepiece", char_spans=raw_text), "sentencepiece"
            return
        self.route, self.remove_bpe = PieceRoute(marker=marker), marker + " "
        if bpe_codes is None or not os.path.isfile(bpe_codes):
            raise FileNotFoundError(f"{bpe_codes}: expected a subword-nmt BPE codes file (learn_bpe output), found "
                                    f"{'a directory' if os.path.isdir(bpe_codes) else 'nothing'}")
        try:
            self.bpe = read_bpe(bpe_codes, separator=marker)  # checked first: subword-nmt would exit, naming nothing
        except (IndexError, UnicodeDecodeError) as e:
            raise ValueError(f"{bpe_codes}: cannot read it as subword-nmt BPE codes ({type(e).__name__}: {e})") from None

    def tokens(self, line: str) -> List[str]:
        """The words of one raw (or, without tokenization, tokenized) line; [] for a blank line."""
        if not line.strip():
            return []
        words = self.moses.tokenize(line, escape=True) if self.moses is not None else line.split()
        return [w.lower() for w in words] if self.lowercase else words

    def pieces(self, words: List[str]) -> List[str]:
        """BPE pieces of a word list (a piece continuing into the next one ends in the marker)."""
        if self.lowercase:
            words = [w.lower() for w in words]
        if self.sp is not None:
            return self.sp.encode(" ".join(words), out_type=str) if words else []
        return self.bpe.segment_tokens(words) if words else []


class TargetText:
    """Detokenizes hypotheses (BPE already removed): ``MosesDetokenizer(lang).detokenize(words, unescape=True)``."""

    def __init__(self, lang: str = "en", detokenize: bool = True):
        self.moses = None
        if detokenize:
            from sacremoses import MosesDetokenizer  # lazy: a slow import, needed only when detokenizing

            self.moses = MosesDetokenizer(lang=lang)

    def __call__(self, hypothesis: str) -> str:
        if self.moses is None:
            return hypothesis
        return self.moses.detokenize(hypothesis.split(), unescape=True)

