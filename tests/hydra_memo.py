"""A memo of hydra's override parsing, installed in the tests' own processes (the pytest workers and the fork server).

fairseq turns its flat Namespace into its config through hydra's compose (``convert_namespace_to_omegaconf``): every
fairseq command, and every model a test builds the way fairseq-train does, hands hydra about 250 ``key=value``
overrides, each parsed by hydra's ANTLR grammar. That parsing is about a sixth of the 0.5 s a compose takes, and the
same strings come back in every compose. A parse depends on the string and the rule alone (hydra's grammar and its
built-in functions), so here each string is parsed once per process and each caller gets a deep copy of the result,
as if it had been parsed anew. The fork server fills the memo with fairseq's default training and generation
overrides before it forks (:func:`warm`), so a served command finds them parsed.

Each compose also starts by deep-copying hydra's config repository, and with it the config store that its structured
config source holds: the whole store, every dataclass node fairseq and syntrans registered (measured: a conversion
takes 0.24 s with that copy, 0.17 s without). The store is a process-wide singleton that a fresh source takes as it
is (``ConfigStore.instance()``), and loading a config from it deep-copies the node loaded, so the copy here is the
store itself.

tests/test_hydra_memo.py checks that a config composed through the memo equals hydra's own, that callers never
share a parsed object, that the repository's copy takes the store itself while composes stay apart, and that a bad
override fails as it does without the memo. The product never installs it.
"""
from __future__ import annotations

import contextlib
import copy

_CACHE: dict = {}


def install() -> None:
    """Wrap ``OverridesParser.parse_rule`` (once per process)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if getattr(OverridesParser.parse_rule, "_syntrans_memo", False):
        return
    parse = OverridesParser.parse_rule

    def parse_rule(self, s, rule_name):
        key = (s, rule_name)
        if key not in _CACHE:
            _CACHE[key] = parse(self, s, rule_name)  # a failed parse raises and is not remembered
        return copy.deepcopy(_CACHE[key])

    parse_rule._syntrans_memo = True
    parse_rule.__wrapped__ = parse
    OverridesParser.parse_rule = parse_rule
    _share_store_on_copy(True)


def _share_store_on_copy(on: bool) -> None:
    """A deep copy of hydra's config store (a process-wide singleton) is the store itself; ``on=False`` restores
    hydra's full copy. (The structured config source that holds it is a class hydra's plugin scan imports anew, so the
    store's own class is the one to patch.)"""
    from hydra.core.config_store import ConfigStore

    if on:
        ConfigStore.__deepcopy__ = lambda self, memo: self
    elif "__deepcopy__" in ConfigStore.__dict__:
        del ConfigStore.__deepcopy__


@contextlib.contextmanager
def uninstalled():
    """A context in which hydra parses every override itself and copies the whole config store with its repository
    (the memo's comparison in the tests)."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.override_parser.overrides_parser import OverridesParser

    wrapped, sharing = OverridesParser.parse_rule, "__deepcopy__" in ConfigStore.__dict__
    OverridesParser.parse_rule = getattr(wrapped, "__wrapped__", wrapped)
    _share_store_on_copy(False)
    try:
        yield
    finally:
        OverridesParser.parse_rule = wrapped
        _share_store_on_copy(sharing)


def warm() -> int:
    """Parse the overrides of fairseq-train's and fairseq-generate's defaults into the memo; returns how many are
    remembered. Argument parsing only: nothing is composed, no config store or hydra singleton is touched."""
    from fairseq import options
    from fairseq.dataclass.utils import override_module_args
    from hydra.core.override_parser.overrides_parser import OverridesParser

    install()
    parser = OverridesParser.create()
    for make, argv in ((options.get_training_parser, ["data", "--arch", "transformer", "--optimizer", "adam",
                                                      "--lr-scheduler", "inverse_sqrt"]),
                       (options.get_generation_parser, ["data", "--path", "checkpoint.pt"])):
        args = options.parse_args_and_arch(make(), argv)
        overrides, _ = override_module_args(args)
        parser.parse_overrides(overrides)
    return len(_CACHE)
