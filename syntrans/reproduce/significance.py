"""The papers' significance test: paired bootstrap resampling (Koehn 2004) of BLEU, by sacreBLEU's own implementation;
the same test of chrF++ for the tables that report it (the cross kind: ours).

Bugliarello & Okazaki 2020, Table 1: "statistical significance (p < 0.01) against the Transformer baseline via
bootstrap re-sampling (Koehn, 2004)"; Hou et al. 2022, §4.2 and Hou et al. (gated), §5.1 state p < 0.01 without
naming the test.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Tuple

from .scoring import bleu_metric, chrf_metric, reference_streams

#: the metrics the paired test compares, by the name the results print
METRICS = ("BLEU", "chrF++")

#: the environment variable sacreBLEU's PairedTest reads its seed from (sacrebleu/significance.py)
SEED_VARIABLE = "SACREBLEU_SEED"


@contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """SACREBLEU_SEED set to ``seed`` inside the block, restored after: sacreBLEU 2.x takes the bootstrap seed only
    from the environment."""
    before = os.environ.get(SEED_VARIABLE)
    os.environ[SEED_VARIABLE] = str(seed)
    try:
        yield
    finally:
        if before is None:
            del os.environ[SEED_VARIABLE]
        else:
            os.environ[SEED_VARIABLE] = before


def paired_bootstrap(baseline_hyps: List[str], system_hyps: List[str], refs: List[str], lang: str, lowercase: bool,
                     tokenize: Optional[str] = None, n_samples: int = 1000, seed: int = 12345,
                     more_refs: Optional[List[List[str]]] = None, metric: str = "BLEU") -> Tuple[float, str]:
    """The p-value of the system's BLEU (``metric`` "chrF++": its chrF++, :func:`~syntrans.reproduce.scoring.chrf`)
    against the baseline's on the same test set, and the test's description.

    sacreBLEU's PairedTest with test_type "bs" (the Moses bootstrap-hypothesis-difference-significance.pl test,
    Koehn 2004): ``n_samples`` resamples of the test sentences (with replacement, the same for both systems);
    p = (#{resamples whose |ΔBLEU| minus the mean |ΔBLEU| exceeds the observed |ΔBLEU|} + 1) / (n_samples + 1). The
    test is two-sided: a small p says the systems differ; the sign of ΔBLEU says which is better. BLEU is the one of
    :func:`~syntrans.reproduce.scoring.bleu` (``lang``, ``lowercase``, ``tokenize`` as there); chrF++ that of
    :func:`~syntrans.reproduce.scoring.chrf` (``lowercase`` as there; ``lang`` and ``tokenize`` do not apply).

    One exception to sacreBLEU's answer: when the two corpus scores are exactly equal (e.g. identical outputs) the
    p-value is 1, for either metric. sacreBLEU's count uses a strict ">", so for identical outputs (every resample's
    difference 0) it returns its smallest p, 1/(n_samples + 1), which would call a system significantly different
    from itself; under "≥" an observed difference of 0 has p = 1.

    ``seed`` ≥ 1 (sacreBLEU treats a seed of 0 as "no seed": unreproducible). ``more_refs``: further references
    of the test set (multi-reference BLEU, as :func:`~syntrans.reproduce.scoring.bleu`)."""
    from sacrebleu import __version__ as sacrebleu_version
    from sacrebleu.significance import PairedTest

    if not len(baseline_hyps) == len(system_hyps) == len(refs):
        raise ValueError(f"paired bootstrap: {len(baseline_hyps)} baseline hypotheses, {len(system_hyps)} system "
                         f"hypotheses and {len(refs)} references; expected one of each per test sentence")
    if not refs:
        raise ValueError("paired bootstrap: an empty test set")
    if not (isinstance(n_samples, int) and n_samples >= 1):
        raise ValueError(f"paired bootstrap: n_samples must be a positive integer, got {n_samples!r}")
    if not (isinstance(seed, int) and seed >= 1):
        raise ValueError(f"paired bootstrap: seed must be an integer ≥ 1 (sacreBLEU ignores a seed of 0), got {seed!r}")
    if metric not in METRICS:
        raise ValueError(f"paired bootstrap: metric must be one of {', '.join(METRICS)}, got {metric!r}")
    streams = reference_streams(refs, more_refs, len(refs))
    scorer = bleu_metric(lang, lowercase, tokenize) if metric == "BLEU" else chrf_metric(lowercase)
    with _sacrebleu_seed(seed):
        # baseline first: PairedTest compares every later system with named_systems[0]
        test = PairedTest([("baseline", baseline_hyps), ("system", system_hyps)], {metric: scorer}, streams,
                          test_type="bs", n_samples=n_samples)
        signatures, results = test()
    (name,) = signatures
    base, system = results[name]
    p = 1.0 if system.score == base.score else float(system.p_value)
    text = (f"paired bootstrap resampling (Koehn 2004), sacreBLEU {sacrebleu_version} PairedTest 'bs', "
            f"{n_samples} resamples, seed {seed}, two-sided on |Δ{metric}|: {signatures[name]}")
    return p, text


def holm(p_values: Dict[str, float]) -> Dict[str, float]:
    """Holm's (1979) step-down adjusted p-values of one family of tests, {name: p} → {name: adjusted p}: sorted
    ascending, p₍ᵢ₎ becomes max over j ≤ i of min(1, (m − j + 1)·p₍ⱼ₎), m the family's size. Rejecting where the
    adjusted p < α keeps the family-wise error rate at α, whatever the tests' dependence."""
    order = sorted(p_values, key=lambda name: (p_values[name], name))
    m, running, out = len(order), 0.0, {}
    for j, name in enumerate(order):
        running = max(running, min(1.0, (m - j) * p_values[name]))
        out[name] = running
    return out
