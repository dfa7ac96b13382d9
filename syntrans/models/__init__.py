"""The ``syntax_transformer`` model: options, encoder, decoder, the registered model and its presets."""
from . import nllb_archs, presets, syntax_transformer  # noqa: F401  (register the model, its architectures, NLLB's names)
