"""Speed and memory of the syntax presets against the vanilla Transformer (same as `syntrans-benchmark`)."""
from syntrans.cli.benchmark import main

raise SystemExit(main())
