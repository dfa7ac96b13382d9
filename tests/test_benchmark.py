"""syntrans-benchmark: a --quick run on the synthetic corpus reports every model, ratios and sidecar timing.

Speed is reported, never asserted: no wall-clock thresholds here.
"""
import json
import math

import pytest

from syntrans.bench.models import syntax_presets
from syntrans.cli import benchmark

#: The NSD presets with NSD parts on (the plain ``nsd_transformer`` has none: the vanilla parameters).
NSD_WITH_PARAMS = ("nsd_src_transformer_base", "nsd_tgt_transformer_base", "nsd_transformer_base")


def _method(arch: str) -> str:
    """The key of a preset's expected features and targets: its method (the arch name's first word), or,
    for the NSD presets, which differ in both, the whole arch name."""
    return arch if arch.startswith("nsd_") else arch.split("_")[0]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    out_json, out_md = tmp / "b.json", tmp / "b.md"
    rc = benchmark.main(["--quick", "--corpus", "synth", "--device", "cpu", "--work-dir", str(tmp / "work"),
                         "--json", str(out_json), "--out", str(out_md)])
    return rc, json.loads(out_json.read_text()), out_md.read_text()


def test_presets_are_discovered_from_the_registry():
    presets = syntax_presets()
    assert "syntax_transformer" not in presets
    assert {"distance_transformer_iwslt_de_en", "distance_transformer_wmt_en_de", "pascal_transformer_wmt_en_de",
            "pascal_transformer_iwslt_de_en", "lisa_transformer_wmt_en_de", "lisa_transformer_iwslt_de_en",
            "nsd_transformer", "nsd_src_transformer_base", "nsd_tgt_transformer_base", "nsd_transformer_base"} <= set(presets)


def test_quick_run_reports_every_model(quick_run):
    rc, result, markdown = quick_run
    assert rc == 0
    presets = syntax_presets()
    assert result["presets"] == presets
    assert result["corpus"]["name"] == "synth"
    (cpu,) = result["devices"]
    assert cpu["device"] == "cpu"
    rows = {r["model"]: r for r in cpu["rows"]}
    assert list(rows) == result["models"]
    assert cpu["rows"][0]["model"] == "transformer"
    assert set(presets) <= set(rows)
    van = rows["transformer"]
    assert van["reference"] == "transformer" and van["features"] == []
    for name, r in rows.items():
        ref = rows[r["reference"]]
        assert ref["arch"] == "transformer" and ref["reference"] == ref["model"]
        if r["arch"] == "transformer":  # a reference row: exactly 1 against itself
            assert r["train_ratio"] == r["gen_ratio"] == r["mem_ratio"] == 1.0
            assert r["targets"] is None
        else:  # a preset: same dropout rates as its reference, the syntax features it asked for
            assert r["notes"][0] == ref["notes"][0]
            method = _method(r["arch"])
            chain = ["src_parent_chain", "tgt_parent_chain"]
            assert r["features"] == {"distance": ["src_gaps"], "pascal": ["src_parent_middle"],
                                     "lisa": ["src_parent_first"], "gated": ["src_gaps"], "dbsa": chain,
                                     "syncattn": chain, "nsd_transformer": [],
                                     "nsd_src_transformer_base": ["src_nsd_dD"],
                                     "nsd_tgt_transformer_base": ["tgt_nsd_in_dD", "tgt_nsd_out_dD"],
                                     "nsd_transformer_base": ["src_nsd_dD", "tgt_nsd_in_dD", "tgt_nsd_out_dD"],
                                     "sla": ["src_parent_first", "src_word_first"], "sh": ["src_dep_label"]}[method]
            assert r["targets"] == {"distance": {"train_min": 0.97, "gen_min": 0.97, "mem_max": 1.05},
                                    "pascal": {"train_min": 0.97, "gen_min": 0.97, "mem_max": 1.05},
                                    "lisa": {"train_min": 0.95, "gen_min": 0.95, "mem_max": 1.05},
                                    "gated": {"train_min": 0.93, "gen_min": 0.93, "mem_max": 1.10},
                                    "dbsa": {"train_min": 0.95, "gen_min": 0.95, "mem_max": 1.10},
                                    "syncattn": {"train_min": 0.90, "gen_min": 0.95, "mem_max": 1.10},
                                    "nsd_transformer": {"train_min": 0.93, "gen_min": 0.93, "mem_max": 1.10},
                                    "nsd_src_transformer_base": {"train_min": 0.97, "gen_min": 0.93, "mem_max": 1.10},
                                    "nsd_tgt_transformer_base": {"train_min": 0.93, "gen_min": 0.93, "mem_max": 1.10},
                                    "nsd_transformer_base": {"train_min": 0.93, "gen_min": 0.93, "mem_max": 1.10},
                                    # the papers' baselines (SLA, +S&H): no issue set them a target; measured only
                                    "sla": None, "sh": None}[method]
        for key in ("train_tok_s", "train_ratio", "gen_tok_s", "gen_ratio", "peak_mem_mb", "mem_ratio",
                    "held_mem_mb", "gen_mean_len"):
            assert isinstance(r[key], (int, float)) and math.isfinite(r[key]) and r[key] > 0, (name, key, r[key])
        assert all(math.isfinite(v) and v > 0 for v in r["ratios_vs_stock"].values())
        assert len(r["train_tok_s_reps"]) == len(r["gen_tok_s_reps"]) == result["settings"]["reps"]
        assert all(math.isfinite(x) and x > 0 for x in r["train_tok_s_reps"] + r["gen_tok_s_reps"])
        assert r["peak_mem_mb"] > r["held_mem_mb"]
        assert r["mem_residual_bytes"] == 0  # the profiler's allocation events account for the whole step
        hd = result["settings"]["dim"] // result["settings"]["heads"]
        lisa_u = (hd + 1) * hd if r["arch"].startswith("lisa_") else 0  # LISA's bi-affine U, one head of layer 0
        if r["arch"].split("_")[0] in ("dbsa", "syncattn"):  # one DBSA head's U (d × d) in encoder layer 0 and decoder layer 0
            lisa_u = 2 * hd * hd
        if r["arch"].startswith("sh_"):  # +S&H: a 10-dim embedding of 37 UD relations, "other", EOS and padding
            lisa_u = (37 + 1 + 1 + 1) * 10
        if r["arch"].startswith(("gated_", "sla_")) or r["arch"] in NSD_WITH_PARAMS:  # gate networks; NSD embeddings
            assert r["params"] > van["params"]
        else:
            assert r["params"] == van["params"] + lisa_u  # otherwise identical dimensions
        assert f"| {name} |" in markdown
    assert van["ratios_vs_stock"] == {"train": 1.0, "gen": 1.0, "mem": 1.0}
    sc = result["sidecars"]
    for key in ("fairseq_s", "sidecars_s", "ratio"):
        assert math.isfinite(sc[key]) and sc[key] > 0
    assert sc["splits"] == ["test", "train"]
    assert "sidecars/fairseq" in markdown


def test_stock_reference_only(tmp_path):
    out = tmp_path / "b.json"
    rc = benchmark.main(["--quick", "--corpus", "synth", "--device", "cpu", "--work-dir", str(tmp_path / "work"),
                         "--archs", "distance_transformer_wmt_en_de", "--no-matched-vanilla", "--no-sidecars",
                         "--reps", "1", "--json", str(out)])
    assert rc == 0
    result = json.loads(out.read_text())
    assert result["models"] == ["transformer", "distance_transformer_wmt_en_de"]
    assert result["sidecars"] is None
    assert all(r["reference"] == "transformer" for r in result["devices"][0]["rows"])


def test_subset_and_bad_arch(tmp_path):
    with pytest.raises(SystemExit):
        benchmark.main(["--quick", "--corpus", "synth", "--archs", "not_an_arch", "--work-dir", str(tmp_path)])


def test_by_length_measures_one_layer_per_preset(tmp_path, capfd):
    """--lengths: for every preset asked, its first encoder (and decoder) layer with syntax heads against the stock
    layer, at each length, both parts (attention alone, the whole layer) and both backends; identical presets are
    measured once; the batch holds --layer-tokens tokens; a preset with no syntax heads (NSD) has no layer. The
    compiled kernels' compiles are counted over --recompile-batches batches (off CUDA: dynamo's guards, the eager
    backend); torch's profiler, which measures the CPU memory, prints nothing."""
    out, md = tmp_path / "l.json", tmp_path / "l.md"
    archs = ["pascal_transformer_iwslt_de_en", "dbsa_transformer_wmt_en_de", "nsd_src_transformer_base"]
    rc = benchmark.main(["--quick", "--lengths", "16,48", "--layer-tokens", "96", "--device", "cpu", "--reps", "1",
                         "--recompile-batches", "6", "--archs", ",".join(archs), "--json", str(out), "--out", str(md)])
    assert rc == 0
    err = capfd.readouterr().err
    assert "[benchmark] cpu T=48" in err  # stderr is caught here…
    assert "USDT" not in err and "profiler_start" not in err and "CPUAllocator" not in err, err  # …without the noise
    result = json.loads(out.read_text())
    (cpu,) = result["devices"]
    cases = sorted({r["case"] for r in cpu["rows"]})
    assert cases == ["dbsa_transformer_wmt_en_de/decoder", "dbsa_transformer_wmt_en_de/encoder",
                     "pascal_transformer_iwslt_de_en/encoder"]
    assert [(r["T"], r["B"]) for r in cpu["rows"] if r["case"] == cases[0]] == [(16, 6), (48, 2)]
    heads = {r["case"]: r["heads"] for r in cpu["rows"]}
    assert heads["pascal_transformer_iwslt_de_en/encoder"] == "2 pascal"
    assert heads["dbsa_transformer_wmt_en_de/decoder"] == "1 dbsa"
    for r in cpu["rows"]:
        for part in ("attention", "layer"):
            for backend in ("auto", "explicit"):
                m = r[f"{part}_{backend}"]
                assert all(math.isfinite(m[k]) and m[k] > 0 for k in ("stock_ms", "ms", "stock_peak_mb", "peak_mb"))
                assert m["speed"] == pytest.approx(m["stock_ms"] / m["ms"])
                assert m["mem"] == pytest.approx(m["peak_mb"] / m["stock_peak_mb"])
        # the explicit path forms every head's scores: never less memory than the kernels the attention picks
        assert r["attention_explicit"]["peak_mb"] >= r["attention_auto"]["peak_mb"]
    text = md.read_text()
    assert "| pascal_transformer_iwslt_de_en/encoder | 2 pascal | 48 | 2 |" in text
    recompiles = {r["case"]: r for r in cpu["recompiles"]}
    assert set(recompiles) == set(cases)
    # IWSLT's attention dropout keeps PASCAL's heads off flex attention; DBSA's loss (no attention dropout in the WMT
    # preset) comes from the compiled kernel's log-sum-exp: compiled at its first batch at least
    assert recompiles["pascal_transformer_iwslt_de_en/encoder"]["mode"] == "none"
    for case in ("dbsa_transformer_wmt_en_de/encoder", "dbsa_transformer_wmt_en_de/decoder"):
        r = recompiles[case]
        assert r["batches"] == 6 and len(r["per_batch"]) == 6 and r["per_batch"][0] >= 1 and r["fallbacks"] == []
        assert r["warmup"] + r["after"] == sum(r["per_batch"]) and 8 <= min(r["lengths"]) <= max(r["lengths"]) <= 48
        assert f"| {case} | 1 dbsa | cpu: dynamo's guards (backend eager), forward only | {r['warmup']} | {r['after']} |" in text


def test_quiet_profiler_keeps_every_other_line(capfd):
    """The profiler's own notes are dropped from stderr; any other line written there meanwhile (Python's or a C
    library's, through file descriptor 2) is written back, in order."""
    import os

    from syntrans.bench.measure import quiet_profiler

    with quiet_profiler():
        os.write(2, b"USDT:2026-11-27 00:00:44 4962:4962 SyncActivityProfilerHandler.cpp:52] profiler_start\n")
        os.write(2, b"first line of ours\n")
        os.write(2, b"[W1127 00:00:44.573921713 CPUAllocator.cpp:245] Memory block of unknown size was allocated before "
                    b"the profiling started, profiler results will not include the deallocation event\n")
        os.write(2, b"second, a warning: profiler_start is a word\n")
    assert capfd.readouterr().err == "first line of ours\nsecond, a warning: profiler_start is a word\n"


def test_by_length_refuses_bad_lengths(tmp_path):
    for bad in (["--lengths", "1,8"], ["--lengths", "64", "--layer-tokens", "32"], ["--lengths", "a"]):
        with pytest.raises(SystemExit):
            benchmark.main(["--quick", "--device", "cpu", *bad])
