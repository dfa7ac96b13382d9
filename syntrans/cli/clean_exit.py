"""How every syntrans command ends on an error: one clean line and exit status 2, never a Python traceback.

:func:`clean_main` wraps a command's ``main(argv)``. An exception that escapes the command becomes one line on stderr,
``PROG: error: MESSAGE``: our own errors (ValueError, FileNotFoundError, …) carry a message naming the file, the line
and the fault; an ``OSError`` of the system (a permission refused, a full disk) is given its file and the system's
reason; any other exception its type and message. The exit status is 2. ``--debug`` anywhere in the arguments (taken
out before the command parses them) or ``SYNTRANS_DEBUG=1`` in the environment lets the exception through, with its
traceback. An ``AssertionError`` (a broken invariant of syntrans itself) always keeps its traceback: that is what a
bug report needs.

A closed pipe (``syntrans-translate … | head -1``) ends the command quietly, as Unix tools end, with status 141
(128 + SIGPIPE, what a shell reports for a tool that SIGPIPE stopped); an interrupt (Ctrl-C) with one line and 130.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Callable, List, Optional

DEBUG_FLAG = "--debug"
DEBUG_ENV = "SYNTRANS_DEBUG"
EXIT_ERROR = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE
EXIT_INTERRUPTED = 130  # 128 + SIGINT


def debugging(argv: List[str]) -> bool:
    """Whether tracebacks are wanted: ``--debug`` in ``argv`` (removed from it) or ``SYNTRANS_DEBUG`` set to
    anything but '', '0' or 'false'."""
    wanted = os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")
    while DEBUG_FLAG in argv:
        argv.remove(DEBUG_FLAG)
        wanted = True
    return wanted


def describe(error: BaseException) -> str:
    """One line saying what went wrong: the file and the system's reason for an OSError that names a file, the message
    of our own errors, the type and message of any other exception."""
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        files = f"{error.filename}" + (f" → {error.filename2}" if error.filename2 is not None else "")
        return f"{files}: {error.strerror}"
    message = str(error)
    if isinstance(error, KeyError) and error.args:
        message = repr(error.args[0])
    text = message if _ours(error) else f"{type(error).__name__}: {message}" if message else type(error).__name__
    return text.rstrip()


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit does not hit the closed pipe again (it
    would print 'Exception ignored … BrokenPipeError')."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # stdout replaced (a test's capture) or closed
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def clean_main(prog: str) -> Callable[[Callable[[List[str]], int]], Callable[[Optional[List[str]]], int]]:
    """Decorator: ``main(argv)`` (argv a list, ``sys.argv[1:]`` when None) whose escaping exceptions end as described
    in the module docs; ``prog`` begins each line."""

    def wrap(run: Callable[[List[str]], int]) -> Callable[[Optional[List[str]]], int]:
        @functools.wraps(run)
        def main(argv: Optional[List[str]] = None) -> int:
            argv = list(sys.argv[1:] if argv is None else argv)
            debug = debugging(argv)
            try:
                return run(argv)
            except BrokenPipeError:
                if debug:
                    raise
                quiet_stdout()
                return EXIT_BROKEN_PIPE
            except KeyboardInterrupt:
                if debug:
                    raise
                print(f"{prog}: interrupted", file=sys.stderr, flush=True)
                return EXIT_INTERRUPTED
            except AssertionError:
                raise
            except Exception as e:  # noqa: BLE001 (the point of the module: one line for any error)
                if debug:
                    raise
                print(f"{prog}: error: {describe(e)} (--debug or {DEBUG_ENV}=1 shows the traceback)"
                      if not _ours(e) else f"{prog}: error: {describe(e)}", file=sys.stderr, flush=True)
                return EXIT_ERROR

        return main

    return wrap


def _ours(error: BaseException) -> bool:
    """Whether ``error`` is of the kinds our commands raise with a complete message (no hint about --debug needed)."""
    return isinstance(error, (ValueError, OSError, NotImplementedError)) and bool(str(error))


__all__ = ["DEBUG_ENV", "DEBUG_FLAG", "EXIT_BROKEN_PIPE", "EXIT_ERROR", "clean_main", "debugging", "describe"]
