"""syntrans: syntax-guided attention for the fairseq Transformer.

Importing the package is light: it never imports fairseq or torch itself, so commands that train nothing
(``syntrans-parse``, every ``--help``) start quickly. The plugin's fairseq classes (the ``syntax_translation``
task, the ``syntax_transformer`` model with its presets, the ``syntax_label_smoothed_cross_entropy`` criterion,
and the torch safe-loader allow-list for fairseq checkpoints) are registered as soon as both syntrans and fairseq
are imported, in either order:

- fairseq imported first (``fairseq-train --user-dir``, fairseq's checkpoint loading with a stored ``user_dir``):
  importing syntrans registers at once;
- syntrans imported first: registration runs when fairseq's import completes, or, when a syntrans module is
  what imports fairseq, once that syntrans import completes (an import hook that leaves when it has registered);
- ``syntrans.register()`` (or ``import syntrans.plugin``) does it explicitly, importing fairseq.

fairseq imported after syntrans does not configure the root logger (see :mod:`syntrans.quiet_import`).
``syntrans.syntax`` holds the pure algorithms (no fairseq inside).
"""
import contextlib
import importlib.abc
import importlib.util
import sys

__version__ = "0.1.0"


def register() -> None:
    """Register the plugin's fairseq classes (imports fairseq; a no-op after the first call)."""
    from . import plugin  # noqa: F401


class _Loader(importlib.abc.Loader):
    """Another loader, with ``after(module)`` run when it has executed the module (``before()`` first) inside the
    ``context`` (a context manager factory)."""

    def __init__(self, inner, before, after, context=contextlib.nullcontext):
        self._inner, self._before, self._after, self._context = inner, before, after, context

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._before()
        try:
            with self._context():
                self._inner.exec_module(module)
        finally:
            self._after(module)

    def __getattr__(self, name):  # anything else (resource readers, get_data) is the inner loader's
        return getattr(self._inner, name)


class _RegisterWhenBothLoaded(importlib.abc.MetaPathFinder):
    """Registers the plugin once fairseq's package has run and no syntrans module is half-imported.

    It wraps the loaders of fairseq (to learn that fairseq is there) and of every ``syntrans.*`` module (to count
    how deep the syntrans imports in progress are): fairseq imported from inside a syntrans module (a module of
    the model importing fairseq's classes) registers when the outermost syntrans import has finished, because
    the registration imports syntrans modules that are not complete before that. It leaves ``sys.meta_path``
    when it has registered.
    """

    def __init__(self):
        self.depth = 0  # syntrans modules being executed now
        self.fairseq_loaded = False

    def find_spec(self, name, path=None, target=None):
        if name != "fairseq" and not name.startswith(__name__ + "."):
            return None
        sys.meta_path.remove(self)  # find it with the other finders
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        if name == "fairseq":
            from .quiet_import import fairseq_import_rolled_back
            spec.loader = _Loader(spec.loader, lambda: None, self._fairseq_done, fairseq_import_rolled_back)
        else:
            spec.loader = _Loader(spec.loader, self._enter, self._leave)
        return spec

    def _enter(self):
        self.depth += 1

    def _leave(self, module):
        self.depth -= 1
        self._maybe_register()

    def _fairseq_done(self, module):
        self.fairseq_loaded = "fairseq" in sys.modules  # False when fairseq's own import failed
        self._maybe_register()

    def _maybe_register(self):
        if self.fairseq_loaded and self.depth == 0 and self in sys.meta_path:
            sys.meta_path.remove(self)
            register()


if "fairseq" in sys.modules:
    register()
elif importlib.util.find_spec("fairseq") is not None and not any(
        isinstance(f, _RegisterWhenBothLoaded) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterWhenBothLoaded())
