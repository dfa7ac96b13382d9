"""Warm start (issue 41): every preset starts from a stock fairseq Transformer checkpoint (``fairseq-train --arch
transformer``): every stock tensor loaded, every tensor the method adds as the freshly built model holds it (each with
how it starts), both lists logged; a checkpoint whose Transformer differs (norm placement, shared embeddings, sizes) is
refused, naming the flag. With its heads switched off a parameter-free method gives the stock model's loss exactly.

One tiny stock checkpoint per shape (fairseq's own post-norm Transformer, and the shape of today's pretrained
encoder-decoders: pre-norm, a layer norm on the embeddings, learned positions, shared embeddings), trained for one
update in this process by fairseq-train's own ``main``. Every preset starts from the second; fairseq's own shape
starts one preset of each kind (new parameters, none, shared embeddings it cannot give). The presets are built in
this process the way fairseq-train builds them (the task's checks of the checkpoint included) and load the checkpoint
as fairseq's trainer does; both routes of fairseq-train (``--restore-file`` with the ``--reset-*`` flags, in this
process, and ``--finetune-from-model`` followed by fairseq-generate, in their own processes: the slow tier) run end to
end.
"""
import re

import helpers
import pytest
import torch
from fairseq import checkpoint_utils, options
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import utils as distributed_utils
from fairseq.models import ARCH_MODEL_REGISTRY
from fairseq_cli import train as fairseq_train
from helpers import SMALL, build_task_and_model, first_batch, generate, metric_lines, run, tiny_train_argv

import syntrans  # noqa: F401  (registers the plugin and allow-lists fairseq's checkpoint classes)
from syntrans.criterions.syntax_label_smoothed_cross_entropy import SyntaxLabelSmoothedCrossEntropyCriterion
from syntrans.models.syntax_transformer import SyntaxTransformerModel
from syntrans.models.warm_start import UNSTATED, collapse_layers, syntax_additions

pytestmark = pytest.mark.usefixtures("single_threaded_tools")  # conftest

#: the stock Transformer shapes: fairseq's default (post-norm), and today's pretrained encoder-decoders'
SHAPES = {
    "post_norm": [],
    "pre_norm": ["--encoder-normalize-before", "--decoder-normalize-before", "--layernorm-embedding",
                 "--encoder-learned-pos", "--decoder-learned-pos", "--share-all-embeddings"],
}
PRESETS = sorted(a for a, m in ARCH_MODEL_REGISTRY.items() if m is SyntaxTransformerModel)
#: what a preset needs on the SMALL model (4 heads)
PRESET_FLAGS = {"pascal_transformer_wmt_en_de": ["--pascal-heads", "2"]}
#: presets that share the embeddings, which a stock Transformer of unshared ones cannot give them
SHARING = {"gated_distance_transformer_iwslt_de_en", "sla_transformer_iwslt_de_en"}
#: presets that add no parameter, and the flag that switches their heads off
PARAMETER_FREE = {"distance_transformer_iwslt_de_en": ["--distance-layers", ""],
                  "pascal_transformer_iwslt_de_en": ["--pascal-layers", ""]}
#: the presets also started from fairseq's default shape: new parameters in both sides, none, shared embeddings
POST_NORM_PRESETS = ("dbsa_transformer_wmt_en_de", "distance_transformer_iwslt_de_en",
                     "gated_distance_transformer_iwslt_de_en")
RESETS = ["--reset-optimizer", "--reset-meters", "--reset-dataloader", "--reset-lr-scheduler"]


def logged(fn, names=("fairseq_cli.train", "fairseq.trainer", "fairseq.logging.progress_bar", "syntrans")) -> str:
    """What the loggers ``names`` log at INFO while ``fn`` runs, one '| name | message' line per record (fairseq's
    progress bar names each record after its tag: ``train_inner`` for an update)."""
    return helpers.logged(fn, names)


def train_in_process(argv) -> str:
    """fairseq-train's own ``main`` on ``argv`` in this process (CPU); returns what it logged."""
    args = options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv] + ["--cpu"])
    cfg = convert_namespace_to_omegaconf(args)
    return logged(lambda: distributed_utils.call_main(cfg, fairseq_train.main))


@pytest.fixture(scope="module")
def stock(tiny_data, tmp_path_factory):
    """shape → the checkpoint of a stock fairseq Transformer of that shape (``--task translation --arch
    transformer``, fairseq's criterion), trained for one update; each trained once, when first asked for."""
    done = {}

    def get(shape):
        if shape not in done:
            save = tmp_path_factory.mktemp(f"stock_{shape}")
            train_in_process([tiny_data, "--task", "translation", "--arch", "transformer", *SMALL, *SHAPES[shape],
                              "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                              "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1000", "--max-update", "1",
                              "--save-dir", save, "--no-epoch-checkpoints", "--num-workers", "0",
                              "--disable-validation", "--seed", "3", "--log-format", "simple"])
            done[shape] = save / "checkpoint_last.pt"
            assert done[shape].is_file()
        return done[shape]

    return get


def warm_model(data, stock_path, save, arch, *flags):
    """(task, model, log) of preset ``arch`` built as fairseq-train --finetune-from-model ``stock_path`` builds it
    (the task's checks of the checkpoint run), before loading."""
    out = {}

    def build():
        out["task"], out["model"] = build_task_and_model(data, arch, *map(str, flags), "--finetune-from-model", str(stock_path),
                                                         "--save-dir", str(save))

    log = logged(build)
    return out["task"], out["model"], log


def load_as_trainer(model, path):
    """The checkpoint's model state loaded as fairseq's trainer loads it (strictly, after the model's upgrade);
    returns (the state as read, what was logged)."""
    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    stored = {k: v.clone() for k, v in state["model"].items()}
    log = logged(lambda: model.load_state_dict(state["model"], strict=True, model_cfg=None))
    return stored, log


# ------------------------------------------------------------------------------------------------ every preset

@pytest.mark.parametrize("arch, shape", [(arch, "pre_norm") for arch in PRESETS] + [
    (arch, "post_norm") for arch in POST_NORM_PRESETS])
def test_every_preset_starts_from_a_stock_checkpoint(arch, shape, stock, tiny_data, tmp_path):
    """Every stock tensor is loaded unchanged, every tensor the method adds keeps the value the freshly built model
    gave it (its mechanism's initialisation, stated for each), and the log lists both."""
    flags = [*SHAPES[shape], *PRESET_FLAGS.get(arch, [])]
    if arch in SHARING and "--share-all-embeddings" not in flags:
        with pytest.raises(ValueError, match=r"--share-all-embeddings: checkpoint False, this run True"):
            warm_model(tiny_data, stock(shape), tmp_path, arch, *flags)
        return
    _, model, build_log = warm_model(tiny_data, stock(shape), tmp_path, arch, *flags)
    fresh = {k: v.clone() for k, v in model.state_dict().items()}
    additions = syntax_additions(model)
    assert all(note != UNSTATED and ("ours" in note or "Hou et al." in note) for note in additions.values()), additions
    stored, log = load_as_trainer(model, stock(shape))

    after = model.state_dict()
    new = set(after) - set(stored)
    assert new == set(additions), (sorted(new), sorted(additions))
    for k in new:
        assert torch.equal(after[k], fresh[k]), k
    for k in set(after) & set(stored):
        assert torch.equal(after[k], stored[k].to(after[k].dtype)), k
    unused = set(stored) - set(after)
    assert not unused, unused

    assert "a checkpoint of a transformer model: its Transformer flags are this run's" in build_log, build_log
    if not new:
        assert f"all {len(stored)} of its tensors are this model's" in build_log, build_log
        assert "warm start" not in log, log
        return
    assert (f"{len(new)} tensors of this model are not in it" if len(new) > 1 else
            "1 tensor of this model is not in it") in build_log, build_log
    assert f"{len(stored)} tensors loaded from it, {len(new)} new" in log, log
    layers = re.compile(r"\.layers\.(\d+|\[[0-9,\-]+\])\.")
    lines = [layers.sub(".layers.*.", x) for x in log.splitlines() if "warm start: new " in x]
    for k in new:  # each new tensor on the 'new' line of its module (layers collapsed), with its shape and its start
        module, _, name = k.rpartition(".")
        assert any(f"warm start: new {layers.sub('.layers.*.', module + '.').rstrip('.')}: " in x
                   and f" {name} {tuple(after[k].shape)}" in x and x.endswith(additions[k]) for x in lines), (k, log)
    for side in ("encoder", "decoder"):
        keys = [k for k in stored if k.startswith(side + ".")]
        assert f"warm start: loaded {side} ({len(keys)} tensors): {', '.join(collapse_layers(keys, side))}" in log


# ------------------------------------------------------------------------------------------------ mismatches

@pytest.mark.parametrize("shape, flags, named", [
    ("pre_norm", ["--decoder-normalize-before", "--layernorm-embedding", "--encoder-learned-pos", "--decoder-learned-pos",
                  "--share-all-embeddings"], "--encoder-normalize-before: checkpoint True, this run False"),
    ("post_norm", ["--encoder-attention-heads", "8"], "--encoder-attention-heads: checkpoint 4, this run 8"),
    ("post_norm", ["--encoder-layers", "3"], "--encoder-layers: checkpoint 2, this run 3"),
])
def test_a_checkpoint_of_another_transformer_is_refused(shape, flags, named, stock, tiny_data, tmp_path):
    """A stock checkpoint whose Transformer differs from the run's: the error names the flag and both values, before
    fairseq's 'please ensure that the architectures match'; what the state dict cannot show (norm placement, heads)
    included."""
    with pytest.raises(ValueError) as error:
        warm_model(tiny_data, stock(shape), tmp_path, "lisa_transformer_wmt_en_de", *flags)
    assert named in str(error.value) and str(stock(shape)) in str(error.value), error.value


def test_a_stock_tensor_of_another_shape_is_named(stock, tiny_data, tmp_path):
    """Where only the state dict is seen (a checkpoint whose config does not say it: the load itself), a stock
    tensor of another shape stops the warm start with its name, both shapes and the likely flag."""
    _, model = build_task_and_model(tiny_data, "lisa_transformer_wmt_en_de", "--encoder-ffn-embed-dim", "48")
    with pytest.raises(ValueError, match=r"encoder\.layers\.0\.fc1\.weight checkpoint \(64, 32\), model \(48, 32\) "
                                         r"\(--encoder-ffn-embed-dim\)"):
        load_as_trainer(model, stock("post_norm"))


def test_a_model_built_from_a_checkpoint_does_not_warm_start(stock, tiny_data, tmp_path):
    """A model built from a checkpoint (fairseq-generate, syntrans-translate) loads only a checkpoint that has all its
    tensors: one without its syntax tensors is fairseq's strict error there, never a model with random syntax."""
    task, model, _ = warm_model(tiny_data, stock("post_norm"), tmp_path, "lisa_transformer_wmt_en_de")
    assert model.warm_start_allowed
    loaded = task.build_model(model.cfg, from_checkpoint=True)
    assert not loaded.warm_start_allowed
    with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict: \"encoder\.layers\.0\.self_attn\.lisa\.U\""):
        load_as_trainer(loaded, stock("post_norm"))


# ------------------------------------------------------------------------------------------------ the stock loss

@pytest.mark.parametrize("arch, shape", [("distance_transformer_iwslt_de_en", "post_norm"),
                                         ("distance_transformer_iwslt_de_en", "pre_norm"),
                                         ("pascal_transformer_iwslt_de_en", "pre_norm")])
def test_parameter_free_method_with_heads_off_gives_the_stock_loss(arch, shape, stock, tiny_data, tmp_path):
    """A parameter-free preset started from a stock checkpoint with its heads switched off computes the stock
    model's loss bit for bit (fairseq's model and criterion against ours, on the same batch); with its heads on it
    loads the same tensors and computes another."""
    (stock_model,), _ = checkpoint_utils.load_model_ensemble([str(stock(shape))], arg_overrides={"data": str(tiny_data)})
    flags = [*SHAPES[shape], *PRESET_FLAGS.get(arch, [])]
    losses = {}
    for heads in ("off", "on"):
        task, model, _ = warm_model(tiny_data, stock(shape), tmp_path / heads, arch, *flags,
                                    *(PARAMETER_FREE[arch] if heads == "off" else []))
        load_as_trainer(model, stock(shape))
        sample = first_batch(task, "valid", 16)
        with torch.no_grad():
            ours = SyntaxLabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
            losses[heads] = ours(model.eval(), sample)[0]
            if heads == "off":
                stock_sample = {**sample, "net_input": {k: sample["net_input"][k]
                                                        for k in ("src_tokens", "src_lengths", "prev_output_tokens")}}
                theirs = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
                losses["stock"] = theirs(stock_model.eval(), stock_sample)[0]
    assert torch.equal(losses["off"], losses["stock"]), losses
    assert not torch.equal(losses["on"], losses["stock"]), losses


# ------------------------------------------------------------------------------------------------ fairseq-train's routes

def test_restore_file_route_with_resets(stock, tiny_data, tmp_path):
    """fairseq-train --restore-file STOCK --reset-optimizer --reset-meters --reset-dataloader --reset-lr-scheduler
    (fairseq's own main, in this process): the DBSA preset (pre-norm shape) starts from the stock checkpoint at update
    0, lists its new tensors and trains."""
    log = train_in_process(tiny_train_argv(tiny_data, tmp_path, "--arch", "dbsa_transformer_wmt_en_de",
                                           *SHAPES["pre_norm"], "--restore-file", stock("pre_norm"), *RESETS,
                                           "--lr", "1e-3", "--max-update", "2", "--disable-validation",
                                           "--log-interval", "1"))
    assert "a checkpoint of a transformer model: its Transformer flags are this run's; 2 tensors" in log, log
    assert "warm start: new encoder.layers.0.self_attn.q_proj: U (1, 8, 8): the identity per head" in log, log
    assert "warm start: new decoder.layers.0.self_attn.q_proj: U (1, 8, 8): the identity per head" in log, log
    assert re.search(r"Loaded checkpoint \S*checkpoint_last\.pt \(epoch 1 @ 0 updates\)", log), log
    assert len(metric_lines(log, "train_inner")) == 2, log


@pytest.mark.slow
def test_finetune_from_a_stock_checkpoint_and_decode(stock, tiny_data, tmp_path):
    """fairseq-train --finetune-from-model STOCK with LISA on (the pre-norm shape of today's pretrained models)
    trains a few updates, then fairseq-generate decodes the test split with the fine-tuned model."""
    save = tmp_path / "ckpt"
    log = run("fairseq-train", *tiny_train_argv(tiny_data, save, "--arch", "lisa_transformer_iwslt_de_en",
                                                *SHAPES["pre_norm"], "--finetune-from-model", stock("pre_norm"),
                                                "--lr", "1e-3", "--max-update", "3", "--log-interval", "1"))
    assert f"loading pretrained model from {stock('pre_norm')}" in log, log[-3000:]
    assert "warm start: new encoder.layers.0.self_attn.lisa: U (9, 8): Xavier-uniform" in log, log[-3000:]
    assert "warm start: loaded encoder (" in log and "warm start: loaded decoder (" in log, log[-3000:]
    lines = metric_lines(log, "train_inner")
    assert len(lines) == 3 and all("lisa=" in x for x in lines), lines
    out = generate(tiny_data, save / "checkpoint_last.pt")
    assert len(re.findall(r"^H-\d+\t", out, flags=re.M)) == 40, out[-2000:]
    assert "BLEU4 = " in out, out[-2000:]

