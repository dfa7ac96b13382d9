#!/usr/bin/env bash
# IWSLT14 German-English TED (fairseq's pipeline): downloads de-en.tgz (fairseq's mirror), strips the
# train.tags metadata, Moses-tokenizes and lowercases, cleans train (1-175 tokens, ratio 1.5), holds out every
# 23rd cleaned pair as valid, tests on dev2010+dev2012+tst2010-2012, joint BPE 10k, parses, binarizes.
# Usage: scripts/prepare/iwslt14.sh --pair de-en --out data/iwslt14.de-en [--raw-dir DIR] [--smoke] [--force]
# (all options: syntrans-prepare --help)
set -euo pipefail
exec syntrans-prepare iwslt14 "$@"
