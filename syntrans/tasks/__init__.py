from . import syntax_translation  # noqa: F401  (registers the task)
