#!/usr/bin/env bash
# WMT16 English-German (Europarl v7 + CommonCrawl + NC v11; newstest2015 valid, newstest2016 test) or
# English-Romanian (Europarl v8 + SETIMES2; newsdev2016 valid, newstest2016 test): download, extract,
# Moses-tokenize, clean train, joint BPE, parse, binarize.
# Usage: scripts/prepare/wmt16.sh --pair en-de|en-ro --out data/wmt16.en-ro [--raw-dir DIR] [--smoke] [--force]
set -euo pipefail
exec syntrans-prepare wmt16 "$@"
