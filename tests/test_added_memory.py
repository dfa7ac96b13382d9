"""python -m syntrans.bench.added_memory: the parameters a method adds are the ones the stock Transformer lacks, the
share and Adam bytes follow from them, and the activation estimate is the per-layer figure times the syntax layers.

Figures are reported, never asserted against a threshold: these tests check the arithmetic and what is counted."""
import pytest

from syntrans.bench import added_memory

SHAPE = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
         "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4",
         "--decoder-attention-heads", "4", "--encoder-normalize-before", "--decoder-normalize-before",
         "--share-all-embeddings"]
PRESETS = ["pascal_transformer_wmt_en_de", "lisa_transformer_wmt_en_de", "gated_distance_transformer_iwslt_de_en",
           "sh_transformer_wmt_en_de", "nsd_transformer_base", "dbsa_transformer_wmt_en_de"]


@pytest.fixture(scope="module")
def rows(tiny_data):
    return added_memory.count(str(tiny_data), "src", "tgt", SHAPE, 4, PRESETS)


def test_added_parameters_are_those_the_stock_transformer_lacks(rows):
    stock = rows[0]["names"]
    assert rows[0]["arch"] == "transformer"
    some_added = False
    for row in rows[1:]:
        names = row["names"]
        missing = [k for k in stock if k not in names or names[k] != stock[k]]
        assert not missing, f"{row['arch']} lacks or reshapes the stock parameters {missing[:3]}"
        extra = sum(n for k, n in names.items() if k not in stock)
        assert row["params"] - rows[0]["params"] == extra, row["arch"]
        some_added |= extra > 0
    assert some_added  # LISA's biaffine, the gate, NSD's tables: at least one preset adds parameters


def test_every_preset_but_the_input_only_ones_has_syntax_layers(rows):
    by_arch = {r["arch"]: r["syntax_layers"] for r in rows}
    assert by_arch["transformer"] == {"encoder": 0, "decoder": 0}
    assert by_arch["dbsa_transformer_wmt_en_de"]["encoder"] >= 1
    assert by_arch["dbsa_transformer_wmt_en_de"]["decoder"] >= 1
    assert by_arch["pascal_transformer_wmt_en_de"]["encoder"] >= 1


def test_share_adam_bytes_and_activation_estimate_by_hand():
    rows = [{"arch": "transformer", "params": 1000, "embedding": 100, "syntax_layers": {"encoder": 0, "decoder": 0},
             "notes": []},
            {"arch": "x", "params": 1011, "embedding": 100, "syntax_layers": {"encoder": 3, "decoder": 2}, "notes": []}]
    by_length = {"tokens": 1024, "devices": [
        {"device": "cpu", "rows": [
            {"presets": ["x"], "side": "encoder", "T": 64, "layer_auto": {"peak_mb": 12.5, "stock_peak_mb": 10.0}},
            {"presets": ["x"], "side": "decoder", "T": 64, "layer_auto": {"peak_mb": 11.0, "stock_peak_mb": 10.0}}]},
        {"device": "cuda", "rows": [  # another device's figures are not mixed in
            {"presets": ["x"], "side": "encoder", "T": 64, "layer_auto": {"peak_mb": 99.0, "stock_peak_mb": 1.0}}]}]}
    out = added_memory.report(rows, "transformer_12_12", vocab=50, dim=4, by_length=by_length, tokens=1024)
    assert out["model_params"] == 1000 - 100 + 50 * 4
    (x,) = out["presets"]
    assert x["added_params"] == 11
    assert x["share"] == pytest.approx(11 / 1100)
    assert x["adam_mib"] == pytest.approx(11 * 16 / 2 ** 20)
    assert x["activation_mib"] == {64: pytest.approx(3 * 2.5 + 2 * 1.0)}
    table = added_memory.render(out)
    assert "| x | 11 | 1.000% |" in table
    assert "9.5 |" in table


def test_a_folder_without_a_dictionary_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        added_memory.main([str(tmp_path)])
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "dict.en.txt" in err


def test_runs_over_different_presets_are_read_together_and_other_batch_sizes_refused():
    a = {"tokens": 1024, "devices": [{"device": "cpu", "rows": [{"presets": ["x"]}]}]}
    b = {"tokens": 1024, "devices": [{"device": "cpu", "rows": [{"presets": ["y"]}]},
                                     {"device": "cuda", "rows": [{"presets": ["z"]}]}]}
    out = added_memory.merged([a, b])
    assert out["tokens"] == 1024
    assert [[r["presets"][0] for r in d["rows"]] for d in out["devices"]] == [["x", "y"], ["z"]]
    with pytest.raises(ValueError, match="different --layer-tokens"):
        added_memory.merged([a, dict(b, tokens=2048)])


def test_a_vocabulary_below_one_row_is_refused(tmp_path, capsys):
    (tmp_path / "dict.en.txt").write_text("a 1\n")
    with pytest.raises(SystemExit):
        added_memory.main([str(tmp_path), "--vocab", "0"])
    assert "--vocab" in capsys.readouterr().err


def test_a_benchmark_run_at_other_sizes_is_refused(tmp_path, capsys):
    """The per-layer figures of another width are not this shape's: refused, naming the flag and both values."""
    import json

    (tmp_path / "dict.en.txt").write_text("a 1\n")
    run = tmp_path / "b.json"
    run.write_text(json.dumps({"tokens": 1024, "dim": 512, "heads": 16, "ffn": 4096, "devices": []}))
    with pytest.raises(SystemExit):
        added_memory.main([str(tmp_path), "--by-length", str(run)])
    err = capsys.readouterr().err
    assert "--dim 512" in err and "1024" in err and "transformer_12_12" in err
    other = tmp_path / "c.json"
    other.write_text(json.dumps({"tokens": 1024, "dim": 512, "heads": 8, "ffn": 4096, "devices": []}))
    with pytest.raises(ValueError, match="different --heads"):
        added_memory.merged([json.loads(run.read_text()), json.loads(other.read_text())])
