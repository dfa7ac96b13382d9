"""Packaging for syntrans, a fairseq plugin for syntax-guided attention in NMT."""
from setuptools import find_packages, setup

setup(
    name="syntrans",
    version="0.1.0",
    description="Syntax-guided attention for the fairseq Transformer (fairseq --user-dir plugin)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.8",
    packages=find_packages(include=["syntrans", "syntrans.*"]),
    install_requires=[
        # The official release cannot be imported on Python >= 3.11; the fork keeps
        # the same `fairseq` import package (0.12.2 fails to import there: mutable dataclass defaults).
        "fairseq==0.12.2; python_version < '3.11'",
        "fairseq-fixed==0.12.3.1; python_version >= '3.11'",
        "torch",
        "numpy",
        "stanza",
        "sacrebleu>=2",
        "subword-nmt",
        "sacremoses",
        "regex",  # Moses' remove-non-printing-char rule (\p{C}); sacremoses needs it too
        "langid",  # the language filter of syntrans-prepare --langid
        "tqdm",
    ],
    extras_require={
        "test": ["pytest", "hypothesis", "ruff"],
        "plot": ["matplotlib"],
    },
    entry_points={
        "console_scripts": [
            "syntrans-parse=syntrans.cli.parse:main",
            "syntrans-preprocess=syntrans.cli.preprocess:main",
            "syntrans-synth=syntrans.cli.synth:main",
            "syntrans-benchmark=syntrans.cli.benchmark:main",
            "syntrans-plot=syntrans.cli.plot:main",
            "syntrans-prepare=syntrans.cli.prepare:main",
            "syntrans-reproduce=syntrans.cli.reproduce:main",
            "syntrans-translate=syntrans.cli.translate:main",
            "syntrans-average-checkpoints=syntrans.cli.average_checkpoints:main",
        ],
    },
)
