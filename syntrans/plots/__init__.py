"""Plots of what a trained syntrans model does (``syntrans-plot``; needs the ``plot`` extra, i.e. matplotlib).

:mod:`syntrans.plots.gates`: the syntax gates of a gated model (Hou et al.) as a layer × head heat map, from a
checkpoint run over a data split or from the ``gate_l{L}h{H}`` values of a fairseq training log, and their
per-layer mean over the epochs of training.
"""
