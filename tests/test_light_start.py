"""Commands start like good command-line tools: `--help` and the commands that train nothing do not import fairseq (nor
torch, for --help), print nothing of fairseq's or hydra's; the plugin still registers its fairseq classes whichever of
syntrans and fairseq is imported first. Each check runs in a fresh interpreter: this test process has fairseq loaded."""
import configparser
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TIMEOUT = 300


def _python(code: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "default"}  # show every warning, as a user's -W default would
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=TIMEOUT,
                          cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _commands():
    """console script name → module, from the installed package's entry points (what setup.py declares)."""
    from importlib.metadata import distribution
    parser = configparser.ConfigParser()
    parser.read_string(distribution("syntrans").read_text("entry_points.txt"))
    return {name: target.split(":")[0] for name, target in parser["console_scripts"].items()}


COMMANDS = _commands()
HELP_PROBE = """
import contextlib, io, json, sys
import importlib
module = importlib.import_module(sys.argv[1])
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = module.main(["--help"])
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "help": out.getvalue(),
                  "loaded": [m for m in ("fairseq", "torch", "stanza", "hydra") if m in sys.modules]}))
"""


def test_every_command_is_probed():
    assert len(COMMANDS) >= 9 and "syntrans-parse" in COMMANDS


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_imports_neither_fairseq_nor_torch(command):
    done = _python(HELP_PROBE, COMMANDS[command])
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["code"] in (0, None) and probe["help"].startswith(f"usage: {command}"), probe
    assert probe["loaded"] == [], f"{command} --help imported {probe['loaded']}"
    assert done.stderr == "", done.stderr


@pytest.mark.parametrize("command", ["syntrans-parse", "syntrans-preprocess", "syntrans-translate"])
def test_console_script_help_is_quiet(command):
    done = subprocess.run([str(BIN / command), "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0 and done.stdout.startswith(f"usage: {command}") and done.stderr == "", done.stderr


def test_preprocess_help_names_fairseqs_options_and_lists_ours():
    probe = json.loads(_python(HELP_PROBE, "syntrans.cli.preprocess").stdout.strip().splitlines()[-1])
    assert "--trainparse" in probe["help"] and "--binarize-trees" in probe["help"]
    assert "every option of fairseq-preprocess" in probe["help"]


def test_parse_synth_and_plot_sentence_run_without_fairseq(tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("the cat sat .\na dog ran home .\n", encoding="utf-8")
    done = _python(
        "import sys\n"
        "from syntrans.cli.parse import main as parse\n"
        "from syntrans.cli.synth import main as synth\n"
        "assert parse([sys.argv[1], '-o', sys.argv[2], '--parser', 'right-branching']) == 0\n"
        "assert synth(['--out-dir', sys.argv[3], '--train', '5', '--valid', '2', '--test', '2']) == 0\n"
        "from syntrans.cli.plot import main as plot\n"
        "assert plot(['sentence', 'the cat sat .', '--parser', 'right-branching', '--out', sys.argv[4]]) == 0\n"
        "print('fairseq' in sys.modules)\n",
        str(text), str(tmp_path / "out.conllu"), str(tmp_path / "synth"), str(tmp_path / "sentence.png"))
    assert done.stdout.strip().splitlines()[-1] == "False"
    assert (tmp_path / "out.conllu").read_text(encoding="utf-8").count("# line = ") == 2
    assert (tmp_path / "synth" / "train.src.conllu").is_file() and (tmp_path / "sentence.png").stat().st_size > 0


def test_prepare_steps_before_binarizing_do_not_import_fairseq(tmp_path):
    """syntrans-prepare's extract, tokenize, BPE and parse steps run; its binarize step is replaced by a probe."""
    done = _python(
        "import sys\n"
        "import syntrans.prep.pipeline as pipeline\n"
        "def probe(*args, **kwargs):\n"
        "    print('fairseq loaded at binarize:', 'fairseq' in sys.modules)\n"
        "    raise SystemExit(0)\n"
        "pipeline.run_binarize = probe\n"
        "from syntrans.cli.prepare import main\n"
        "main(['synthetic', '--out', sys.argv[1], '--smoke', '--parser', 'right-branching'])\n",
        str(tmp_path / "prep"))
    assert "fairseq loaded at binarize: False" in done.stdout, done.stdout + done.stderr
    assert list((tmp_path / "prep").rglob("*.conllu")), "the parse step did not run"


REGISTERED = ("from fairseq.models import ARCH_MODEL_REGISTRY\n"
              "from fairseq.tasks import TASK_REGISTRY\n"
              "import logging\n"
              "root = logging.getLogger()\n"
              "print('distance_transformer_iwslt_de_en' in ARCH_MODEL_REGISTRY, 'syntax_translation' in TASK_REGISTRY,"
              " root.level, len(root.handlers))\n")


@pytest.mark.parametrize("first", [
    "import fairseq\nimport syntrans\n",  # fairseq-train --user-dir: fairseq is there first
    "import syntrans\nimport fairseq\n",  # a syntrans command, or Python code importing syntrans first
    # a syntrans module imports fairseq half-way through its own import: registration waits for it to finish
    "import syntrans\nfrom syntrans.modules.syntax_attention import SyntaxMultiheadAttention\n",
    "import syntrans.cli.translate\nfrom syntrans.hub.translator import Translator\n",
])
def test_plugin_registers_whichever_is_imported_first(first):
    done = _python(first + REGISTERED)
    registered_arch, registered_task, *_ = done.stdout.split()
    assert (registered_arch, registered_task) == ("True", "True"), done.stdout + done.stderr


def test_fairseq_imported_after_syntrans_leaves_logging_alone():
    """fairseq's import alone sets the root logger to DEBUG with a handler and logs 'Please install tensorboardX';
    imported after syntrans it does neither (and the same probe without syntrans shows that it would)."""
    ours = _python("import syntrans\nimport fairseq\n" + REGISTERED)
    assert ours.stdout.split()[2:] == ["30", "0"] and "tensorboardX" not in ours.stderr, ours.stdout + ours.stderr
    plain = _python("import fairseq\nimport logging\nr = logging.getLogger()\nprint(r.level, len(r.handlers))\n")
    assert plain.stdout.split() != ["30", "0"] or "tensorboardX" in plain.stderr, "fairseq no longer needs the roll-back"


HYDRA = ("import sys\n"
         "if sys.argv[1] == 'cli':\n"
         "    import syntrans.cli\n"
         "import syntrans\n"
         "from fairseq import options\n"
         "from fairseq.dataclass.utils import convert_namespace_to_omegaconf\n"
         "parser = options.get_training_parser()\n"
         "args = options.parse_args_and_arch(parser, ['data', '--task', 'translation', '--arch', 'transformer'])\n"
         "convert_namespace_to_omegaconf(args)\n")


def test_commands_hide_hydras_deprecation_warnings():
    plain = _python(HYDRA, "plain", cwd=ROOT)
    assert "UserWarning" in plain.stderr, "fairseq's hydra calls no longer warn: drop the filter in syntrans/cli"
    ours = _python(HYDRA, "cli", cwd=ROOT)
    assert ours.stderr == "", ours.stderr


def test_syntax_package_imports_a_functions_module_on_first_use():
    done = _python("import sys\n"
                   "import syntrans.syntax as s\n"
                   "before = 'syntrans.syntax.masks' in sys.modules or 'torch' in sys.modules\n"
                   "from syntrans.syntax import subword_gaps\n"
                   "gaps = subword_gaps([2], [2, 1])  # a word of two pieces, then one of one\n"
                   "print(before, 'syntrans.syntax.masks' in sys.modules, 'torch' in sys.modules, "
                   "s.local_range_mask.__module__, s.nsd.__module__, gaps == [1, 3, 2000])\n")
    assert done.stdout.split() == ["False", "False", "False", "syntrans.syntax.masks", "syntrans.syntax.nsd_labels", "True"]


def test_tree_distances_imports_trees_alone():
    """docs/layout.md: `from syntrans.syntax import tree_distances` imports trees.py alone of the package."""
    done = _python("import sys\nfrom syntrans.syntax import tree_distances\n"
                   "print(sorted(m for m in sys.modules if m.startswith('syntrans.syntax')))\n")
    assert done.stdout.strip() == "['syntrans.syntax', 'syntrans.syntax.trees']"


def test_register_registers_explicitly():
    """Registering (what fairseq-train --user-dir does) does not import stanza (half a second at every start; a
    training reads its trees as sidecars); stanza's tree classes are imported when a tree is first read."""
    done = _python("import syntrans\nsyntrans.register()\nimport sys\n"
                   "from fairseq.models import ARCH_MODEL_REGISTRY\n"
                   "print('pascal_transformer_wmt_en_de' in ARCH_MODEL_REGISTRY, 'stanza' in sys.modules)\n"
                   "from syntrans.syntax.trees import as_tree, is_stanza_tree\n"
                   "tree = as_tree('(S (NP a) (VP b))')\n"
                   "print(is_stanza_tree(tree), 'stanza' in sys.modules, tree.leaf_labels())\n")
    assert done.stdout.split("\n")[-3:] == ["True False", "True True ['a', 'b']", ""], done.stdout


def test_pytest_hides_foreign_warnings_and_shows_ours():
    """pyproject.toml's filterwarnings: hydra's deprecation warnings are hidden in the tests, a warning of ours is not."""
    import warnings
    with warnings.catch_warnings(record=True) as seen:
        warnings.warn_explicit("hydra.experimental.compose() is no longer experimental", UserWarning, "compose.py", 25,
                               module="hydra.experimental.compose")
        warnings.warn_explicit("something of ours", UserWarning, "x.py", 1, module="syntrans.models.layers")
    assert [str(w.message) for w in seen] == ["something of ours"]
