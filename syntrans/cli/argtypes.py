"""argparse value types shared by the console scripts."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer ≥ 1 (argparse ``type=``): the message names what was found."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, found {value}")
    return value
