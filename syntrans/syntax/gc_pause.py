"""Pausing Python's cyclic garbage collector while building large heaps of small acyclic objects."""
import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic collector: reading a corpus makes millions of small lists and strings, and the
    collector's repeated scans of that growing heap took most of the time (3-4× slower reading)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
