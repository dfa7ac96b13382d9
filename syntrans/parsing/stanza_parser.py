"""The stanza pipeline wrapper and the alignment of stanza's output back to the input tokens.

Input tokens are given to stanza pretokenized (``tokenize_pretokenized=True``: one token list = one
stanza sentence, no re-tokenization). In ``--tokenized`` mode each token is first given its *parser
spelling*: Moses XML escapes are undone (``&apos;`` → ``'``, ``&quot;`` → ``"``, ``&amp;`` → ``&``,
``&lt;`` ``&gt;`` ``&#124;`` ``&#91;`` ``&#93;``), since stanza's models were trained on unescaped
text. The output always carries the input spelling.

Alignment (:func:`align_to_tokens`) is by position only, never by string search:

* stanza sentence token i is input token i (their numbers must agree, else it is an error);
  a token may hold several syntactic words (a multi-word token, ``sentence.tokens[i].words``) and
  words may be re-spelled (``-LRB-`` for ``(``, unescaped or normalised quotes, …): the spelling is
  ignored, the output has exactly one word per input token, spelled as in the input;
* a token's head and relation, and its place in the constituency tree (leaf j = word j), follow the rules of
  :mod:`syntrans.syntax.word_groups` (the token's *external* word gives its head and relation; the leaf of its first
  word is kept, relabelled with the input token): the resulting tree's leaves are the input tokens.

Multi-word tokens (:func:`mwt_rule`, :func:`pretokenized_document`): stanza's models for languages with
contractions (German ``zum`` = ``zu dem``, ``im`` = ``in dem``, …) are trained on the expanded syntactic
words, but in pretokenized mode stanza's mwt processor expands nothing by itself: it expands only the
tokens its tokenizer marked ``MWT=Yes`` in MISC, and the pretokenized tokenizer marks none. Left so, every
contraction would reach the tagger and parser as one unknown word. So when the pipeline has an mwt
processor, the sentences are handed to stanza as a ``stanza.Document`` (as its pretokenized tokenizer
builds it: ids, texts, character offsets) in which a token is marked ``MWT=Yes`` when

* the mwt model's expansion dictionary has it (``trainer.dict_expansion``, with its Title-case and
  UPPER-case look-ups): the tokenizer-free path cannot know more; the seq2seq expander is never asked to
  guess for other tokens, since it was trained on multi-word tokens only and would split ordinary words;
* and the tagger's word vocabulary (``pos`` processor, lower-cased, words seen often enough in its
  training data) does not hold it as a single word: the dictionary lists every form that was a multi-word
  token even once, also forms that are usually plain words (in GUM the typo ``years`` for ``year's``,
  in French ``des`` = ``de les`` beside the article ``des``), and stanza's tokenizer would leave those
  whole in most contexts. A form the tagger learned as a word is left whole, also where it is a
  contraction; a rare one below the vocabulary's cutoff (GUM's ``cycles``) is still expanded.

The marked tokens are expanded by the mwt processor as configured (dictionary, or its seq2seq model
ensembled with the dictionary); :func:`align_to_tokens` then collapses the words back to the input tokens.

Raw text (``char_spans``, :meth:`StanzaParser.parse_texts`: ``syntrans-parse --char-spans``, the raw-text route of
``syntrans-prepare --bpe sentencepiece --no-moses``): each line (its spanned form,
:func:`syntrans.syntax.word_spans.spanned_line`) is a stanza Document of its own, tokenized and split into sentences
by stanza's tokenizer (a line may give several sentences); the words of each sentence are its tokens, spelled as the
line spells them (``line[start_char:end_char]``; a token across whitespace fails the line, which then gets the
fallback parse), collapsed from stanza's syntactic words by the same rules as above
(the tokens playing the input tokens), and each word keeps its token's character span in the line. A multi-word
token is therefore one word whose span is the token's.

Missing models: the pipeline never downloads anything (``download_method=None``). When stanza's
resources or models are not installed, :func:`make_pipeline` raises :class:`MissingModelsError`
whose message names the resources directory (``STANZA_RESOURCES_DIR``, else stanza's default
``stanza.resources.common.DEFAULT_MODEL_DIR``) and the command that installs the models.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import stanza
import torch
from stanza.models.common.doc import ID, MISC, TEXT
from stanza.resources import common as stanza_resources

from ..data.parse_views import VIEWS, parse_views
from ..syntax.parsed import ParsedSentence
from ..syntax.trees import TreeLike
from ..syntax.word_groups import group_heads, group_tree
from ..syntax.word_spans import spanned_line
from .stanza_processors import processors as view_processors

#: the processors syntrans-parse runs for both views (``mwt`` is added for languages whose stanza models have one;
#: fewer run for one view: :func:`syntrans.parsing.stanza_processors.processors`)
PROCESSORS = ("tokenize", "pos", "lemma", "depparse", "constituency")
DEVICES = ("cpu", "cuda")
#: stanza's batch sizes per device, the ``<processor>_batch_size`` options of its Pipeline, in stanza's own units:
#: ``pos`` sentences (at most 5000 words a batch, stanza's cap), ``lemma``, ``mwt`` and ``depparse`` words,
#: ``constituency`` sentences. CPU: one batch of each processor per call of :data:`DEFAULT_LINES_PER_CALL` lines (the
#: lines per call measured with the GUM-trained test models: docs/commands.md, parse throughput); cuda: large batches
#: within stanza's 5000-word cap, constituency at stanza's own default (50), not tuned here (no GPU at hand).
DEFAULT_BATCH_SIZES = {
    "cpu": {"pos": 64, "lemma": 5000, "mwt": 5000, "depparse": 5000, "constituency": 64},
    "cuda": {"pos": 1000, "lemma": 5000, "mwt": 5000, "depparse": 5000, "constituency": 50},
}
#: input lines per call of the pipeline (syntrans-parse --batch-size), per device
DEFAULT_LINES_PER_CALL = {"cpu": 64, "cuda": 1024}

_MOSES_ESCAPES = {"&amp;": "&", "&#124;": "|", "&lt;": "<", "&gt;": ">", "&apos;": "'",
                  "&quot;": '"', "&#91;": "[", "&#93;": "]"}
_MOSES_RE = re.compile("|".join(re.escape(k) for k in _MOSES_ESCAPES))


def moses_unescape(token: str) -> str:
    """Undo the Moses tokenizer's XML escapes in one pass (so ``&amp;apos;`` becomes ``&apos;``)."""
    return _MOSES_RE.sub(lambda m: _MOSES_ESCAPES[m.group(0)], token)


class SyntacticWord(NamedTuple):
    """One syntactic word of a parsed sentence: its text, head (1-based over words, 0 = root; None when the
    parse has no dependencies), relation."""

    text: str
    head: int | None
    deprel: str | None = None


@dataclass
class StanzaLikeSentence:
    """Plain data of one parsed sentence: per token its syntactic words, and a constituency tree."""

    tokens: list[list[SyntacticWord]]
    tree: TreeLike | None = None
    words: list[SyntacticWord] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.words = [w for tok in self.tokens for w in tok]


def from_stanza(sentence: Any, views=VIEWS) -> StanzaLikeSentence:
    """Plain data of a stanza ``Sentence`` (``tokens[i].words``, ``word.head``, ``sentence.constituency``): the heads
    when ``views`` holds ``deps``, the tree when it holds ``trees`` (a ValueError when stanza gave none)."""
    deps, trees = "deps" in views, "trees" in views
    tokens = []
    for tok in sentence.tokens:
        words = []
        for w in tok.words:
            if not deps:
                words.append(SyntacticWord(w.text, None))
                continue
            if w.head is None:
                raise ValueError(f"stanza gave word {w.text!r} no head (is depparse in the pipeline?)")
            words.append(SyntacticWord(w.text, int(w.head), getattr(w, "deprel", None)))
        tokens.append(words)
    tree = getattr(sentence, "constituency", None) if trees else None
    if trees and tree is None:
        raise ValueError("stanza gave the sentence no constituency tree (is constituency in the pipeline?)")
    return StanzaLikeSentence(tokens, tree)


def align_to_tokens(tokens: Sequence[str], sentence: StanzaLikeSentence,
                    line: int | None = None) -> ParsedSentence:
    """One word per input token, heads and tree mapped back by position (rules: module docstring)."""
    tokens = list(tokens)
    if len(sentence.tokens) != len(tokens):
        raise ValueError(f"the parser returned {len(sentence.tokens)} tokens for a sentence of {len(tokens)} tokens")
    word_tok: list[int] = []  # 0-based token of each word
    for t, ws in enumerate(sentence.tokens):
        if not ws:
            raise ValueError(f"the parser returned no word for token {t + 1} ({tokens[t]!r})")
        word_tok.extend([t] * len(ws))
    tok_heads, deprels = _token_heads(sentence, word_tok)
    tree = None
    if sentence.tree is not None:
        tree = group_tree(sentence.tree, word_tok, tokens)
    out = ParsedSentence(words=tokens, heads=tok_heads, deprels=deprels, tree=tree, line=line)
    out.validate(f"line {line}" if line is not None else "aligned sentence")
    return out


def _token_heads(sentence: StanzaLikeSentence, word_tok: Sequence[int]) -> tuple[list[int] | None, list[str] | None]:
    """(token heads, token relations) of the words' dependencies (:func:`~syntrans.syntax.word_groups.group_heads`);
    (None, None) when the parse has none (every word's head None)."""
    words = sentence.words
    heads = [w.head for w in words]
    if all(h is None for h in heads):
        return None, None
    if any(h is None for h in heads):
        raise ValueError(f"the parser gave {sum(h is None for h in heads)} of {len(words)} words no head")
    tok_heads, tok_rels = group_heads(heads, [w.deprel for w in words], word_tok)
    return tok_heads, (None if any(r is None for r in tok_rels) else list(tok_rels))


# --------------------------------------------------------------------------------------------
# the pipeline


class MissingModelsError(RuntimeError):
    """stanza's resources or models for the language are not installed (or the language is unknown)."""


def resources_dir() -> str:
    """Where stanza looks for models: ``$STANZA_RESOURCES_DIR``, else stanza's default (read now)."""
    return os.environ.get("STANZA_RESOURCES_DIR") or stanza_resources.DEFAULT_MODEL_DIR


def download_command(lang: str, model_dir: str | None = None) -> str:
    """The shell command that installs the models syntrans-parse needs.

    ``mwt`` is not named: ``stanza.download`` adds it by itself for a language whose tokenizer has one,
    and naming it for a language without one makes the download fail.
    """
    model_dir = model_dir or resources_dir()
    return (f"python -c \"import stanza; stanza.download({lang!r}, model_dir={model_dir!r}, "
            f"processors={','.join(PROCESSORS)!r})\"")


def missing_models_message(lang: str, error: BaseException, model_dir: str | None = None) -> str:
    model_dir = model_dir or resources_dir()
    return (
        f"syntrans-parse: cannot load the stanza models for language {lang!r} from the resources directory "
        f"{model_dir} (set STANZA_RESOURCES_DIR to use another directory).\n"
        f"  stanza said: {type(error).__name__}: {' '.join(str(error).split())}\n"
        f"  Install them (needs internet access; stanza adds the mwt model for languages that have one) with:\n"
        f"    {download_command(lang, model_dir)}\n"
        f"  or run without models: --parser right-branching, --parser left-branching or --parser flat."
    )


def has_mwt(lang: str, model_dir: str) -> bool:
    """Whether the installed resources list a multi-word-token model for ``lang`` (False if unknown)."""
    try:
        resources = stanza_resources.load_resources_json(model_dir)
    except (OSError, ValueError):  # no or unreadable resources.json: the pipeline itself will report it
        return False
    entry = resources.get(lang, {})
    if isinstance(entry, dict) and "alias" in entry:
        entry = resources.get(entry["alias"], {})
    return isinstance(entry, dict) and "mwt" in entry


def resolve_device(device: str | None) -> str:
    """``cpu`` or ``cuda``: ``None``/``auto`` is cuda when torch sees a GPU, else cpu; ``cuda`` without one is a
    ValueError."""
    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in DEVICES:
        raise ValueError(f"expected a device from {', '.join(DEVICES)} or auto, found {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch sees no CUDA device here (torch.cuda.is_available() is False); "
                         "use --device cpu")
    return device


def batch_sizes_for(device: str, given: dict | None = None) -> dict:
    """stanza's batch sizes on ``device``: :data:`DEFAULT_BATCH_SIZES` with ``given`` over them (a ValueError naming
    an unknown processor or a size below 1)."""
    out = dict(DEFAULT_BATCH_SIZES[device])
    for name, value in (given or {}).items():
        if name not in out:
            raise ValueError(f"stanza batch size for {name!r}: expected one of {', '.join(out)}")
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"stanza batch size {name}={value!r}: expected an integer >= 1")
        out[name] = value
    return out


def pipeline_options(lang: str, views=VIEWS, device: str = "cpu", batch_sizes: dict | None = None,
                     model_dir: str | None = None, pretokenized: bool = True) -> dict:
    """The keyword arguments of ``stanza.Pipeline(lang, **options)`` for ``views`` on ``device``: the processors of
    the views (:func:`syntrans.parsing.stanza_processors.processors`; mwt where the language has a model), pretokenized
    input (``pretokenized`` False: stanza's own tokenizer and sentence splitter run), no download, and the batch sizes
    of the processors that run."""
    model_dir = model_dir or resources_dir()
    procs = view_processors(parse_views(list(views)), mwt=has_mwt(lang, model_dir))
    sizes = batch_sizes_for(device, batch_sizes)
    options = dict(dir=model_dir, processors=",".join(procs), tokenize_pretokenized=pretokenized, use_gpu=device == "cuda",
                   download_method=None, logging_level="WARN")
    options.update({f"{p}_batch_size": sizes[p] for p in procs if p in sizes})
    return options


def make_pipeline(lang: str, views=VIEWS, device: str | None = None, batch_sizes: dict | None = None,
                  pretokenized: bool = True):
    """Build the stanza pipeline of ``views`` on ``device`` (None: :func:`resolve_device`) (the factory tests
    monkeypatch; options: :func:`pipeline_options`); MissingModelsError when models are absent."""
    model_dir = resources_dir()
    device = resolve_device(device)
    try:
        return stanza.Pipeline(lang, **pipeline_options(lang, views, device, batch_sizes, model_dir, pretokenized))
    except (OSError, ValueError) as e:  # ResourcesFileNotFoundError, LanguageNotDownloadedError, unknown language
        raise MissingModelsError(missing_models_message(lang, e, model_dir)) from e


def mwt_rule(pipeline: Any) -> Callable[[str], bool] | None:
    """Which tokens (parser spelling) stanza's mwt processor is asked to expand; None when the pipeline has none.

    A token is marked when the mwt model's dictionary expands it and the tagger's word vocabulary does not
    hold it as a word (why: module docstring). A pipeline without ``processors`` (a stand-in) has no mwt.
    """
    processors = getattr(pipeline, "processors", None)
    if not isinstance(processors, dict) or "mwt" not in processors:
        return None
    expander = processors["mwt"].trainer
    if not callable(getattr(expander, "dict_expansion", None)):
        raise TypeError(f"stanza {stanza.__version__}: the mwt processor's model ({type(expander).__name__}) has no "
                        "dict_expansion(token) method, which syntrans needs to mark the multi-word tokens of "
                        "pretokenized input")
    pos = processors.get("pos")
    vocab = getattr(pos, "vocab", None)
    words = vocab["word"] if vocab is not None and "word" in vocab else ()  # WordVocab: `in` lower-cases

    def is_mwt(token: str) -> bool:
        return bool(token) and token not in words and expander.dict_expansion(token) is not None

    return is_mwt


def pretokenized_document(sentences: Sequence[Sequence[str]], is_mwt: Callable[[str], bool]) -> stanza.Document:
    """The Document stanza's pretokenized tokenizer builds (ids, texts, ``start_char``/``end_char`` in MISC over
    the sentences joined by spaces), with ``MWT=Yes`` added to the MISC of each token ``is_mwt`` accepts."""
    rows = []
    start = 0
    for sentence in sentences:
        row = []
        for i, token in enumerate(sentence, 1):
            misc = f"start_char={start}|end_char={start + len(token)}" + ("|MWT=Yes" if is_mwt(token) else "")
            row.append({ID: (i,), TEXT: token, MISC: misc})
            start += len(token) + 1
        rows.append(row)
    return stanza.Document(rows, text=" ".join(" ".join(s) for s in sentences))


class StanzaParser:
    """Parses batches of pretokenized sentences with stanza into the ``views`` asked for (the pipeline runs only
    their processors); ``parse_batch`` raises when stanza fails.

    With an mwt processor in the pipeline the sentences go to stanza as a Document whose contractions are
    marked for expansion (:func:`mwt_rule`); else as token lists. ``char_spans``: the pipeline tokenizes raw lines
    itself (:meth:`parse_texts`; module docstring); ``parse_batch`` is then refused.
    """

    def __init__(self, lang: str = "en", unescape: bool = True, pipeline: Any = None, views=VIEWS,
                 device: str | None = None, batch_sizes: dict | None = None, char_spans: bool = False):
        self.lang = lang
        self.unescape = unescape
        self.char_spans = char_spans
        self.views = parse_views(list(views))
        if pipeline is None:  # pretokenized: the call stand-ins of make_pipeline take
            pipeline = (make_pipeline(lang, self.views, device, batch_sizes, pretokenized=False) if char_spans
                        else make_pipeline(lang, self.views, device, batch_sizes))
        self.pipeline = pipeline
        self.is_mwt = None if char_spans else mwt_rule(self.pipeline)

    def parse_texts(self, texts: Sequence[str]) -> list[list[ParsedSentence]]:
        """The sentences of each raw line (its spanned form), stanza's tokens as the words, each with its character
        span in that line (module docstring); raises if stanza fails on any line."""
        if not self.char_spans:
            raise ValueError("this stanza pipeline runs pretokenized: raw lines need StanzaParser(char_spans=True)")
        lines = [spanned_line(t) for t in texts]
        if not lines:
            return []
        docs = self.pipeline([stanza.Document([], text=line) for line in lines])
        return [self._line_sentences(line, doc) for line, doc in zip(lines, docs)]

    def _line_sentences(self, line: str, doc: Any) -> list[ParsedSentence]:
        out = []
        for sentence in doc.sentences:
            spans = [(int(t.start_char), int(t.end_char)) for t in sentence.tokens]
            tokens = [line[a:b] for a, b in spans]
            spaced = next((t for t in tokens if len(t.split()) != 1), None)
            if spaced is not None:  # a word of a parse (a tree's leaf, a CoNLL-U form) holds no whitespace
                raise ValueError(f"stanza's tokenizer made {spaced!r} one token, across whitespace")
            parsed = align_to_tokens(tokens, from_stanza(sentence, self.views))
            parsed.spans = spans
            out.append(parsed)
        if not out:
            raise ValueError(f"stanza found no sentence in the line {line[:40]!r}")
        return out

    def parse_batch(self, sentences: Sequence[Sequence[str]]) -> list[ParsedSentence]:
        """One ParsedSentence per sentence (words = the given tokens); raises if any sentence fails."""
        if self.char_spans:
            raise ValueError("this stanza pipeline tokenizes raw lines itself (char_spans): use parse_texts")
        if not sentences:
            return []
        spelled = [[moses_unescape(t) if self.unescape else t for t in s] for s in sentences]
        doc = self.pipeline(spelled if self.is_mwt is None else pretokenized_document(spelled, self.is_mwt))
        got = list(doc.sentences)
        if len(got) != len(sentences):
            raise ValueError(f"stanza returned {len(got)} sentences for {len(sentences)} token lists")
        return [align_to_tokens(toks, from_stanza(s, self.views)) for toks, s in zip(sentences, got)]
