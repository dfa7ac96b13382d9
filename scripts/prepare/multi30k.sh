#!/usr/bin/env bash
# Multi30k German-English captions (local files, for smoke runs): reads train/val/test_2016_flickr.{de,en}
# from --raw-dir, Moses-tokenizes, cleans train, BPE, parses (right-branching without stanza models under
# --smoke), binarizes.
# Usage: scripts/prepare/multi30k.sh --pair de-en --raw-dir ../shared/data/multi30k --out data/m30 --smoke
set -euo pipefail
exec syntrans-prepare multi30k "$@"
