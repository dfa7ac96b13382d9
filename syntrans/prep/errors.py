"""The one exception class of ``syntrans-prepare``: a problem the user can fix.

Its message names the file (and line where there is one), what was expected, what was found and
how to fix it; the command line prints it without a traceback and exits with status 2.
"""
from __future__ import annotations


class PrepError(RuntimeError):
    """A user-fixable problem while preparing a corpus (missing or corrupt files, bad options, offline)."""
