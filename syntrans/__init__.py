"""syntrans: syntax-guided attention for the fairseq Transformer.

Importing the package (or passing its directory to fairseq's ``--user-dir``) registers the
``syntax_translation`` task, the ``syntax_transformer`` model with its presets and the
``syntax_label_smoothed_cross_entropy`` criterion, and allow-lists the classes fairseq checkpoints
hold for torch's safe loader. ``syntrans.syntax`` holds the pure algorithms (no fairseq inside).
"""
__version__ = "0.1.0"

try:
    import fairseq  # noqa: F401
except ImportError:  # the pure algorithms stay usable without fairseq
    pass
else:
    from . import plugin  # noqa: F401
