"""argparse value types shared by the console scripts."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer ≥ 1 (argparse ``type=``): the message names what was found."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, found {value}")
    return value


def positive_int_or_off(text: str):
    """An integer >= 1, or ``off`` (argparse ``type=``; a recipe's length filter)."""
    return "off" if text == "off" else positive_int(text)


def ratio_or_off(text: str):
    """A number >= 1, or ``off`` (argparse ``type=``; a recipe's ratio filter)."""
    if text == "off":
        return "off"
    value = float(text)
    if not value >= 1:
        raise argparse.ArgumentTypeError(f"must be a number >= 1 or off, found {text}")
    return value


def merges_per_lang(text: str) -> dict:
    """``LANG=N,LANG=N`` (argparse ``type=``), e.g. ``zh=61000,ja=46000`` → {"zh": 61000, "ja": 46000}."""
    out = {}
    for item in text.split(","):
        lang, sep, n = item.partition("=")
        if not sep or not lang or not n.isdigit() or int(n) < 1:
            raise argparse.ArgumentTypeError(f"expected LANG=N,LANG=N with N >= 1 (e.g. zh=61000,ja=46000), found {text!r}")
        out[lang] = int(n)
    return out


def views_arg(text: str) -> tuple:
    """``deps``, ``trees``, ``deps,trees`` or ``all`` (argparse ``type=``): the views of a parse
    (:mod:`syntrans.data.parse_views`)."""
    from ..data.parse_views import ViewError, parse_views  # light: no stanza

    try:
        return parse_views(text)
    except ViewError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def sizes_per_name(text: str) -> dict:
    """``NAME=N,NAME=N`` with N >= 1 (argparse ``type=``), e.g. ``pos=128,constituency=32``."""
    out = {}
    for item in text.split(","):
        name, sep, n = item.partition("=")
        if not sep or not name.strip() or not n.strip().isdigit() or int(n) < 1:
            raise argparse.ArgumentTypeError(f"expected NAME=N,NAME=N with N >= 1 (e.g. pos=128,constituency=32), "
                                             f"found {text!r}")
        out[name.strip()] = int(n)
    return out
