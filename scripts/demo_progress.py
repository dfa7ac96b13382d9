#!/usr/bin/env python
"""make demo's progress: copy fairseq-train's output (stdin) to LOG and print one short line per logged interval and
per epoch, so that a newcomer sees each model train: ``[NAME] update 200/600  loss 5.91`` and
``[NAME] epoch 3  update 141/600  train loss 6.42  valid loss 6.12  (45s)``.

Usage: fairseq-train … 2>&1 | python scripts/demo_progress.py NAME MAX_UPDATE LOG
"""
import re
import sys


def field(line: str, name: str, sep: str) -> str:
    """The value of ``name`` in a fairseq log line (``name=value,`` in train_inner lines, ``| name value`` else)."""
    m = re.search(rf"(?:^|[ |,]){name}{sep}([^ ,|]+)", line)
    return m.group(1) if m else "?"


def main() -> int:
    name, total, log = sys.argv[1], sys.argv[2], sys.argv[3]
    valid = "?"
    with open(log, "w", encoding="utf-8") as out:
        for line in sys.stdin:
            out.write(line)
            out.flush()
            line = line.rstrip("\n")
            if "| train_inner |" in line:
                print(f"   [{name}] update {field(line, 'num_updates', '=')}/{total}  loss {field(line, 'loss', '=')}",
                      flush=True)
            elif "valid on 'valid' subset" in line:
                valid = field(line, "loss", " ")
            elif "| train |" in line:
                epoch = re.search(r"epoch (\d+)", line)
                print(f"   [{name}] epoch {int(epoch.group(1)) if epoch else '?'}  update {field(line, 'num_updates', ' ')}"
                      f"/{total}  train loss {field(line, 'loss', ' ')}  valid loss {valid}  ({field(line, 'wall', ' ')}s)",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
