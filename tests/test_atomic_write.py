"""Files written whole or not at all (syntrans/atomic_write.py), and the one helper used wherever the package
replaces a file: no hand-rolled temporary-then-replace left in syntrans/."""
import ast
from pathlib import Path

import pytest

from syntrans.atomic_write import atomic_file, atomic_files, write_text

pytestmark = pytest.mark.fast
PACKAGE = Path(__file__).resolve().parent.parent / "syntrans"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "f.txt"
    write_text(path, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_file(path) as f:
            f.write("new, half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_several_files_replace_their_paths_together_or_not_at_all(tmp_path):
    paths = {"de": tmp_path / "train.de", "en": tmp_path / "train.en"}
    for p in paths.values():
        p.write_text("old\n")
    with pytest.raises(ValueError):
        with atomic_files(paths) as files:
            files["de"].write("neu\n")
            files["en"].write("new\n")
            raise ValueError("the sides differ")
    assert [p.read_text() for p in paths.values()] == ["old\n", "old\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.de", "train.en"]
    with atomic_files(paths) as files:
        files["de"].write("neu\n")
        files["en"].write("new\n")
        assert [p.read_text() for p in paths.values()] == ["old\n", "old\n"]  # not before the block ends
    assert [p.read_text() for p in paths.values()] == ["neu\n", "new\n"]


#: the moves that are not a temporary file written whole: each resumes or moves a folder (file: why)
NOT_TEMPORARY = {
    "prep/download.py": "a download's .part file, resumed across interruptions, becomes the file when complete",
    "parsing/driver.py": "a parse's .part file, resumed from its progress record, becomes the parse when complete",
    "parsing/model_training.py": "a trained stanza model moved from stanza's save folder",
    "data/binarization.py": "a binarization's staged files moved into the data-bin once all are checked",
    "bench/corpus.py": "a timed binarization's folder becomes the data-bin",
}


def test_no_module_replaces_a_file_by_hand():
    """``os.replace``, ``os.rename``, ``shutil.move``, ``Path.replace`` and ``Path.rename`` appear only in
    atomic_write.py, and where :data:`NOT_TEMPORARY` says why."""
    offenders = []
    for py in sorted(PACKAGE.rglob("*.py")):
        name = py.relative_to(PACKAGE).as_posix()
        if name == "atomic_write.py" or name in NOT_TEMPORARY:
            continue
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
            one_arg = len(node.args) == 1 and not node.keywords  # str.replace takes two: one is Path's
            if (owner in ("os", "shutil") and node.func.attr in ("replace", "rename", "move")) or \
                    (node.func.attr in ("replace", "rename") and one_arg):
                offenders.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []
    for name in NOT_TEMPORARY:
        assert (PACKAGE / name).exists(), f"{name} is gone: remove it from NOT_TEMPORARY"
