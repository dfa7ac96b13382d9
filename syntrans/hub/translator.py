"""``Translator``: a trained model that translates sentences, with the same beam search as fairseq-generate.

Per batch of lines: Moses tokenization (escaped like the training data; optional lowercasing) → a source parse,
only when the model needs source syntax at generation (distance-mask, PASCAL, gated, LISA or DBSA with gold
parents, NSD with a source input: the task's ``syntax_needs``; never for the vanilla Transformer, DBSA, SyncAttn, LISA,
NSD on the target side or as a source output only) → subword-nmt BPE → the sidecar arrays of each sentence as
syntrans-preprocess writes them → features built and padded by the datasets fairseq-generate uses → fairseq's
``SequenceGenerator`` (``task.build_generator`` + ``task.inference_step``) → the best hypothesis → BPE removed →
Moses detokenization. Outputs keep the input order; an empty line translates to an empty line.

With ``syntax=("source", "target")`` (either or both) the generator is
:class:`~syntrans.generation.recording.ParseRecordingGenerator` (the same hypotheses, plus the parents the LISA/DBSA
heads predicted), and :meth:`Translator.translate_syntax` / :meth:`Translator.translate_parsed_syntax` give each line's
word-level parses (:mod:`.predicted_syntax`).
"""
from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Callable, Dict, List, Optional, Sequence


from ..checkpoints.loading import load_checkpoint, resolve_device
from ..generation.recording import ParseRecordingGenerator
from ..parsing.names import AUTO_PARSERS
from ..tasks.syntax_translation import SyntaxTranslationTask
from .batch import collate, encode_source, required_features
from .predicted_syntax import Translation, last_parses, source_parse, target_parse
from .source_syntax import LineParse, SourceParser, as_sentences, line_arrays, memory_side, needed_kinds, needs_parse
from .parsed_input import check_parsed_input
from .text import SourceText, TargetText

PARSER_CHOICES = AUTO_PARSERS


def _stderr(message: str) -> None:
    print(f"syntrans: {message}", file=sys.stderr, flush=True)


def check_max_len(max_len_a: float, max_len_b: int) -> None:
    """ValueError unless the longest hypothesis fairseq's search allows (``max_len_a`` · source length +
    ``max_len_b``, the source length counting EOS) is at least one token for the shortest source line (one token):
    fairseq's search asserts it (min_len ≤ max_len) in the middle of a batch."""
    if not max_len_a >= 0:
        raise ValueError(f"--max-len-a must be >= 0, found {max_len_a}")
    if int(max_len_a * 2 + max_len_b) < 1:
        raise ValueError(f"--max-len-a {max_len_a:g} --max-len-b {max_len_b}: a one-word line may have a hypothesis of "
                         f"at most {int(max_len_a * 2 + max_len_b)} tokens (a · source length + b, EOS counted): "
                         "expected at least 1, e.g. --max-len-b 1 or more (default 200)")


class LineTooLong(ValueError):
    """A line longer than the model takes (without ``skip_invalid``): the message names it; ``done`` holds the
    translations of the lines before it in the same call, in order, and ``line`` its 1-based number."""

    def __init__(self, message: str, line: int, done: List[Translation]):
        super().__init__(message)
        self.line, self.done = line, done


def check_bilingual(task, checkpoint: str) -> None:
    """ValueError for a checkpoint of ``translation_multi_simple_epoch`` (or the syntax task built on it): the
    translator writes no language token, so such a model would be given inputs it was never trained on."""
    from fairseq.tasks.translation_multi_simple_epoch import TranslationMultiSimpleEpochTask

    if isinstance(task, TranslationMultiSimpleEpochTask):
        name = getattr(getattr(task, "args", None), "task", None) or type(task).__name__
        raise ValueError(f"{checkpoint}: a checkpoint of the task {name}, whose sentences carry language tokens; the "
                         "translator (syntrans-translate) reads checkpoints of syntax_translation and writes no "
                         "language token: binarize the text with syntrans-preprocess and translate it with "
                         "fairseq-generate and the task's flags (docs/commands.md, Fine-tuning a released "
                         "multilingual model)")


class Translator:
    """Translate raw sentences (:meth:`translate`) or tokenized, parsed ones (:meth:`translate_parsed`).

    Build it with :meth:`from_checkpoint`. Counters since construction: ``sentences`` (lines translated, empty ones
    included), ``empty_lines``, ``parse_failures`` (sentences that got the right-branching fallback parse),
    ``too_long`` (lines longer than the model takes, each translated to an empty line and reported, with
    ``skip_invalid``; without it such a line raises :class:`LineTooLong`, carrying the translations of the lines
    before it).
    ``syntax``: the sides ("source", "target") whose predicted parse :meth:`translate_syntax` reports
    (ValueError when the model has no parse heads there); ``parses`` maps each to its parse layer (the last).
    """

    def __init__(self, model, task, source: SourceText, target: TargetText, generation, parser: Optional[SourceParser] = None,
                 device: str = "cpu", batch_size: int = 32, binarize_trees: bool = False,
                 log: Callable[[str], None] = _stderr, syntax: Sequence[str] = (), skip_invalid: bool = False):
        from fairseq import utils  # lazy: imports fairseq

        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, found {batch_size}")
        self.model, self.task, self.source, self.target, self.parser = model, task, source, target, parser
        self.device, self.batch_size, self.binarize_trees, self.log = device, batch_size, binarize_trees, log
        self.generation = generation
        self.parses = last_parses(model, syntax)
        self.generator = (task.build_generator([model], generation, seq_gen_cls=ParseRecordingGenerator) if self.parses
                          else task.build_generator([model], generation))
        self.max_source_positions = utils.resolve_max_positions(task.max_positions(), model.max_positions())[0]
        self.requests = required_features(task)
        self.skip_invalid = skip_invalid
        self.sentences = self.empty_lines = self.parse_failures = self.too_long = 0

    @classmethod
    def from_checkpoint(cls, checkpoint: str, data: str, bpe_codes: str, parser: Optional[str] = "auto",
                        source_lang: Optional[str] = None, target_lang: Optional[str] = None, beam: int = 5,
                        lenpen: float = 1.0, max_len_a: float = 0, max_len_b: int = 200, batch_size: int = 32,
                        device: Optional[str] = None, lowercase: bool = False, tokenize: bool = True,
                        detokenize: bool = True, parser_lang: Optional[str] = None, binarize_trees: bool = False,
                        bpe_marker: str = "@@", model_overrides: Optional[Dict] = None,
                        sentencepiece_model: Optional[str] = None,
                        log: Callable[[str], None] = _stderr, syntax: Sequence[str] = (),
                        skip_invalid: bool = False, raw_text: bool = False) -> "Translator":
        """Load ``checkpoint`` with the dictionaries in ``data`` and the BPE codes ``bpe_codes`` (or, instead, the
        SentencePiece model ``sentencepiece_model`` the training text was encoded with; ``bpe_codes`` then None).

        ``parser``: how to parse the source when the model needs it: ``auto`` (stanza with the installed models for
        ``parser_lang``, default the source language; else :class:`~syntrans.parsing.MissingModelsError` with the
        ``stanza.download`` command), ``stanza``, ``right-branching``, ``left-branching``, ``flat``, or None (no
        parser: only :meth:`translate_parsed` works for such a model). Not built at all for a model that needs no
        parse. ``binarize_trees``: the data was binarized with ``syntrans-preprocess --binarize-trees``.
        ``device``: ``cpu``, ``cuda`` or None (CUDA when available). Generation settings are fairseq-generate's.
        ``syntax``: the sides whose predicted parses to report (see the class); checked before any parser is built.
        ``skip_invalid``: a line longer than the model takes becomes an empty line, reported (see the class).
        ``raw_text``: the model's corpus took the raw-text route (``syntrans-prepare --bpe sentencepiece --no-moses``):
        no Moses tokenization nor detokenization, the parser tokenizes each line itself with character spans
        (:mod:`.text`); needs ``sentencepiece_model``, and ``tokenize`` and ``detokenize`` are not used.
        """
        from fairseq.dataclass.configs import GenerationConfig  # lazy: imports fairseq

        if parser is not None and parser not in PARSER_CHOICES:
            raise ValueError(f"unknown parser {parser!r}: expected one of {', '.join(PARSER_CHOICES)} (or None)")
        if beam < 1:
            raise ValueError(f"beam must be at least 1, found {beam}")
        check_max_len(max_len_a, max_len_b)
        device = resolve_device(device)  # before loading: a CUDA device this machine lacks is named, not a traceback
        model, _cfg, task = load_checkpoint(checkpoint, data, source_lang, target_lang, model_overrides, device)
        check_bilingual(task, checkpoint)
        if sentencepiece_model is not None and syntax:
            raise ValueError("printing the predicted parses (syntax) is not supported with a SentencePiece model yet")
        last_parses(model, syntax)  # refuse a side without parse heads before loading a parser
        src, tgt = task.cfg.source_lang, task.cfg.target_lang
        generation = GenerationConfig(beam=beam, nbest=1, lenpen=lenpen, max_len_a=max_len_a, max_len_b=max_len_b)
        model.prepare_for_inference_(SimpleNamespace(generation=generation))  # as fairseq-generate (eval mode, beamable mm)
        source = SourceText(bpe_codes, lang=src, tokenize=tokenize and not raw_text, lowercase=lowercase,
                            marker=bpe_marker, sentencepiece_model=sentencepiece_model, raw_text=raw_text)
        built_parser = None
        if parser is not None and needs_parse(required_features(task)):
            built_parser = SourceParser(parser, parser_lang or src, batch_size, char_spans=raw_text)
        return cls(model, task, source, TargetText(tgt, detokenize and not raw_text), generation, built_parser, device,
                   batch_size, binarize_trees, log, syntax, skip_invalid)

    @property
    def needs_parse(self) -> bool:
        """Whether generation needs a parse of each source sentence."""
        return needs_parse(self.requests)

    def translate(self, lines: Sequence[str], first_line: int = 1, name: str = "input") -> List[str]:
        """Translations of raw lines (tokenized lines without tokenization), in order. Messages name ``name`` and the
        1-based line number counted from ``first_line``."""
        return [t.text for t in self.translate_syntax(lines, first_line, name)]

    def translate_syntax(self, lines: Sequence[str], first_line: int = 1, name: str = "input") -> List[Translation]:
        """:meth:`translate`, each line with the parses of the sides in ``syntax`` (:class:`Translation`)."""
        out: List[Translation] = []
        for start in range(0, len(lines), self.batch_size):
            chunk = list(lines[start:start + self.batch_size])
            first = first_line + start
            tokens = [self.source.tokens(line) for line in chunk]
            parses: List[LineParse] = [None] * len(chunk)
            if self.needs_parse:
                parses = self._parse(tokens, first, name)
            try:
                out.extend(self._translate(tokens, parses, first, name))
            except LineTooLong as e:
                e.done = out + e.done
                raise
        return out

    def translate_parsed(self, token_lists: Sequence[Sequence[str]], parsed_sentences: Optional[Sequence[LineParse]] = None,
                         first_line: int = 1, name: str = "input") -> List[str]:
        """Translations of tokenized lines (each a list of tokens; no Moses tokenization, no parser) with their parses:
        per line a ParsedSentence, a list of them (several sentences on one line), or None (an empty line, or a model
        that needs no parse). Each parse must be the parse of its line: its words the line's tokens (a parser's
        respelling allowed, :func:`syntrans.parsing.imported.same_token`), its dependency heads a tree; else
        ValueError naming the line, before anything is translated (:func:`check_parsed_input`)."""
        return [t.text for t in self.translate_parsed_syntax(token_lists, parsed_sentences, first_line, name)]

    def translate_parsed_syntax(self, token_lists: Sequence[Sequence[str]],
                                parsed_sentences: Optional[Sequence[LineParse]] = None, first_line: int = 1,
                                name: str = "input") -> List[Translation]:
        """:meth:`translate_parsed`, each line with the parses of the sides in ``syntax`` and, where the given parse
        has dependency heads, those heads (line-level, ``Translation.gold``) to score the source parse against."""
        if parsed_sentences is None:
            parsed_sentences = [None] * len(token_lists)
        check_parsed_input(token_lists, parsed_sentences, first_line, name, self.source.route.char_spans,
                           self.source.lowercase)
        out: List[Translation] = []
        for start in range(0, len(token_lists), self.batch_size):
            stop = start + self.batch_size
            tokens = [[t.lower() for t in ts] if self.source.lowercase else list(ts) for ts in token_lists[start:stop]]
            try:
                out.extend(self._translate(tokens, list(parsed_sentences[start:stop]), first_line + start, name, gold=True))
            except LineTooLong as e:
                e.done = out + e.done
                raise
        return out

    # ------------------------------------------------------------------------------------------------- internals

    def _parse(self, tokens: List[List[str]], first: int, name: str) -> List[LineParse]:
        if self.parser is None:
            raise ValueError(f"{name}: the model needs a parse of every source sentence but this Translator has no parser "
                             "(parser=None): give one, or use translate_parsed with the parses")
        by_line, failures = self.parser.parse([(first + k, t) for k, t in enumerate(tokens) if t], where=name)
        for line, reason in failures:
            self.log(f"{name}, line {line}: the parser failed ({reason}); the right-branching fallback parse is used")
        self.parse_failures += len(failures)
        return [by_line.get(first + k) for k in range(len(tokens))]

    def _translate(self, tokens: List[List[str]], parses: List[LineParse], first: int, name: str,
                   gold: bool = False) -> List[Translation]:
        items, wheres, src_tokens, src_pieces = [], [], [], []
        kept, stop = [], None  # stop: (k, message) of the first line too long, without skip_invalid
        for k, toks in enumerate(tokens):
            if not toks:
                continue
            where = f"{name}, line {first + k}"
            sentences = as_sentences(parses[k])
            if self.needs_parse and not sentences:
                raise ValueError(f"{where}: the model needs a parse of this sentence, and none was given")
            pieces = self.source.pieces(toks)
            ids = encode_source(self.task, pieces)
            if self.max_source_positions is not None and len(ids) > self.max_source_positions:
                message = (f"{where}: {len(ids)} source tokens (BPE pieces and EOS) but the model takes at most "
                           f"{self.max_source_positions}")
                if not self.skip_invalid:
                    stop = (k, message)
                    break
                self.too_long += 1
                self.log(f"{message}: translated to an empty line (--skip-invalid)")
                continue
            kept.append(k)
            src_pieces.append(pieces)
            items.append(line_arrays(pieces, sentences, where, self.source.marker, self.binarize_trees,
                                     self.source.route))
            wheres.append(where)
            src_tokens.append(ids)
        end = len(tokens) if stop is None else stop[0]  # the lines before a line that stops the call are translated
        self.sentences += end
        for k in range(end):
            if not tokens[k]:
                self.empty_lines += 1
                self.log(f"{name}, line {first + k}: empty line, translated to an empty line")
        results = self._generate(kept, items, wheres, src_tokens, src_pieces, [Translation("")] * len(tokens), name, gold)
        if stop is not None:
            raise LineTooLong(stop[1], first + stop[0], results[:end])
        return results

    def _generate(self, live: List[int], items, wheres, src_tokens, src_pieces, results: List[Translation], name: str,
                  gold: bool) -> List[Translation]:
        """``results`` with the translations of the lines ``live`` (indices into ``results``) filled in; ``items``,
        ``wheres``, ``src_tokens`` and ``src_pieces`` hold one entry per line of ``live``."""
        from fairseq import utils  # lazy: imports fairseq

        if not live:
            return results
        side = (memory_side(items, wheres, needed_kinds(self.requests), name)
                if isinstance(self.task, SyntaxTranslationTask) else None)
        sample = collate(self.task, src_tokens, side)
        sample = utils.apply_to_sample(lambda t: t.to(self.device), sample)
        hypos = self.task.inference_step(self.generator, [self.model], sample)
        for i, sid in enumerate(sample["id"].tolist()):
            hypo = hypos[i][0]
            results[live[sid]] = Translation(self._output(hypo), *self._parses(hypo, src_pieces[sid], items[sid], wheres[sid]),
                                             items[sid].get("head") if gold else None)
        return results

    def _parses(self, hypo: Dict, pieces: List[str], item: Dict[str, List[int]], where: str):
        """(source, target) :class:`~.predicted_syntax.PredictedParse` of one line (None for a side not asked for)."""
        marker = self.source.marker
        source = target = None
        if "source" in self.parses:
            source = source_parse(self.parses["source"], hypo["syntax"].source, pieces, item["word"], marker, where)
        if "target" in self.parses:
            tgt = [self.task.target_dictionary[int(t)] for t in hypo["tokens"][:-1]]  # the hypothesis without EOS
            target = target_parse(self.parses["target"], hypo["syntax"].target, tgt, marker, where)
        return source, target

    def _output(self, hypo: Dict) -> str:
        """The best hypothesis as fairseq-generate's H- line (BPE removed), then detokenized."""
        from fairseq import utils  # lazy: imports fairseq
        from fairseq_cli.generate import get_symbols_to_strip_from_output  # lazy: imports fairseq

        _, text, _ = utils.post_process_prediction(
            hypo_tokens=hypo["tokens"].int().cpu(), src_str="", alignment=hypo["alignment"], align_dict=None,
            tgt_dict=self.task.target_dictionary, remove_bpe=self.source.remove_bpe,
            extra_symbols_to_ignore=get_symbols_to_strip_from_output(self.generator))
        return self.target(text)
