"""tests/hydra_memo.py, the tests' memo of hydra's override parsing and its shared config store: configs composed
through it are hydra's own, no two callers share a parsed override or a loaded config, and a bad override fails as
without it (the fork server's side: tests/test_forkserver.py)."""
import copy
import os

import hydra_memo
import pytest
from helpers import SMALL

import syntrans

ARGVS = {
    "pascal": ["--arch", "pascal_transformer_iwslt_de_en", "--optimizer", "adam", "--adam-betas", "(0.9,0.98)",
               "--lr", "7e-4", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "40"],
    "nsd": ["--arch", "nsd_tgt_transformer_base", "--nsd-dist-weight", "0.5", "--criterion",
            "syntax_label_smoothed_cross_entropy", "--label-smoothing", "0.1", "--max-tokens", "1000"],
    "stock": ["--arch", "transformer", "--share-all-embeddings", "--dropout", "0.3", "--seed", "7"],
}


def _args(data, argv):
    """fairseq-train's Namespace for ``argv`` on ``data`` (the syntax task, the small model)."""
    from fairseq import options

    return options.parse_args_and_arch(options.get_training_parser(), [
        str(data), "--user-dir", os.path.dirname(syntrans.__file__), "--task", "syntax_translation", *SMALL, *argv])


def _compose(data, argv):
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    cfg = convert_namespace_to_omegaconf(_args(data, argv))
    groups = OmegaConf.to_yaml({k: v for k, v in cfg.items() if k != "model"})  # model: fairseq's legacy Namespace
    return groups, sorted(vars(cfg.model).items())


@pytest.mark.parametrize("name", list(ARGVS))
def test_configs_composed_through_the_memo_are_hydras_own(name, tiny_data):
    hydra_memo.install()
    with hydra_memo.uninstalled():
        plain = _compose(tiny_data, ARGVS[name])
    first, again = _compose(tiny_data, ARGVS[name]), _compose(tiny_data, ARGVS[name])  # parsed, then remembered
    assert first == plain and again == plain


def test_each_caller_gets_its_own_parsed_override():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    hydra_memo.install()
    parser = OverridesParser.create()
    a, b = parser.parse_overrides(["optimization.lr=[0.1,0.2]"]), parser.parse_overrides(["optimization.lr=[0.1,0.2]"])
    assert a[0] is not b[0] and a[0].value() is not b[0].value() and a[0].value() == [0.1, 0.2]
    a[0].value().append(9)
    assert parser.parse_overrides(["optimization.lr=[0.1,0.2]"])[0].value() == [0.1, 0.2]


def test_a_bad_override_fails_as_without_the_memo():
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    hydra_memo.install()

    def error():
        with pytest.raises(OverrideParseException) as err:
            OverridesParser.create().parse_overrides(["common.seed=[1,"])
        return str(err.value)

    with hydra_memo.uninstalled():
        plain = error()
    assert error() == error() == plain  # a failed parse is not remembered: it fails again, the same way
    assert ("common.seed=[1,", "override") not in hydra_memo._CACHE


def test_the_repository_copy_shares_the_store_and_composes_stay_apart(tiny_data):
    """With the memo, hydra's copy of its repository takes the config store itself (without it, a copy of the whole
    store); a config composed and then changed leaves the next compose as it was (the store hands out copies)."""
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from hydra.core.config_store import ConfigStore

    hydra_memo.install()
    store = ConfigStore.instance()
    assert copy.deepcopy(store) is store
    with hydra_memo.uninstalled():
        copied = copy.deepcopy(store)
        assert copied is not store and copied.repo == store.repo and copied.repo is not store.repo
    assert copy.deepcopy(store) is store  # installed again on leaving

    args = _args(tiny_data, ARGVS["stock"])
    first = convert_namespace_to_omegaconf(args)
    seed = first.common.seed
    first.common.seed, first.optimization.lr[0] = seed + 1, 123.0
    second = convert_namespace_to_omegaconf(args)
    assert second.common.seed == seed and second.optimization.lr[0] != 123.0
