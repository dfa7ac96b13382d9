"""The ``syntax_transformer`` model: options, encoder, decoder, the registered model and its presets."""
from . import presets, syntax_transformer  # noqa: F401  (register the model and its architectures)
