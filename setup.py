"""Packaging for syntrans, a fairseq plugin for syntax-guided attention in NMT."""
from pathlib import Path

from setuptools import find_packages, setup

# configs/ (the papers' settings as fairseq argument files) is installed as the package data ``syntrans.configs``: one
# copy, browsable at the top of the repository, read by the commands from an installed wheel as from a clone.
CONFIG_DIRS = sorted(p.name for p in Path(__file__).resolve().parent.joinpath("configs").iterdir() if p.is_dir())
CONFIG_PACKAGES = ["syntrans.configs"] + [f"syntrans.configs.{d}" for d in CONFIG_DIRS]

setup(
    name="syntrans",
    version="0.1.0",
    description="Syntax-guided attention for the fairseq Transformer (fairseq --user-dir plugin)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.8",
    packages=find_packages(include=["syntrans", "syntrans.*"]) + CONFIG_PACKAGES,
    package_dir={"syntrans.configs": "configs"},
    package_data={p: ["*.args", "*.md"] for p in CONFIG_PACKAGES},  # configs/__init__.py makes it a package
    install_requires=[
        # The official release cannot be imported on Python >= 3.11; the fork keeps
        # the same `fairseq` import package (0.12.2 fails to import there: mutable dataclass defaults).
        "fairseq==0.12.2; python_version < '3.11'",
        "fairseq-fixed==0.12.3.1; python_version >= '3.11'",
        "torch",
        "numpy",
        # lower bound: the version the tests run on (CI); upper bound: the next major version, whose API may differ
        "stanza>=1.15,<2",
        "sacrebleu>=2.6,<3",
        "subword-nmt>=0.3.8,<0.4",
        "sentencepiece>=0.2.3,<0.3",  # --bpe sentencepiece (syntrans.prep.segmenters)
        "sacremoses>=0.2,<0.3",
        # RIBES (syntrans.reproduce.scoring.ribes); 3.10.4: Kendall's tau over every increasing pair, as the RIBES script
        "nltk>=3.10.4,<4",
        "regex",  # Moses' remove-non-printing-char rule (\p{C}); sacremoses needs it too
        "langid",  # the language filter of syntrans-prepare --langid
        "tqdm",
    ],
    extras_require={
        "test": ["pytest", "pytest-xdist>=3.6", "hypothesis", "ruff", "build", "twine", "submitit>=1.5,<2"],
        "plot": ["matplotlib"],
        "cluster": ["submitit>=1.5,<2"],  # syntrans-reproduce --launcher slurm / submitit-local
        # syntrans-reproduce: its figures (matplotlib) and Japanese BLEU with sacreBLEU's ja-mecab tokenizer (MeCab's
        # binding, which bundles libmecab, and the IPA dictionary sacreBLEU checks for), pinned so that the same output
        # scores the same on every machine (syntrans.reproduce.scoring.JA_MECAB_PACKAGES)
        "reproduce": ["matplotlib", "mecab-python3==1.0.12", "ipadic==1.0.0"],
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
