"""Plots of what a trained syntrans model does (``syntrans-plot``; needs the ``plot`` extra, i.e. matplotlib).

:mod:`syntrans.plots.gates`: the syntax gates of a gated model (Hou et al.) as a layer × head heat map, from a
checkpoint run over a data split or from the ``gate_l{L}h{H}`` values of a fairseq training log, and their
per-layer mean over the epochs of training.

:mod:`syntrans.plots.sentence`: one parsed sentence (Hou et al. 2022, Fig. 1): its tree, syntactic distances,
hard and soft local range masks and PASCAL weights, drawn from :func:`~syntrans.plots.sentence.sentence_matrices`.

:mod:`syntrans.plots.attention`: a model's syntax heads on one sentence of a split, the attention probabilities
its layers compute (kept by :func:`syntrans.modules.attention_record.record_attention`).
"""
