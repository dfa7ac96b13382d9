"""The benchmark's models: which to build, building them, and the batches they all run on.

Models: fairseq's stock ``transformer`` (the reference, "vanilla") and every architecture preset
registered for the ``syntax_transformer`` model except the plain ``syntax_transformer`` arch (found
in fairseq's registry, so later presets are benchmarked without touching this file). All are built
at the same dimensions (``--layers/--dim/--heads/--ffn`` override the presets' sizes), with the
presets' own dropout, from the same seed, by the ``syntax_translation`` task, and all run on the same
list of batches, collated once with every syntax feature any model asks for; each model is handed
only the ``net_input`` keys it reads (tokens, lengths, previous output tokens and the features of its
``syntax_needs()``, required and optional).

The stock ``transformer`` has attention dropout 0 while the presets have their own rates, and
attention dropout alone costs time and memory; so, unless ``--no-matched-vanilla``, each preset whose
dropout rates differ from the stock ones is compared with the stock ``transformer`` run at the
preset's dropout, attention dropout and activation dropout (an extra reference row, e.g.
``transformer[dropout=0.3,attn=0.2,act=0]``): only the syntax mechanism differs between a preset and
its reference.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import torch
from fairseq import options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.models import ARCH_MODEL_INV_REGISTRY, ARCH_MODEL_REGISTRY

from .. import plugin  # noqa: F401  (registers the task, the syntax_transformer presets and the criterion)
from ..data.features import FeatureNeeds
from ..mechanisms.registry import MECHANISMS
from ..tasks.model_interface import SyntaxModel
from .corpus import Corpus
from .options import BenchError, BenchOptions

VANILLA = "transformer"
SYNTAX_MODEL = "syntax_transformer"


def syntax_presets() -> List[str]:
    """Every architecture registered for the ``syntax_transformer`` model but its plain arch."""
    names = ARCH_MODEL_INV_REGISTRY.get(SYNTAX_MODEL, [])
    found = [a for a in names if a != SYNTAX_MODEL and ARCH_MODEL_REGISTRY.get(a) is ARCH_MODEL_REGISTRY[SYNTAX_MODEL]]
    return sorted(found)


@dataclass
class Bench:
    name: str
    model: object
    gen_model: object
    features: List[str]
    notes: List[str]
    arch: str = VANILLA
    reference: str = VANILLA  # the row its ratios are taken against (itself for a reference row)
    optimizer: object = None
    train: List[float] = field(default_factory=list)  # tokens/s per repetition
    gen: List[float] = field(default_factory=list)
    gen_tokens: int = 0
    gen_sentences: int = 0
    peak_bytes: int = 0
    static_bytes: int = 0
    mem_residual: Optional[int] = None
    params: int = 0


def model_argv(opts: BenchOptions, corpus: Corpus, arch: str, extra: List[str] = ()) -> List[str]:
    L, D, H, F = str(opts.layers), str(opts.dim), str(opts.heads), str(opts.ffn)
    return [str(corpus.data_bin), "--task", "syntax_translation", "-s", corpus.src, "-t", corpus.tgt, "--arch", arch,
            "--encoder-layers", L, "--decoder-layers", L, "--encoder-embed-dim", D, "--decoder-embed-dim", D,
            "--encoder-attention-heads", H, "--decoder-attention-heads", H, "--encoder-ffn-embed-dim", F,
            "--decoder-ffn-embed-dim", F, "--seed", str(opts.seed), "--max-tokens", str(opts.max_tokens), *extra]


def model_namespace(opts: BenchOptions, corpus: Corpus, arch: str, extra: List[str] = ()):
    """fairseq-train's flat Namespace of one model's flags (its preset's values filled in)."""
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, model_argv(opts, corpus, arch, extra))


def parse_model_args(opts: BenchOptions, corpus: Corpus, arch: str, extra: List[str] = ()):
    """(the flat Namespace, the config fairseq-train makes of it). The conversion (hydra's compose) takes about half
    a second, so it is done only for the models built, not for reading a preset's values."""
    ns = model_namespace(opts, corpus, arch, extra)
    return ns, convert_namespace_to_omegaconf(ns)


DROPOUTS = ("dropout", "attention_dropout", "activation_dropout")


def _dropouts(ns) -> Tuple[float, ...]:
    return tuple(float(getattr(ns, k, 0.0) or 0.0) for k in DROPOUTS)


def matched_name(drops: Tuple[float, ...]) -> str:
    """e.g. ``transformer[dropout=0.3,attn=0.2,act=0]``."""
    return VANILLA + "[" + ",".join(f"{k}={v:g}" for k, v in zip(("dropout", "attn", "act"), drops)) + "]"


def capped_heads(ns, heads: int) -> Tuple[List[str], List[str]]:
    """(notes, flags) that give a preset whose syntax heads per layer do not fit ``heads`` all of them instead; ``ns``:
    the preset's flat Namespace of the command line."""
    notes, extra = [], []
    for M in MECHANISMS:
        wanted = getattr(ns, f"{M.key}_heads", None)
        if isinstance(wanted, int) and wanted > heads:
            notes.append(f"{M.key} heads {wanted} of the preset > --heads {heads}: capped at {heads}")
            extra += [f"--{M.key}-heads", str(heads)]
    return notes, extra


def plan_models(opts: BenchOptions, corpus: Corpus, archs: List[str]) -> List[dict]:
    """What to build, in row order: the stock vanilla Transformer first; then for each preset, unless
    ``--no-matched-vanilla``, the stock Transformer with the preset's dropout rates (when they differ from
    the stock ones and no earlier row has them), which is the preset's reference, then the preset."""
    stock = _dropouts(model_namespace(opts, corpus, VANILLA))
    plan = [{"name": VANILLA, "arch": VANILLA, "extra": [], "reference": VANILLA, "notes": []}]
    refs = {stock: VANILLA}
    for arch in archs:
        ns = model_namespace(opts, corpus, arch)
        notes, extra = capped_heads(ns, opts.heads)
        drops = _dropouts(ns)
        if opts.no_matched_vanilla:
            ref = VANILLA
        elif drops not in refs:
            ref = refs[drops] = matched_name(drops)
            flags = [x for k, v in zip(DROPOUTS, drops) for x in ("--" + k.replace("_", "-"), f"{v:g}")]
            plan.append({"name": ref, "arch": VANILLA, "extra": flags, "reference": ref,
                         "notes": [f"the stock {VANILLA} with the dropout rates of {arch}: its reference"]})
        else:
            ref = refs[drops]
        plan.append({"name": arch, "arch": arch, "extra": extra, "reference": ref, "notes": notes})
    return plan


def build_models(opts: BenchOptions, corpus: Corpus, archs: List[str]):
    """The task (train and test loaded) and one Bench per planned model (see :func:`plan_models`)."""
    stock = parse_model_args(opts, corpus, VANILLA)  # (Namespace, config): the first row's, too
    _, stock_cfg = stock
    task = tasks.setup_task(stock_cfg.task)
    for split in corpus.splits:
        task.load_dataset(split)
    benches = []
    for item in plan_models(opts, corpus, archs):
        plain = item["arch"] == VANILLA and not item["extra"]
        ns, cfg = stock if plain else parse_model_args(opts, corpus, item["arch"], item["extra"])
        torch.manual_seed(opts.seed)
        try:
            model = task.build_model(cfg.model)
        except ValueError as e:  # e.g. a preset with more syntax heads than --heads
            raise BenchError(f"{item['arch']} at --heads {opts.heads}: {e}") from None
        gen_model = copy.deepcopy(model)  # untrained copy: identical generation in every repetition
        needs = model.syntax_needs() if isinstance(model, SyntaxModel) else FeatureNeeds()
        features = sorted(needs.required | needs.optional)
        notes = [", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in zip(DROPOUTS, _dropouts(ns)))] + item["notes"]
        b = Bench(item["name"], model, gen_model, features, notes, arch=item["arch"], reference=item["reference"])
        b.params = sum(p.numel() for p in model.parameters())
        benches.append(b)
    return task, benches


def make_batches(task, benches: List[Bench], opts: BenchOptions) -> Tuple[list, list]:
    """Training and test batches, collated once with every feature any model requested."""
    max_pos = utils.resolve_max_positions(task.max_positions(), *[b.model.max_positions() for b in benches])
    n_train = opts.warmup + opts.batches
    itr = task.get_batch_iterator(dataset=task.dataset("train"), max_tokens=opts.max_tokens, max_positions=max_pos,
                                  ignore_invalid_inputs=True, required_batch_size_multiple=8, seed=opts.seed,
                                  num_workers=0, epoch=1, disable_iterator_cache=True)
    train = []
    epoch = 1
    while len(train) < n_train:
        for sample in itr.next_epoch_itr(shuffle=True):
            train.append(sample)
            if len(train) == n_train:
                break
        epoch += 1
        if epoch > 50:
            raise BenchError("the training split yields no batches")
        itr = task.get_batch_iterator(dataset=task.dataset("train"), max_tokens=opts.max_tokens,
                                      max_positions=max_pos, ignore_invalid_inputs=True,
                                      required_batch_size_multiple=8, seed=opts.seed, num_workers=0, epoch=epoch,
                                      disable_iterator_cache=True)
    gitr = task.get_batch_iterator(dataset=task.dataset("test"), max_sentences=opts.gen_batch_size,
                                   max_positions=max_pos, ignore_invalid_inputs=True, seed=opts.seed,
                                   num_workers=0, epoch=1, disable_iterator_cache=True)
    test = []
    for sample in gitr.next_epoch_itr(shuffle=True):
        test.append(sample)
        if len(test) == opts.gen_batches:
            break
    return train, test


def for_model(sample: dict, bench: Bench) -> dict:
    """The sample with only the net_input keys this model reads."""
    keep = {"src_tokens", "src_lengths", "prev_output_tokens", *bench.features}
    out = dict(sample)
    out["net_input"] = {k: v for k, v in sample["net_input"].items() if k in keep}
    return out
