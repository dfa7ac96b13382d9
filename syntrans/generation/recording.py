"""Generators that hand back, with every hypothesis, the parent each subword's parse heads predicted
(:mod:`syntrans.modules.parse_heads`): ``hypo["syntax"]``.

* :class:`ParseRecordingGenerator`, fairseq's beam search (``SequenceGenerator``): the source parse from the
  encoder's single forward; the hypothesis parse from the decoder's parse heads *while decoding*: at every step the
  current query row's argmax is appended to a per-beam-row history (:class:`HeadRecordingEnsemble`), which follows
  the beams when fairseq reorders them, and a finished hypothesis takes its row's history. The parses are asked of
  the encoder and decoder as an argument of their forward (``keep=("parse",)``) and read from their outputs; no
  attention is recomputed, and the tokens and scores are the stock generator's.
* :class:`ParseRecordingScorer`, fairseq's ``--score-reference`` (``SequenceScorer``): both parses from the one
  teacher-forced forward of the reference (asked by a hook on the model's forward).

The record of one hypothesis, a :class:`HypothesisParses`::

    hypo["syntax"].source  # {"dbsa@0": LongTensor (n,), "lisa@2": …}: per source subword (EOS excluded)
    hypo["syntax"].target  # {"dbsa@0": LongTensor (m,)}: per hypothesis subword (EOS excluded)

each value the predicted parent as a 0-based subword position of the same side, −1 for EOS (source) or BOS
(target). ``source`` is the same for every hypothesis of a sentence.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Set

import torch
from fairseq.sequence_generator import EnsembleModel, SequenceGenerator
from fairseq.sequence_scorer import SequenceScorer

from ..modules.attention_record import side_reports
from ..modules.blocks import KEEP_PARSE
from ..modules.layer_report import LayerReport, SyntaxOutput
from ..modules.parse_heads import ParseLayer, parse_layers, sentence_heads

Heads = Dict[str, torch.Tensor]  # parse tag (e.g. "dbsa@0") → (n,) long subword parents


@dataclass
class HypothesisParses:
    """The parses a recording generator hands back with a hypothesis (``hypo["syntax"]``, module docstring)."""

    source: Heads = field(default_factory=dict)  # per source subword (EOS excluded), −1: EOS
    target: Heads = field(default_factory=dict)  # per hypothesis subword (EOS excluded), −1: BOS


def model_parses(models) -> List[ParseLayer]:
    """The parses of the single model whose heads are recorded; an ensemble has no one parse, a model without
    LISA or DBSA heads none."""
    if len(models) != 1:
        raise ValueError(f"--print-syntax reads the parse heads of one model, found an ensemble of {len(models)} "
                         "(--path a.pt:b.pt); generate with one checkpoint")
    parses = parse_layers(models[0])
    if not parses:
        raise ValueError("--print-syntax: this model has no LISA or DBSA heads, so it predicts no parse to print "
                         "(distance-mask and PASCAL heads are given their parents)")
    return parses


def real_positions(tokens: torch.Tensor, pad: int, boundary: int, skip: Set[int] = frozenset()) -> List[torch.Tensor]:
    """Per row of ``tokens`` (B, T) the positions of its subwords: neither padding nor ``boundary`` (the source's
    EOS, the decoder input's BOS) nor a token of ``skip`` (a task's language tokens) → B tensors (n_b,) long, in
    order."""
    keep = tokens.ne(pad) & tokens.ne(boundary)  # (B, T)
    for token in skip:
        keep &= tokens.ne(token)
    return [row.nonzero().squeeze(-1) for row in keep]


def side_heads(reports: Dict[int, LayerReport], parses: List[ParseLayer], positions: List[torch.Tensor]) -> List[Heads]:
    """Per sentence the parents predicted by each parse of one side, read from that side's layer reports
    ({layer: report}, each report's ``parse``: {block key: (B, T) argmax keys}); positions per sentence
    (:func:`real_positions`) → B dicts tag → (n_b,) long."""
    out: List[Heads] = [{} for _ in positions]
    for layer in parses:
        heads = reports[layer.layer].parse[layer.kind]  # (B, T)
        for b, pos in enumerate(positions):
            out[b][layer.tag] = sentence_heads(heads[b], pos).cpu()
    return out


class HeadRecordingEnsemble(EnsembleModel):
    """fairseq's ensemble wrapper around one model that records the parse heads while the generator decodes.

    After the encoder's forward: the source parents of every sentence (``src_heads``). After every incremental
    decoder step: the argmax key of each decoder parse layer's current query row, appended to ``history``
    (tag → (bsz·beam, steps) long, keys in decoder-input positions, 0 = BOS), whose rows are reordered with the
    beams (``reorder_incremental_state``, which also drops the rows of finished sentences). Both forwards are asked
    for the parses (``keep``) and read from the outputs."""

    def __init__(self, models):
        parses = model_parses(models)
        super().__init__(models)
        self.parses = parses
        encoder = models[0].encoder
        self.pad, self.eos = encoder.padding_idx, encoder.dictionary.eos()
        self.src_heads: List[Heads] = []
        self.history: Dict[str, torch.Tensor] = {}
        self.skip_tokens: Set[int] = set()  # tokens that are no subword of either side (a task's language tokens)

    def forward_encoder(self, net_input):
        out = [m.encoder.forward_torchscript({**net_input, "keep": (KEEP_PARSE,)}) for m in self.models]
        mine = [x for x in self.parses if x.side == "encoder"]
        self.src_heads = side_heads(side_reports("encoder", out[0]), mine,
                                    real_positions(net_input["src_tokens"], self.pad, self.eos, self.skip_tokens))
        self.history = {}
        return out

    def forward_decoder(self, tokens, encoder_outs, incremental_states, temperature: float = 1.0):
        """One step of the single model, as fairseq's ensemble takes it (the last position's log-probabilities and
        its encoder-decoder attention), with the decoder asked for its parses."""
        model = self.models[0]
        decoder_out = model.decoder.forward(tokens, encoder_out=encoder_outs[0] if self.has_encoder() else None,
                                            incremental_state=incremental_states[0], keep=(KEEP_PARSE,))
        reports = side_reports("decoder", decoder_out)
        for x in self.parses:
            if x.side == "decoder":
                step = reports[x.layer].parse[x.kind][:, -1:]  # (bsz·beam, 1)
                seen = self.history.get(x.tag)
                self.history[x.tag] = step if seen is None else torch.cat([seen, step], dim=1)
        attn = decoder_out[1]["attn"][0] if len(decoder_out) > 1 and decoder_out[1] is not None else None
        if attn is not None:
            attn = attn[:, -1, :]
        last = (decoder_out[0][:, -1:, :].div_(temperature), decoder_out[1] if len(decoder_out) > 1 else None)
        return model.get_normalized_probs(last, log_probs=True, sample=None)[:, -1, :], attn

    def reorder_incremental_state(self, incremental_states, new_order):
        super().reorder_incremental_state(incremental_states, new_order)
        self.history = {tag: h.index_select(0, new_order) for tag, h in self.history.items()}


class ParseRecordingGenerator(SequenceGenerator):
    """fairseq's ``SequenceGenerator`` (same arguments, one model) whose hypotheses carry ``hypo["syntax"]``
    (module docstring). Build it with ``task.build_generator([model], args, seq_gen_cls=ParseRecordingGenerator)``."""

    def __init__(self, models, tgt_dict, **kwargs):
        super().__init__(HeadRecordingEnsemble(models), tgt_dict, **kwargs)

    @torch.no_grad()
    def generate(self, models, sample, **kwargs):
        finalized = super().generate(models, sample, **kwargs)
        for sent, hypos in enumerate(finalized):
            for hypo in hypos:
                hypo.setdefault("syntax", HypothesisParses()).source = self.model.src_heads[sent]
        return finalized

    def finalize_hypos(self, step, bbsz_idx, eos_scores, tokens, scores, finalized, finished, beam_size, attn,
                       src_lengths, max_len):
        # fairseq appends the hypotheses of rows bbsz_idx in that order, for a sentence while it has fewer than
        # beam_size; the sentence of row r is the (r // beam_size)-th still unfinished one
        unfinished = [k for k, done in enumerate(finished) if not done]
        sent_of = [unfinished[r // beam_size] for r in bbsz_idx.tolist()]
        before = [len(f) for f in finalized]
        history = {tag: h.index_select(0, bbsz_idx) for tag, h in self.model.history.items()}  # (n, step + 1)
        out = super().finalize_hypos(step, bbsz_idx, eos_scores, tokens, scores, finalized, finished, beam_size, attn,
                                     src_lengths, max_len)
        rows_of = defaultdict(list)
        for i, sent in enumerate(sent_of):
            rows_of[sent].append(i)
        for sent, rows in rows_of.items():
            for hypo, i in zip(finalized[sent][before[sent]:], rows):
                if not torch.equal(hypo["tokens"][:-1], tokens[bbsz_idx[i], 1: step + 1]):
                    raise RuntimeError(f"ParseRecordingGenerator: the hypothesis finalized from beam row "
                                       f"{int(bbsz_idx[i])} at step {step} is not that row's prefix; fairseq's "
                                       "finalize_hypos no longer appends in bbsz_idx order")
                # decoder-input positions of the hypothesis's subwords (1 … step), a language token left out
                row = tokens[bbsz_idx[i], 1: step + 1]  # (step,)
                keep = torch.ones_like(row, dtype=torch.bool)
                for token in self.model.skip_tokens:
                    keep &= row.ne(token)
                subwords = keep.nonzero().squeeze(-1) + 1  # (m,)
                hypo["syntax"] = HypothesisParses(target={tag: sentence_heads(h[i], subwords).cpu()
                                                          for tag, h in history.items()})
        return out


class ParseRecordingScorer(SequenceScorer):
    """fairseq's ``SequenceScorer`` (``--score-reference``) whose hypotheses (the references) carry
    ``hypo["syntax"]`` (module docstring), both sides from the teacher-forced forward."""

    @torch.no_grad()
    def generate(self, models, sample, **kwargs):
        parses = model_parses(models)
        model = models[0]
        encoder = model.encoder
        seen: List[SyntaxOutput] = []

        def ask(module, args, kwargs):  # the model's forward keeps the parses in its output
            kwargs["keep"] = tuple(kwargs.get("keep", ())) + (KEEP_PARSE,)
            return args, kwargs

        def read(module, args, kwargs, output):
            seen.append(output[1]["syntax"])

        handles = [model.register_forward_pre_hook(ask, with_kwargs=True),
                   model.register_forward_hook(read, with_kwargs=True)]
        try:
            hypos = super().generate(models, sample, **kwargs)
        finally:
            for h in handles:
                h.remove()
        reports = seen[-1]
        net = sample["net_input"]
        skip = getattr(self, "skip_tokens", set())
        src = side_heads(reports.encoder.layers, [x for x in parses if x.side == "encoder"],
                         real_positions(net["src_tokens"], encoder.padding_idx, encoder.dictionary.eos(), skip))
        # decoder input = BOS (fairseq's EOS symbol) + the reference, padded like the target
        tgt = side_heads(reports.decoder.layers, [x for x in parses if x.side == "decoder"],
                         real_positions(net["prev_output_tokens"], self.pad, self.eos, skip))
        for b, per_sentence in enumerate(hypos):
            for hypo in per_sentence:
                hypo["syntax"] = HypothesisParses(src[b], tgt[b])
        return hypos
