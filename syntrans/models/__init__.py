from . import syntax_transformer  # noqa: F401  (registers the model and its presets)
