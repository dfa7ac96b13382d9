"""configs/*.args files: one fairseq flag (with its value) per line, each with a trailing ``# stated: …`` or ``# ours…``
note; ``#`` comment lines. Two comment lines are read as directives:

- ``# decode: --beam 4 --lenpen 0.6   (stated: App. A)``: the fairseq-generate flags of the paper;
- ``# tokens per update: 32000   (stated: App. A)``: the paper's batch, max-tokens × GPUs × update-freq, from which
  :mod:`syntrans.reproduce.batching` derives ``--update-freq`` for the GPUs at hand.

``python -m syntrans.reproduce.config_file CONFIG [--world-size N]`` prints the file's fairseq-train flags, one per
line, followed by the batch flags for N GPUs (``scripts/train_with_config.sh`` uses it). CONFIG is a path, or a name
under the installed configs (``pascal/wmt16_en_de.args``), so it works from a wheel as from a clone.
"""
from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .batching import batch_flags, world_size_of


def installed_config_dir() -> Path:
    """The configs/ folder: the package data ``syntrans.configs`` of an installed wheel or an editable install (setup.py
    maps it to the repository's top-level configs/), else the clone's configs/ (syntrans on sys.path, not installed)."""
    spec = importlib.util.find_spec("syntrans.configs")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(__file__).resolve().parents[2] / "configs"


#: the configs/ folder (the reproduction scripts resolve a table's config paths against it)
CONFIG_DIR = installed_config_dir()

DECODE = "# decode:"
TOKENS = "# tokens per update:"


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ArgsFile:
    path: Path
    flags: List[str]  # fairseq-train flags, in file order
    decode: List[str]  # fairseq-generate flags of the "# decode:" line (empty when the file has none)
    tokens_per_update: Optional[int] = None  # the "# tokens per update:" line
    notes: Dict[str, str] = field(default_factory=dict)  # flag (or "decode", "tokens-per-update") → its note

    def value(self, flag: str, default: str = None) -> str:
        """The value of the last occurrence of ``flag`` (``""`` for a switch; None / ``default`` when absent)."""
        found = default
        for i, a in enumerate(self.flags):
            if a == flag:
                nxt = self.flags[i + 1] if i + 1 < len(self.flags) else None
                found = "" if nxt is None or nxt.startswith("--") else nxt
        return found


def _directive(text: str, prefix: str):
    """``# prefix VALUE   (note)`` → (VALUE, note)."""
    body = text[len(prefix):]
    value, _, note = body.partition("(")
    return value.strip(), note.rsplit(")", 1)[0].strip()


def resolve_config(path) -> Path:
    """``path`` when it is a file, else the same relative name under :data:`CONFIG_DIR` (``pascal/wmt16_en_de.args``
    or ``configs/pascal/wmt16_en_de.args`` from anywhere, the installed copy); ConfigError when neither exists."""
    path = Path(path)
    if path.is_file():
        return path
    parts = path.parts[1:] if path.parts[:1] == ("configs",) else path.parts
    installed = CONFIG_DIR.joinpath(*parts) if parts and not path.is_absolute() else None
    if installed is not None and installed.is_file():
        return installed
    where = f" nor {installed}" if installed is not None else ""
    raise ConfigError(f"config {path} does not exist{where} (expected a configs/**/*.args file, or its name under "
                      f"{CONFIG_DIR}, e.g. pascal/wmt16_en_de.args)")


def read_args_file(path) -> ArgsFile:
    """Parse one arguments file: comment and blank lines dropped (but for the directives), flag lines split like a
    shell would (no expansion), a trailing ``# note`` kept per flag."""
    path = resolve_config(path)
    flags: List[str] = []
    decode: List[str] = []
    tokens = None
    notes: Dict[str, str] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if text.startswith(DECODE):
            value, notes["decode"] = _directive(text, DECODE)
            decode = shlex.split(value)
            continue
        if text.startswith(TOKENS):
            value, notes["tokens-per-update"] = _directive(text, TOKENS)
            if not value.isdigit() or int(value) < 1:
                raise ConfigError(f"{path}, line {n}: expected a positive number of tokens per update, found {value!r}")
            tokens = int(value)
            continue
        if not text or text.startswith("#"):
            continue
        code, hash_, note = text.partition(" #")
        try:
            words = shlex.split(code)
        except ValueError as e:
            raise ConfigError(f"{path}, line {n}: cannot split {code!r}: {e}") from None
        if not words[0].startswith("--"):
            raise ConfigError(f"{path}, line {n}: expected a flag starting with '--', found {words[0]!r}")
        if hash_:
            notes[words[0]] = note.strip()
        flags.extend(words)
    return ArgsFile(path, flags, decode, tokens, notes)


def config_batch(cfg: ArgsFile, world_size: int) -> Tuple[List[str], Optional[str]]:
    """``--max-tokens``/``--update-freq`` giving the config's tokens per update on ``world_size`` GPUs (its
    ``--max-tokens`` the per-GPU budget), with the line saying so; ([], None) when the config states no batch."""
    if not cfg.tokens_per_update:
        return [], None
    return batch_flags(cfg.tokens_per_update, int(cfg.value("--max-tokens") or cfg.tokens_per_update), world_size)


def train_flags(cfg: ArgsFile, world_size: int, log=None) -> List[str]:
    """The config's fairseq-train flags plus the batch flags that give its tokens per update on ``world_size`` GPUs."""
    extra, message = config_batch(cfg, world_size)
    if message and log:
        log(message)
    return cfg.flags + extra


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m syntrans.reproduce.config_file",
                                description="Print a config's fairseq-train flags, one per line, with the batch flags "
                                            "for the number of GPUs (its '# tokens per update:').")
    p.add_argument("config", type=Path)
    p.add_argument("--world-size", type=int, default=None,
                   help="GPUs (processes) the training runs on (default: the CUDA devices visible, else 1)")
    a = p.parse_args(argv)
    try:
        cfg = read_args_file(a.config)
        flags = train_flags(cfg, a.world_size or world_size_of([]), log=lambda m: print(m, file=sys.stderr))
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(flags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
