"""Syntax sidecars (fairseq indexed datasets) and the dataset that pads their features like tokens."""
