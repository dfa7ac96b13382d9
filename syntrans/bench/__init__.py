"""``syntrans-benchmark``'s library: :func:`~syntrans.bench.run.run_benchmark` with the settings of a
:class:`~syntrans.bench.options.BenchOptions` (refused settings: :class:`~syntrans.bench.options.BenchError`),
built from corpus, models, measurement and report (see :mod:`syntrans.bench.run`; the command line is
:mod:`syntrans.cli.benchmark`)."""
