"""House rules of the package's layering, checked on the source of every .py file under syntrans/ with ``ast``
(nothing is imported, so a broken package still gets its report):

* only ``syntrans/cli/`` imports ``syntrans.cli`` (the command lines sit on top; nothing below reaches up);
* ``syntrans/modules/`` (the layers) imports nothing of ``syntrans.data`` (the datasets);
* ``syntrans/syntax/`` (pure tree and array code) imports no fairseq;
* the floors of the model: ``syntrans/modules/`` (attention and its blocks' interface) imports neither
  ``syntrans.mechanisms`` nor ``syntrans.models``; ``syntrans/mechanisms/`` (one module per method) imports no
  ``syntrans.models``;
* no upward import: every package of syntrans stands on a floor of :data:`FLOORS` and imports (at the top of a module
  or inside a function) only its own package and the packages of lower floors, so no import hidden in a function
  closes a loop between packages (a function-level import that only defers a heavy library, fairseq, torch or stanza,
  names no syntrans package and is not concerned);
* nothing assigns ``__class__`` (no swapping the class of a live object);
* a method is named in at most five core files (its own module, its presets, the registry, and where another
  method builds on it), and the files that loop over mechanisms name none.

Imports count at any nesting level (inside functions, ``if TYPE_CHECKING:`` blocks, ``try:``), relative ones resolved
against the module's own name the way Python does; constant-name ``importlib.import_module``/``__import__`` calls count
too. Each failure names the file and line. The rule checkers are also run on small synthetic sources, one that breaks
each rule and ones that do not, so a rule that could never fail is caught."""
import ast
import functools
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "syntrans"
FAIRSEQ = ("fairseq", "fairseq_cli")  # the top-level packages of the fairseq distribution


def within(name: str, package: str) -> bool:
    """``name`` is ``package`` or one of its submodules (``syntrans.client`` is not within ``syntrans.cli``)."""
    return name == package or name.startswith(package + ".")


def module_of(path: Path, root: Path = ROOT):
    """(dotted module name, is a package) of a source file: syntrans/a/b.py → syntrans.a.b; syntrans/a/__init__.py →
    syntrans.a, a package."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def resolve(module: str, is_package: bool, level: int, name):
    """The absolute name of ``from <level dots><name> import …`` written in ``module``
    (importlib.util.resolve_name's rule: the dots count from the module's package)."""
    if not level:
        return name
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level > len(package):
        raise ImportError(f"{module}: relative import with {level} dots goes beyond the top-level package")
    base = ".".join(package[:len(package) - level + 1])
    return f"{base}.{name}" if name else base


def _dynamic_import(node: ast.Call):
    """The constant module name of ``importlib.import_module("x")``, ``import_module("x")`` or ``__import__("x")``
    (with the ``package`` argument when given), else None."""
    f = node.func
    callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if callee not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    return first.value


def imports(tree: ast.AST, module: str, is_package: bool):
    """(node, absolute names) for every import in ``tree``, at any depth. ``from X import a`` names X and X.a (``a``
    may be a submodule: ``from .. import cli``); ``import a.b.c`` names a.b.c."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield node, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(module, is_package, node.level, node.module)
            yield node, [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Call):
            name = _dynamic_import(node)
            if name is not None:
                if name.startswith("."):  # relative: import_module(".x", __package__); resolved against this module
                    level = len(name) - len(name.lstrip("."))
                    name = resolve(module, is_package, level, name[level:] or None)
                yield node, [name]


def _assigned_targets(target):
    if isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _assigned_targets(elt)
    elif isinstance(target, ast.Starred):
        yield from _assigned_targets(target.value)
    else:
        yield target


def class_assignments(tree: ast.AST):
    """Nodes that set some object's ``__class__``: ``x.__class__ = C`` (also in tuple targets, annotated or augmented)
    and ``setattr(x, "__class__", C)`` / ``object.__setattr__(x, "__class__", C)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets for t in _assigned_targets(target)]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = list(_assigned_targets(node.target))
        elif isinstance(node, ast.Call):
            f = node.func
            callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if (callee in ("setattr", "__setattr__") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value == "__class__"):
                yield node
            continue
        else:
            continue
        if any(isinstance(t, ast.Attribute) and t.attr == "__class__" for t in targets):
            yield node


def _import_rule(applies, forbidden, what):
    def check(tree, module, is_package):
        if not applies(module):
            return
        for node, names in imports(tree, module, is_package):
            bad = next((n for n in names if forbidden(n)), None)
            if bad is not None:
                yield node, f"imports {bad} ({what})"
    return check


#: the packages of syntrans from the ground up: a module imports its own package and those of lower floors, none of
#: its own floor or above. A name is on the floor of its longest entry.
FLOORS = (
    ("syntrans.atomic_write",),  # writing a file whole or not at all (standard library only)
    # checkpoint files (loading, averaging; what reads a model's config is passed in from above)
    ("syntrans.lazy_exports", "syntrans.quiet_import", "syntrans.sides", "syntrans.jobs", "syntrans.checkpoints"),
    ("syntrans.syntax", "syntrans.modules", "syntrans.criterions"),  # pure algorithms; the attention; the loss
    ("syntrans.synth", "syntrans.data", "syntrans.generation"),  # sidecars, views of a parse, features; decoding
    ("syntrans.mechanisms", "syntrans.parsing", "syntrans.tasks"),  # one module per method; the parsers; the task
    ("syntrans.models", "syntrans.prep"),  # the model; corpus preparation (parses through the parsers and jobs)
    ("syntrans.plots", "syntrans.hub"),  # figures and the translation API, on trained models
    ("syntrans.reproduce",),  # the papers' tables: configs, data recipes, runs, figures
    ("syntrans.plugin",),  # what fairseq registers
    ("syntrans.bench",),
    ("syntrans.cli",),  # the commands, on top
)


def floor_of(name: str):
    """The floor of :data:`FLOORS` a module name stands on (its longest entry), or None outside them."""
    best = max(((len(entry), i) for i, floor in enumerate(FLOORS) for entry in floor if within(name, entry)),
               default=None)
    return None if best is None else best[1]


def _package_of(name: str):
    """The entry of :data:`FLOORS` that holds ``name`` (its longest), or None."""
    return max((entry for floor in FLOORS for entry in floor if within(name, entry)), key=len, default=None)


def _upward_rule(tree, module, is_package):
    here = floor_of(module)
    if here is None:  # the package's root (``syntrans/__init__.py``) sits above all floors
        return
    for node, names in imports(tree, module, is_package):
        for name in names:
            there = floor_of(name)
            if there is None or _package_of(name) == _package_of(module):
                continue  # not syntrans (or its root, named only to reach a submodule), or its own package
            if there >= here:
                yield node, (f"imports {name} (floor {there}, {'the same floor as' if there == here else 'above'} "
                             f"{module} on floor {here}: no upward import)")
                break


def _class_rule(tree, module, is_package):
    for node in class_assignments(tree):
        yield node, "assigns __class__"


RULES = {
    "cli_only_from_cli": _import_rule(lambda m: not within(m, "syntrans.cli"), lambda n: within(n, "syntrans.cli"),
                                      "only syntrans/cli/ may import syntrans.cli"),
    "modules_not_data": _import_rule(lambda m: within(m, "syntrans.modules"), lambda n: within(n, "syntrans.data"),
                                     "syntrans/modules/ may not import syntrans.data"),
    "syntax_without_fairseq": _import_rule(lambda m: within(m, "syntrans.syntax"),
                                           lambda n: any(within(n, f) for f in FAIRSEQ),
                                           "syntrans/syntax/ may not import fairseq"),
    "modules_below_mechanisms": _import_rule(lambda m: within(m, "syntrans.modules"),
                                             lambda n: within(n, "syntrans.mechanisms") or within(n, "syntrans.models"),
                                             "syntrans/modules/ may not import syntrans.mechanisms or syntrans.models"),
    "mechanisms_below_models": _import_rule(lambda m: within(m, "syntrans.mechanisms"),
                                            lambda n: within(n, "syntrans.models"),
                                            "syntrans/mechanisms/ may not import syntrans.models"),
    "no_upward_import": _upward_rule,
    "no_class_assignment": _class_rule,
}


def violations(rule: str, source: str, module: str, is_package: bool = False, filename: str = "<string>", tree=None):
    """'file:line: what' for each statement of ``source`` (the text of ``module``; ``tree``: its parse) that breaks
    ``rule``."""
    tree = tree or ast.parse(source, filename)
    out = []
    for node, what in RULES[rule](tree, module, is_package):
        text = (ast.get_source_segment(source, node) or "").strip().splitlines()
        out.append(f"{filename}:{node.lineno}: {what}: {text[0] if text else ''}")
    return out


def package_sources():
    files = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    assert files, f"no .py files under {PACKAGE}"
    return files


@functools.lru_cache(maxsize=None)
def parsed_package():
    """(file name from the repository root, source, module, is a package, tree) of every file, parsed once."""
    out = []
    for path in package_sources():
        name, source = str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
        out.append((name, source, *module_of(path), ast.parse(source, name)))
    return out


@pytest.mark.parametrize("rule", list(RULES))
def test_house_rule(rule):
    found = []
    for name, source, module, is_package, tree in parsed_package():
        found += violations(rule, source, module, is_package, name, tree)
    assert not found, f"house rule {rule} broken in {len(found)} place(s):\n" + "\n".join(found)


def test_rules_have_something_to_check():
    """The scopes of the rules exist, so a rule cannot pass because its folder was renamed away."""
    modules = {module_of(path)[0] for path in package_sources()}
    for package in ("syntrans", "syntrans.cli", "syntrans.modules", "syntrans.syntax", "syntrans.data"):
        assert package in modules, f"{package} (a package the house rules are about) is gone"
    for package in ("syntrans.cli", "syntrans.modules", "syntrans.syntax"):
        assert any(m != package and within(m, package) for m in modules), f"{package} has no modules"


def test_every_package_stands_on_a_floor():
    """A new package is given its floor in :data:`FLOORS` (else its imports would go unchecked)."""
    lost = sorted({m for m in (module_of(p)[0] for p in package_sources()) if m != "syntrans" and floor_of(m) is None})
    assert not lost, f"modules on no floor of FLOORS (add their package there): {lost}"


# (rule, module, is package, source, number of violations expected)
SYNTHETIC = [
    # only syntrans/cli/ imports syntrans.cli
    ("cli_only_from_cli", "syntrans.prep.binarize", False, "from ..cli.preprocess import main\n", 1),
    ("cli_only_from_cli", "syntrans.prep.binarize", False, "def f():\n    if True:\n        from ..cli import parse\n", 1),
    ("cli_only_from_cli", "syntrans.hub", True, "from .cli import x\n", 0),  # syntrans.hub.cli: not syntrans.cli
    ("cli_only_from_cli", "syntrans.hub", True, "from ..cli import translate\n", 1),
    ("cli_only_from_cli", "syntrans", True, "from . import cli\n", 1),
    ("cli_only_from_cli", "syntrans", True, "from . import client, models\n", 0),
    ("cli_only_from_cli", "syntrans.bench.run", False, "import syntrans.cli.benchmark as b\n", 1),
    ("cli_only_from_cli", "syntrans.bench.run", False, "from syntrans import cli\n", 1),
    ("cli_only_from_cli", "syntrans.bench.run", False, "from syntrans.client import cli\n", 0),
    ("cli_only_from_cli", "syntrans.bench.run", False, "from fairseq_cli import preprocess\n", 0),
    ("cli_only_from_cli", "syntrans.bench.run", False, "m = importlib.import_module('syntrans.cli.plot')\n", 1),
    ("cli_only_from_cli", "syntrans.bench.run", False, "m = importlib.import_module('..cli', __package__)\n", 1),
    ("cli_only_from_cli", "syntrans.cli.translate", False, "from .parse import main\nfrom syntrans.cli import plot\n", 0),
    ("cli_only_from_cli", "syntrans.cli", True, "from . import parse\n", 0),
    # syntrans/modules/ imports no syntrans.data
    ("modules_not_data", "syntrans.modules.nsd_layers", False, "from ..data.features import BOS_NSD, NO_NSD\n", 1),
    ("modules_not_data", "syntrans.modules.nsd_layers", False, "from .. import data\n", 1),
    ("modules_not_data", "syntrans.modules.nsd_layers", False, "class A:\n    def f(self):\n        import syntrans.data\n", 1),
    ("modules_not_data", "syntrans.modules.nsd_layers", False, "from .data import x\nfrom ..syntax.nsd_labels import nsd\n", 0),
    ("modules_not_data", "syntrans.modules", True, "from ..data import features\n", 1),
    ("modules_not_data", "syntrans.modules", True, "from .data_utils import x\n", 0),
    ("modules_not_data", "syntrans.models.nsd_side", False, "from ..data.features import BOS_NSD\n", 0),  # not modules/
    ("modules_not_data", "syntrans.modules.nsd_layers", False, "from fairseq.data import Dictionary\n", 0),
    # syntrans/syntax/ imports no fairseq
    ("syntax_without_fairseq", "syntrans.syntax.nsd_labels", False, "import fairseq\n", 1),
    ("syntax_without_fairseq", "syntrans.syntax.nsd_labels", False, "def f():\n    from fairseq.data import Dictionary\n", 1),
    ("syntax_without_fairseq", "syntrans.syntax", True, "try:\n    import fairseq_cli.train\nexcept ImportError:\n    pass\n", 1),
    ("syntax_without_fairseq", "syntrans.syntax.gaps", False, "import numpy\nfrom .trees import leaves\nimport fairseqx\n", 0),
    ("syntax_without_fairseq", "syntrans.modules.pascal", False, "from fairseq import utils\n", 0),  # not syntax/
    # no upward import: hidden in a function or not
    ("no_upward_import", "syntrans.prep.parse_step", False, "def f():\n    from ..reproduce.launcher import run_units\n", 1),
    ("no_upward_import", "syntrans.data.sidecars", False, "def f():\n    from ..parsing.views import VIEWS\n", 1),
    ("no_upward_import", "syntrans.parsing.cluster", False, "from ..prep import pipeline\n", 1),  # the same floor
    ("no_upward_import", "syntrans.syntax", True, "def f():\n    import syntrans.cli.parse\n", 1),
    ("no_upward_import", "syntrans.prep.parse_step", False, "def f():\n    from ..jobs.launcher import run_units\n", 0),
    ("no_upward_import", "syntrans.parsing.cluster", False, "from .. import data\nfrom .shards import x\n", 0),
    ("no_upward_import", "syntrans.tasks.checkpoint_match", False, "from ..checkpoints.safety import allow\n", 0),
    ("no_upward_import", "syntrans.checkpoints.average", False, "def f():\n    from ..models.config import c\n", 1),
    ("no_upward_import", "syntrans.data.features", False, "def f():\n    import torch\n    import fairseq.data\n", 0),
    ("no_upward_import", "syntrans", True, "def register():\n    from . import plugin\n", 0),  # the root: on top
    # no __class__ assignment
    ("no_class_assignment", "syntrans.models.x", False, "attn.__class__ = SyntaxBiasedMultiheadAttention\n", 1),
    ("no_class_assignment", "syntrans.models.x", False, "def f(m):\n    m.q_proj.__class__: type = B\n", 1),
    ("no_class_assignment", "syntrans.models.x", False, "a, (b, m.__class__) = 1, (2, C)\n", 1),
    ("no_class_assignment", "syntrans.models.x", False, "setattr(m, '__class__', C)\nobject.__setattr__(m, '__class__', C)\n", 2),
    ("no_class_assignment", "syntrans.models.x", False, "cls = m.__class__\nm.__class_name__ = 'x'\nsetattr(m, 'y', 1)\n", 0),
    ("no_class_assignment", "syntrans.models.x", False, "__class__ = 1\nisinstance(m, m.__class__)\n", 0),
    # the floors of the model
    ("modules_below_mechanisms", "syntrans.modules.syntax_attention", False, "from ..mechanisms.base import X\n", 1),
    ("modules_below_mechanisms", "syntrans.modules.blocks", False, "from ..models import config\n", 1),
    ("modules_below_mechanisms", "syntrans.modules.blocks", False, "from .precision import x\nfrom ..syntax import y\n", 0),
    ("modules_below_mechanisms", "syntrans.mechanisms.lisa", False, "from ..modules.blocks import HeadBlock\n", 0),
    ("mechanisms_below_models", "syntrans.mechanisms.lisa", False, "from ..models.config import set_field\n", 1),
    ("mechanisms_below_models", "syntrans.mechanisms", True, "from .registry import MECHANISMS\n", 0),
]


@pytest.mark.parametrize("rule, module, is_package, source, expected", SYNTHETIC,
                         ids=[f"{r}-{i}" for i, (r, *_) in enumerate(SYNTHETIC)])
def test_rule_checker_on_synthetic_source(rule, module, is_package, source, expected):
    found = violations(rule, source, module, is_package, filename="synthetic.py")
    assert len(found) == expected, found
    for message in found:
        assert message.startswith("synthetic.py:") and message.split(":")[1].isdigit(), message


def test_violation_names_file_and_line():
    found = violations("modules_not_data", "import torch\n\n\nfrom ..data.features import BOS_NSD\n",
                       "syntrans.modules.nsd_layers", filename="syntrans/modules/nsd_layers.py")
    assert found == ["syntrans/modules/nsd_layers.py:4: imports syntrans.data.features (syntrans/modules/ may not "
                     "import syntrans.data): from ..data.features import BOS_NSD"]


@pytest.mark.parametrize("module, is_package, level, name, expected", [
    ("syntrans.modules.nsd_layers", False, 1, "pascal", "syntrans.modules.pascal"),
    ("syntrans.modules.nsd_layers", False, 2, "data.features", "syntrans.data.features"),
    ("syntrans.modules.nsd_layers", False, 2, None, "syntrans"),
    ("syntrans.modules", True, 1, "pascal", "syntrans.modules.pascal"),
    ("syntrans.modules", True, 2, "data", "syntrans.data"),
    ("syntrans", True, 1, "cli", "syntrans.cli"),
    ("syntrans.cli.parse", False, 0, "syntrans.cli", "syntrans.cli"),
])
def test_resolve_relative_imports(module, is_package, level, name, expected):
    assert resolve(module, is_package, level, name) == expected


def test_relative_import_beyond_the_package_is_an_error():
    with pytest.raises(ImportError, match="beyond the top-level package"):
        resolve("syntrans.modules.nsd_layers", False, 3, "x")


def test_module_of():
    assert module_of(ROOT / "syntrans" / "modules" / "nsd_layers.py") == ("syntrans.modules.nsd_layers", False)
    assert module_of(ROOT / "syntrans" / "cli" / "__init__.py") == ("syntrans.cli", True)
    assert module_of(ROOT / "syntrans" / "__init__.py") == ("syntrans", True)


# ------------------------------------------------------------------------------- one place per method

#: the core packages: everything a method could be spread over
CORE = ("models", "modules", "data", "tasks", "criterions", "mechanisms")
#: the files that loop over mechanisms (the attention, the layers, encoder, decoder, model, config, plan, dataset,
#: task, criterion): a method named there would spread it again
GENERIC = ("syntrans/modules/", "syntrans/tasks/", "syntrans/criterions/", "syntrans/mechanisms/base.py",
           "syntrans/mechanisms/plan.py", "syntrans/mechanisms/layer_lists.py",
           "syntrans/mechanisms/encoder_heads.py", "syntrans/models/config.py",
           "syntrans/models/layers.py", "syntrans/models/encoder.py", "syntrans/models/decoder.py",
           "syntrans/models/syntax_transformer.py", "syntrans/data/syntax_dataset.py", "syntrans/data/sidecars.py",
           "syntrans/data/feature_range.py")


def identifier_words(name: str):
    """An identifier's words: ``_gated_fused`` → gated, fused; ``PascalHeads`` → pascal, heads."""
    import re

    return [w.lower() for part in name.split("_") for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", part)]


@functools.lru_cache(maxsize=None)
def method_names():
    """Each registered mechanism's names, from the registry: (identifier words: its key and the key's inflections,
    for the code; a pattern for text: its title's name, its flags and flat option names, its quoted key, the
    classes its module exports)."""
    import dataclasses
    import re
    import sys

    from syntrans.mechanisms.registry import MECHANISMS

    out = {}
    for M in MECHANISMS:
        module = sys.modules[M.__module__]
        classes = {c for c in getattr(module, "__all__", ()) if c[:1].isupper()} | {M.__name__, M.Config.__name__}
        fields = "|".join(f.name for f in dataclasses.fields(M.Config))
        title = re.escape(M.title.split(" (")[0].lstrip("+"))
        text = [rf"(?<![\w&]){title}(?![\w&])", rf"--{M.key}-", rf"\b{M.key}_({fields})\b", rf"['\"]{M.key}['\"]"]
        text += [rf"\b{c}\b" for c in sorted(classes)]
        words = {M.key, M.key + "s", M.key + "d", M.key + "ed"}
        out[M.key] = (words, re.compile("|".join(text), re.IGNORECASE))
    return out


def naming(path: Path, key: str, words: bool = True):
    """The lines of ``path`` that name mechanism ``key``: an identifier, string or comment with one of its names
    (:func:`method_names`), or, with ``words``, an identifier with one of its key's words (``_gated_fused``; in the
    files that loop over mechanisms, where even a key that is an ordinary word, such as ``labels``, is out of
    place)."""
    import io
    import tokenize

    key_words, text = method_names()[key]
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == tokenize.NAME and words and key_words & set(identifier_words(tok.string)):
            lines.add(tok.start[0])
        elif tok.type in (tokenize.NAME, tokenize.STRING, tokenize.COMMENT) and text.search(tok.string):
            lines.add(tok.start[0])
    return sorted(lines)


def core_files_naming(key: str):
    return [str(path.relative_to(ROOT)) for path in package_sources()
            if str(path.relative_to(ROOT)).split("/")[1] in CORE and naming(path, key, words=False)]


def registry_keys():
    from syntrans.mechanisms.registry import MECHANISMS

    return [M.key for M in MECHANISMS]


@pytest.mark.parametrize("key", registry_keys())
def test_a_method_lives_in_few_core_files(key):
    found = core_files_naming(key)
    assert found, f"{key} is named nowhere: its names are stale"
    assert len(found) <= 5, f"{key} is named in {len(found)} core files: {found}"
    assert "syntrans/mechanisms/registry.py" in found and "syntrans/models/presets.py" in found


def test_the_loops_over_mechanisms_name_none():
    for key in registry_keys():
        for path in package_sources():
            name = str(path.relative_to(ROOT))
            if name.startswith(GENERIC):
                hits = naming(path, key)
                assert not hits, f"{name} names the mechanism {key!r} on line(s) {hits}"


def test_the_names_can_fail(tmp_path):
    """Each mechanism's names are found where it is certainly named, in code and in text, the way a generic file
    would show them (a method's name inside an identifier of the attention's, a flag in a comment, its title in a
    message, its class); ordinary words that contain a name are not."""
    import dataclasses

    from syntrans.mechanisms.registry import MECHANISMS

    path = tmp_path / "sample.py"
    for M in MECHANISMS:
        flag = f"--{M.key}-{dataclasses.fields(M.Config)[0].name.replace('_', '-')}"
        for source in (f"def _{M.key}ed_fused(x):\n    return x\n", f"x = 1  # see {flag}\n",
                       f"raise ValueError({M.title!r})\n", f"{M.__name__} = None\n"):
            path.write_text(source)
            assert naming(path, M.key) == [1], (M.key, source)
    path.write_text('def propagate(aggregate, translation):\n    """our normalisation of a slash and the labelset"""\n')
    assert all(naming(path, key) == [] for key in registry_keys())


LAYOUT = ROOT / "docs" / "layout.md"


def new_method_files():
    """The backticked paths of docs/layout.md's list "The files a new method touches" (up to the next heading)."""
    import re

    text = LAYOUT.read_text(encoding="utf-8")
    start = text.index("### The files a new method touches")
    section = text[start:text.index("\n#", start + 1)]
    return re.findall(r"^- `([^`]+)`", section, re.M) + re.findall(r"^- `[^`]+` and `([^`]+)`", section, re.M)


def test_layout_lists_the_files_a_new_method_touches():
    """docs/layout.md's list matches the code: each concrete file or folder exists, ``<method>`` stands for each
    registered mechanism's own module, and the registry and the presets name every mechanism."""
    import sys

    from syntrans.mechanisms.registry import MECHANISMS

    listed = new_method_files()
    for core in ("syntrans/mechanisms/<method>.py", "syntrans/mechanisms/registry.py", "syntrans/models/presets.py",
                 "syntrans/plots/attention.py", "configs/<method>/", "scripts/reproduce/"):
        assert core in listed, f"docs/layout.md does not list {core} among the files a new method touches"
    for path in listed:
        if "<method>" not in path:
            assert (ROOT / path).exists(), f"docs/layout.md lists {path}, which does not exist"
    modules = {Path(sys.modules[M.__module__].__file__).name for M in MECHANISMS}
    assert len(modules) == len(MECHANISMS), "two mechanisms share a module: one module per method"
    assert all(M.__module__.startswith("syntrans.mechanisms.") for M in MECHANISMS)
    for M in MECHANISMS:
        assert naming(PACKAGE / "mechanisms" / "registry.py", M.key, words=False), f"registry.py lacks {M.key}"
        assert naming(PACKAGE / "models" / "presets.py", M.key, words=False), f"presets.py names no {M.key} preset"


def test_layout_names_every_mechanism_module():
    """Every mechanism module of the registry is named in docs/layout.md, as are the baselines without one."""
    import sys

    from syntrans.mechanisms.registry import MECHANISMS

    text = LAYOUT.read_text(encoding="utf-8")
    for M in MECHANISMS:
        name = Path(sys.modules[M.__module__].__file__).name
        assert f"`{name}`" in text, f"docs/layout.md does not name the mechanism module {name}"
    for baseline in ("+S&H", "+MULTI-TASK", "source_labels.py"):
        assert baseline in text, f"docs/layout.md does not mention {baseline}"


def every_file_section():
    """The module paths (relative to syntrans/) that docs/layout.md's "Every file of the package" lists."""
    import re

    text = LAYOUT.read_text(encoding="utf-8")
    start = text.index("## Every file of the package")
    section = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"^- `([^`]+\.py)`:", section, re.M)


def test_layout_lists_every_module_and_nothing_else():
    """docs/layout.md is checked both ways: each module of the package (not ``__init__.py``) has its line, once, and
    each listed path is a module of the package."""
    listed = every_file_section()
    modules = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
    assert sorted(set(listed)) == sorted(listed), "a module is listed twice"
    assert sorted(set(modules) - set(listed)) == [], "modules docs/layout.md does not list"
    assert sorted(set(listed) - set(modules)) == [], "docs/layout.md lists modules that do not exist"


def test_no_module_name_is_used_twice():
    """A bare file name names one module of the package (``__init__.py`` and the console scripts' own modules in
    ``cli/``, each named for its command, aside): ``report.py`` or ``preprocess.py`` in two packages is two
    meanings for one word."""
    from collections import Counter

    names = Counter(p.name for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" and p.parent.name != "cli")
    cli = {p.name for p in (PACKAGE / "cli").glob("*.py")}
    assert [n for n, k in names.items() if k > 1] == []
    assert sorted(cli & set(names)) == [], "a module outside cli/ has a command module's name"


def test_one_checkpoint_reader():
    """``torch.load`` is called in checkpoints/safety.py only (``safe_torch_load``: on the CPU, weights-only with the
    fairseq allow-list); every reader of a checkpoint goes through it."""
    import re

    callers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if p.name != "safety.py" and re.search(r"(?<![\w.])torch\.load\(", p.read_text(encoding="utf-8")))
    assert callers == []
