"""``syntrans-benchmark``'s building blocks: corpus, models, measurement and report (see :mod:`syntrans.cli.benchmark`)."""
