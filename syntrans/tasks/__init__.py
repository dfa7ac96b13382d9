from . import syntax_translation  # noqa: F401  (registers the task)
from . import syntax_multilingual  # noqa: F401  (registers the multilingual task)
