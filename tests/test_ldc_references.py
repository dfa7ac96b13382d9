"""Ma et al. 2019's LDC test set (§4.1: NIST MT03+MT04+MT05) as syntrans-prepare lays it out: zh→en keeps the four
English references of the NIST sets for multi-reference BLEU, and the layout check names what is missing."""
from pathlib import Path

import pytest


def _fake_ldc(raw: Path, refs: int = 4, test_lines: int = 6):
    raw.mkdir()
    for split, n in (("train", 30), ("valid", 5), ("test", test_lines)):
        (raw / f"{split}.zh").write_text("".join(f"中文 句子 {split} {i}\n" for i in range(n)), encoding="utf-8")
        (raw / f"{split}.en").write_text("".join(f"English sentence {split} {i} .\n" for i in range(n)), encoding="utf-8")
    for k in range(2, refs + 1):
        (raw / f"test.en.{k}").write_text("".join(f"Reference {k} of segment {i} .\n" for i in range(test_lines)),
                                          encoding="utf-8")


def test_ldc_zh_en_keeps_the_four_references_and_the_layout_check_names_them(tmp_path):
    """zh→en needs test.en.2-4 beside test.en (the missing-file message names them and MT03+MT04+MT05), and the
    prepared data keeps them as references 2-4 of the test set, line by line; en→zh needs none."""
    from syntrans.prep import PrepError, prepare_corpus

    _fake_ldc(tmp_path / "raw3", refs=3)
    kw = dict(corpus="ldc", src="zh", tgt="en", smoke=True, parser="right-branching", log=lambda m: None,
              smoke_sizes={"train": 30, "valid": 5, "test": 6})
    with pytest.raises(PrepError) as err:
        prepare_corpus(out_dir=tmp_path / "a", raw_dir=tmp_path / "raw3", **kw)
    assert f"{tmp_path / 'raw3' / 'test.en.4'}" in str(err.value) and "NIST MT03 + MT04 + MT05" in str(err.value)
    assert "test.en.2" not in str(err.value).split("\n")[1]  # only the missing one is listed
    _fake_ldc(tmp_path / "raw")
    p = prepare_corpus(out_dir=tmp_path / "b", raw_dir=tmp_path / "raw", **kw)
    assert [x.name for x in p.ref_test_more] == ["test.en.2", "test.en.3", "test.en.4"]
    for k, path in enumerate(p.ref_test_more, 2):
        assert path.read_text(encoding="utf-8").splitlines() == [f"Reference {k} of segment {i} ." for i in range(6)]
    assert p.ref_test.read_text(encoding="utf-8").splitlines()[0] == "English sentence test 0 ."
    back = prepare_corpus(out_dir=tmp_path / "c", raw_dir=tmp_path / "raw3", **{**kw, "src": "en", "tgt": "zh"})
    assert back.ref_test_more == [] and back.ref_test.name == "test.zh"
    (tmp_path / "raw" / "test.en.3").write_text("one line\n", encoding="utf-8")
    with pytest.raises(PrepError, match=r"test\.en\.3: 1 lines, but the test set has 6 segments; expected reference 3"):
        prepare_corpus(out_dir=tmp_path / "d", raw_dir=tmp_path / "raw", **kw)
