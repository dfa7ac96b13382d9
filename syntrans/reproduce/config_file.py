"""configs/*.args files: one fairseq flag (with its value) per line, ``#`` comments; the ``# decode:`` comment holds the
paper's decoding flags (beam, length penalty) that the reproduction scripts pass to fairseq-generate."""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import List

#: the project's configs/ folder (the reproduction scripts resolve a table's config paths against it)
CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ArgsFile:
    path: Path
    flags: List[str]  # fairseq-train flags, in file order
    decode: List[str]  # fairseq-generate flags of the "# decode:" line (empty when the file has none)

    def value(self, flag: str, default: str = None) -> str:
        """The value of the last occurrence of ``flag`` (None / ``default`` when absent)."""
        found = default
        for i, a in enumerate(self.flags[:-1]):
            if a == flag:
                found = self.flags[i + 1]
        return found


def read_args_file(path) -> ArgsFile:
    """Parse one arguments file: comment and blank lines dropped, the others split like a shell would (no expansion)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config {path} does not exist (expected a configs/**/*.args file)")
    flags: List[str] = []
    decode: List[str] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if text.startswith("# decode:"):
            decode = shlex.split(text[len("# decode:"):].split("(", 1)[0])
            continue
        if not text or text.startswith("#"):
            continue
        try:
            words = shlex.split(text)
        except ValueError as e:
            raise ConfigError(f"{path}, line {n}: cannot split {text!r}: {e}") from None
        if not words[0].startswith("--"):
            raise ConfigError(f"{path}, line {n}: expected a flag starting with '--', found {words[0]!r}")
        flags.extend(words)
    return ArgsFile(path, flags, decode)
