"""Syntax on the released multilingual models (issue 51): a tiny pretrained checkpoint of each family, made by stock
fairseq in this process with the family's structure (mBART-50: model ``bart``, arch ``mbart_large``, learned
positions, a layer norm on the embeddings, gelu, ``[en]`` language tokens; M2M-100: ``transformer``, pre-norm, shared
embeddings, sinusoidal positions, ``__en__`` tokens; NLLB-200: ``transformer_12_12``, pre-norm, shared embeddings),
trained by ``translation_multi_simple_epoch`` on three languages with a fixed dictionary. Each method, and one
combination, starts from it through ``syntax_translation_multi_simple_epoch`` + sidecars with the flags read from the
checkpoint (``syntrans.cli.checkpoint_flags``): every pretrained tensor is loaded unchanged and a training step runs;
a flag of the family left out is refused by name. With ``--syntax-start pretrained`` every method and a combination
start from the pretrained model's exact function (step-0 encoder states and decoder log-probs). Each method runs on one
family (rotating, so every family meets several methods, and the no-harm start another family than the papers'), the
combinations on all three. The slow tier runs docs/commands.md's worked example on each: fairseq-train
--finetune-from-model, then stock fairseq-generate."""
import re

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import utils as distributed_utils
from fairseq_cli import train as fairseq_train
from helpers import USER_DIR, logged, run
from multilingual import LANG_PAIRS, LANGS

import syntrans  # noqa: F401  (registers the plugin, NLLB's arch names, and allow-lists fairseq's checkpoint classes)
from syntrans.criterions.syntax_label_smoothed_cross_entropy import SyntaxLabelSmoothedCrossEntropyCriterion
from syntrans.tasks.trained_flags import transformer_flags

pytestmark = pytest.mark.usefixtures("single_threaded_tools")

TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
        "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
        "--decoder-attention-heads", "2"]
#: each family's pretraining flags (its structure at tiny size) and its language-token style
FAMILIES = {
    "mbart50": (["--arch", "mbart_large", "--encoder-normalize-before", "--decoder-normalize-before"],
                ["--lang-tok-style", "mbart"]),
    "m2m100": (["--arch", "transformer", "--encoder-normalize-before", "--decoder-normalize-before",
                "--share-all-embeddings"], []),
    "nllb200": (["--arch", "transformer_12_12"], []),
}
#: the task's flags, the same for pretraining, fine-tuning and generation (as the released models' recipes)
TASK = ["--lang-pairs", LANG_PAIRS, "--langs", ",".join(LANGS), "--encoder-langtok", "src", "--decoder-langtok",
        "--max-source-positions", "64", "--max-target-positions", "64"]
TRAIN = ["--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1000", "--no-epoch-checkpoints", "--num-workers", "0",
         "--seed", "3", "--log-format", "simple", "--dropout", "0", "--attention-dropout", "0"]
#: each method on the tiny model (1+1 layers, 2 heads), and one combination
METHODS = {
    "distance": ["--distance-layers", "0", "--distance-heads", "1"],
    "gated_distance": ["--distance-layers", "0", "--distance-heads", "2", "--gate-layers", "0"],
    "pascal": ["--pascal-layers", "0", "--pascal-heads", "1"],
    "lisa": ["--lisa-layers", "0"],
    "dbsa": ["--dbsa-encoder-layers", "0", "--dbsa-decoder-layers", "0", "--dbsa-heads", "1"],
    "syncattn": ["--dbsa-encoder-layers", "0", "--dbsa-decoder-layers", "0", "--dbsa-heads", "1", "--sync-attn",
                 "--sync-layer", "0"],
    "sla": ["--sla-layers", "0", "--sla-heads", "1", "--sla-token-gate"],
    "nsd": ["--nsd-kind", "dD", "--nsd-src-input", "linear", "--nsd-src-spe", "--nsd-src-output"],
    "labels": ["--labels-input"],
    "pascal+lisa+nsd": ["--pascal-layers", "0", "--pascal-heads", "1", "--lisa-layers", "0", "--nsd-kind", "dD",
                        "--nsd-src-input", "linear", "--nsd-src-output"],
    # the no-harm start's combination: two kinds of heads under the gate's mixer, the decoder's DBSA heads, NSD on
    # both sides (linear and add inputs, both syntactic PEs) and the label input
    "combination": ["--distance-layers", "0", "--distance-heads", "1", "--lisa-layers", "0", "--gate-layers", "0",
                    "--dbsa-decoder-layers", "0", "--nsd-kind", "dD", "--nsd-src-input", "linear", "--nsd-src-spe",
                    "--nsd-src-output", "--nsd-tgt-input", "add", "--nsd-tgt-spe", "--nsd-tgt-output",
                    "--labels-input"],
}
SINGLE = [m for m in METHODS if m not in ("pascal+lisa+nsd", "combination")]
FAMILY_ORDER = sorted(FAMILIES)


def rotation(combination: str, shift: int):
    """(method, family) cases: each single method on one family, in turn (``shift``: where the turn starts), and
    ``combination`` on every family."""
    return ([(m, FAMILY_ORDER[(i + shift) % len(FAMILY_ORDER)]) for i, m in enumerate(SINGLE)]
            + [(combination, f) for f in FAMILY_ORDER])


def train_in_process(argv) -> str:
    args = options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv] + ["--cpu"])
    cfg = convert_namespace_to_omegaconf(args)
    return logged(lambda: distributed_utils.call_main(cfg, fairseq_train.main),
                  ("fairseq_cli.train", "fairseq.trainer", "syntrans"))


@pytest.fixture(scope="module")
def pretrained(multilingual_data, tmp_path_factory):
    """family → its tiny pretrained checkpoint (stock fairseq, one update), each made once when first asked for."""
    done = {}

    def get(family):
        if family not in done:
            save = tmp_path_factory.mktemp(f"pretrained_{family}")
            structure, style = FAMILIES[family]
            train_in_process([multilingual_data, "--task", "translation_multi_simple_epoch", *structure, *TINY,
                              *style, *TASK, *TRAIN, "--criterion", "label_smoothed_cross_entropy", "--max-update",
                              "1", "--save-dir", save, "--disable-validation"])
            done[family] = save / "checkpoint_last.pt"
        return done[family]

    return get


def fine_tune_argv(data, family, checkpoint, save, method, *extra):
    """The fine-tuning command's arguments (docs/commands.md): the checkpoint's own Transformer flags, the method's."""
    return [data, "--user-dir", USER_DIR, "--task", "syntax_translation_multi_simple_epoch", "--arch",
            "syntax_transformer", *transformer_flags(str(checkpoint)), *FAMILIES[family][1], *TASK, *METHODS[method],
            *extra, *TRAIN, "--criterion", "syntax_label_smoothed_cross_entropy", "--label-smoothing", "0.1",
            "--finetune-from-model", checkpoint, "--save-dir", save]


def build(argv):
    """(task, model) as fairseq-train builds them from ``argv`` (the task's checks of the checkpoint included)."""
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), list(map(str, argv))))
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(1)
    return task, task.build_model(cfg.model)


@pytest.mark.parametrize("method, family", rotation("pascal+lisa+nsd", 0))
def test_every_method_starts_from_each_family(family, method, pretrained, multilingual_data, tmp_path):
    """Every tensor of the pretrained model is loaded unchanged (the ``bart`` class's too), the method's own start as
    its mechanism initialises them, and a training step on a batch of three language pairs gives a finite loss."""
    checkpoint = pretrained(family)
    task, model = build(fine_tune_argv(multilingual_data, family, checkpoint, tmp_path, method))
    state = checkpoint_utils.load_checkpoint_to_cpu(str(checkpoint))
    stored = {k: v.clone() for k, v in state["model"].items()}
    model.load_state_dict(state["model"], strict=True, model_cfg=None)
    after = model.state_dict()
    assert set(stored) <= set(after)
    for k in stored:
        assert torch.equal(after[k], stored[k]), k
    task.load_dataset("train")
    ds = task.dataset("train")
    ds.set_epoch(1)
    sample = ds.collater([ds[i] for i in range(0, len(ds), 5)])
    criterion = SyntaxLabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    loss, _, log = criterion(model.train(), sample)
    loss.backward()
    assert torch.isfinite(loss), log
    new = set(after) - set(stored)
    params = dict(model.named_parameters())
    assert all(params[k].grad is not None for k in new if k in params and params[k].requires_grad), new


#: per family, a flag of its structure left out of the fine-tuning command, and what the refusal names
LEFT_OUT = {
    "mbart50": ("--activation-fn", "--activation-fn: checkpoint 'gelu', this run 'relu'"),
    "m2m100": ("--encoder-normalize-before", "--encoder-normalize-before: checkpoint True, this run False"),
    "nllb200": ("--share-all-embeddings", "--share-all-embeddings: checkpoint True, this run False"),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_flag_of_the_family_left_out_is_refused_by_name(family, pretrained, multilingual_data, tmp_path):
    checkpoint = pretrained(family)
    argv = fine_tune_argv(multilingual_data, family, checkpoint, tmp_path, "pascal")
    flag, named = LEFT_OUT[family]
    at = argv.index(flag)
    del argv[at:at + (2 if not argv[at + 1].startswith("--") else 1)]
    with pytest.raises(ValueError) as error:
        build(argv)
    assert named in str(error.value) and str(checkpoint) in str(error.value), error.value


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_worked_example_fine_tunes_and_decodes(family, pretrained, multilingual_data, tmp_path):
    """docs/commands.md's commands at tiny size: the checkpoint's flags, fairseq-train --finetune-from-model with a
    combination started from the pretrained function (--syntax-start pretrained) for a few updates, then stock
    fairseq-generate on en→de with the task's flags."""
    checkpoint = pretrained(family)
    flags = run("python", "-m", "syntrans.cli.checkpoint_flags", checkpoint).split()
    assert flags == transformer_flags(str(checkpoint)), flags
    save = tmp_path / "ft"
    log = run("fairseq-train", *fine_tune_argv(multilingual_data, family, checkpoint, save, "pascal+lisa+nsd",
                                                "--syntax-start", "pretrained", "--max-update", "3",
                                                "--log-interval", "1", "--disable-validation"))
    assert "α = 0: closed" in log and "W = [I, 0]" in log, log[-3000:]
    assert f"loading pretrained model from {checkpoint}" in log, log[-3000:]
    assert "its Transformer flags are this run's" in log, log[-3000:]
    assert len(re.findall(r"train_inner.*lisa=", log)) == 3, log[-3000:]
    out = run("fairseq-generate", multilingual_data, "--user-dir", USER_DIR, "--task",
              "syntax_translation_multi_simple_epoch", *FAMILIES[family][1], *TASK, "-s", "en", "-t", "de",
              "--path", save / "checkpoint_last.pt", "--gen-subset", "test", "--beam", "2", "--max-len-b", "20",
              "--batch-size", "4")
    assert len(re.findall(r"^H-\d+\t", out, flags=re.M)) == 8, out[-2000:]
    assert "BLEU4 = " in out, out[-2000:]
    refuses_the_translator(save / "checkpoint_last.pt", multilingual_data)
    # the same command with --print-syntax: the LISA head's parse of every test sentence, per piece of its source
    # (the language token left out), and the UAS against the pair's gold parses
    printed = run("fairseq-generate", multilingual_data, "--user-dir", USER_DIR, "--task",
                  "syntax_translation_multi_simple_epoch", *FAMILIES[family][1], *TASK, "-s", "en", "-t", "de",
                  "--path", save / "checkpoint_last.pt", "--gen-subset", "test", "--beam", "2", "--max-len-b", "20",
                  "--batch-size", "4", "--print-syntax")
    sources = {int(i): len(line.split()) for i, line in re.findall(r"^S-(\d+)\t(.*)$", printed, flags=re.M)}
    heads = {int(i): len(h.split()) for i, h in re.findall(r"^SH-(\d+)\tlisa@0\t(.*)$", printed, flags=re.M)}
    assert len(heads) == 8 and heads == {i: n - 1 for i, n in sources.items()}, printed[-2000:]  # S-: with __en__
    assert "Syntax test: source lisa@0 word UAS" in printed, printed[-2000:]


def refuses_the_translator(checkpoint, data):
    """The translator writes no language token: it refuses a checkpoint of the multilingual task by name."""
    from syntrans.hub.translator import Translator

    with pytest.raises(ValueError) as error:
        Translator.from_checkpoint(str(checkpoint), str(data), None, parser=None, source_lang="en", target_lang="de")
    message = str(error.value)
    assert str(checkpoint) in message and "language token" in message and "fairseq-generate" in message, message


def test_the_translator_refuses_a_multilingual_checkpoint(pretrained, multilingual_data):
    refuses_the_translator(pretrained("m2m100"), multilingual_data)


def step0_outputs(model, sample, stock: bool):
    """(encoder states (T, B, C), decoder log-probs (B, T, V)) of ``model`` on ``sample`` in evaluation, float32;
    a stock model gets the tokens only."""
    net = sample["net_input"]
    if stock:
        net = {k: net[k] for k in ("src_tokens", "src_lengths", "prev_output_tokens")}
    model.eval()
    with torch.no_grad():
        enc = model.encoder(net["src_tokens"], net["src_lengths"],
                            **{k: v for k, v in net.items() if k not in ("src_tokens", "src_lengths",
                                                                          "prev_output_tokens")})
        out = model(**net)
        return enc["encoder_out"][0], model.get_normalized_probs(out, log_probs=True)


@pytest.fixture(scope="module")
def stock_outputs(pretrained, multilingual_data):
    """(family, task) → (the step-0 outputs of the pretrained model as stock fairseq loads it (its own class:
    ``bart`` for mBART-50) on the valid split of every pair, that batch as ``task`` builds it for its model); each
    family's model loaded once."""
    models = {}

    def get(family, task):
        if family not in models:
            (models[family],), _ = checkpoint_utils.load_model_ensemble([str(pretrained(family))],
                                                                        arg_overrides={"data": str(multilingual_data)})
        model = models[family]
        assert type(model).__name__ == ("BARTModel" if family == "mbart50" else "TransformerModel")
        task.load_dataset("valid")
        ds = task.dataset("valid")
        sample = ds.collater([ds[i] for i in range(len(ds))])
        return step0_outputs(model, sample, stock=True), sample

    return get


def warm_started(family, method, pretrained, multilingual_data, tmp_path, *extra):
    """(task, model, what loading logged) of ``method`` built as fairseq-train builds it with ``extra``, the pretrained
    checkpoint loaded as its trainer loads it."""
    checkpoint = pretrained(family)
    task, model = build(fine_tune_argv(multilingual_data, family, checkpoint, tmp_path, method, *extra))
    state = checkpoint_utils.load_checkpoint_to_cpu(str(checkpoint))["model"]
    log = logged(lambda: model.load_state_dict(state, strict=True, model_cfg=None), ("syntrans",))
    return task, model, log


def differences(ours, theirs):
    return [float((a - b).abs().max()) for a, b in zip(ours, theirs)]


def same(ours, theirs) -> bool:
    """Within 1e-6 relative and absolute in float32 (|a − b| ≤ 1e-6 (1 + |b|)): the split attention runs the heads in
    other matmuls than the stock layer (log-probs of magnitude ~5 differ by up to 2e-6), so not bit for bit."""
    return all(torch.allclose(a, b, rtol=1e-6, atol=1e-6) for a, b in zip(ours, theirs))


def closed_alphas(model):
    """{name: α} of every closed blend of ``model`` (--syntax-start pretrained)."""
    return {k: p for k, p in model.named_parameters() if k.endswith(".alpha")}


@pytest.mark.parametrize("method, family", rotation("combination", 1))
def test_no_harm_start_keeps_the_pretrained_function(family, method, pretrained, stock_outputs, multilingual_data,
                                                      tmp_path):
    """--syntax-start pretrained: every blend starts closed (α = 0, the log says so), the step-0 encoder states and
    decoder log-probs equal the pretrained model's, and a training step reaches every α. In the combination, the
    blends opened (α = 0.5) change the outputs: the comparison sees a start that is not closed."""
    task, model, log = warm_started(family, method, pretrained, multilingual_data, tmp_path,
                                    "--syntax-start", "pretrained")
    alphas = closed_alphas(model)
    assert all(bool((a == 0).all()) for a in alphas.values()), {k: a.tolist() for k, a in alphas.items()}
    if method not in ("dbsa", "syncattn"):  # their U starts as the identity: nothing to close
        assert alphas and "α = 0: closed" in log, log
    theirs, sample = stock_outputs(family, task)
    ours = step0_outputs(model, sample, stock=False)
    assert same(ours, theirs), differences(ours, theirs)
    criterion = SyntaxLabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    loss, _, _ = criterion(model.train(), sample)
    loss.backward()
    assert torch.isfinite(loss) and all(a.grad is not None and torch.isfinite(a.grad).all() for a in alphas.values())
    if method == "combination":
        assert "W = [I, 0]" in log and "E_d = 0" in log, log
        assert any(bool(a.grad.ne(0).any()) for a in alphas.values())
        with torch.no_grad():
            for a in alphas.values():
                a.fill_(0.5)
        opened = step0_outputs(model, sample, stock=False)
        assert not same(opened, theirs)


@pytest.mark.parametrize("start", ["paper", "pretrained"])
def test_the_papers_start_is_the_default(start, pretrained, stock_outputs, multilingual_data, tmp_path):
    """Without the option PASCAL's heads attend otherwise from the first step (the papers' start, as before the
    option); with it they do not. The same family as the no-harm case of PASCAL."""
    family = dict(rotation("combination", 1))["pascal"]
    extra = ["--syntax-start", "pretrained"] if start == "pretrained" else []
    task, model, _ = warm_started(family, "pascal", pretrained, multilingual_data, tmp_path, *extra)
    assert model.cfg.syntax_start == start and bool(closed_alphas(model)) == (start == "pretrained")
    theirs, sample = stock_outputs(family, task)
    assert same(step0_outputs(model, sample, stock=False), theirs) == (start == "pretrained")


def test_a_start_that_cannot_be_neutral_is_refused(pretrained, multilingual_data, tmp_path):
    argv = fine_tune_argv(multilingual_data, "m2m100", pretrained("m2m100"), tmp_path, "nsd", "--nsd-src-input",
                          "concat", "--syntax-start", "pretrained")
    with pytest.raises(ValueError, match="--nsd-src-input concat cannot start from the pretrained model"):
        build(argv)



@pytest.mark.parametrize("override", ["arch", "_name"])
def test_generation_refuses_an_override_of_the_architecture(pretrained, multilingual_data, override):
    """fairseq-generate --model-overrides "{'arch': …}" with the multilingual task: the checkpoint decides the
    architecture; the override is refused by name before fairseq builds another model class from it."""
    import ast

    from fairseq import checkpoint_utils

    checkpoint = pretrained("m2m100")
    text = "{'%s': 'syntax_transformer'}" % override
    argv = [str(multilingual_data), "--user-dir", USER_DIR, "--task", "syntax_translation_multi_simple_epoch", *TASK,
            "-s", "en", "-t", "de", "--path", str(checkpoint), "--model-overrides", text]
    task = tasks.setup_task(options.parse_args_and_arch(options.get_generation_parser(), argv))
    with pytest.raises(ValueError, match=rf"--model-overrides '{override}': the checkpoint decides the architecture"):
        checkpoint_utils.load_model_ensemble([str(checkpoint)], arg_overrides=ast.literal_eval(text), task=task)
