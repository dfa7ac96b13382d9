"""Every config equals what its paper states (syntrans.reproduce.published), value by value, or says why not; where the
paper is silent and the authors' released code sets a value (syntrans.reproduce.released_code), the config takes it
and names the file, or says why not; every flag says where it comes from; the batch of the paper survives any number
of GPUs; each table's seeds and checkpoint selection are the paper's, else the authors' code's."""
from pathlib import Path
from typing import List

import pytest

from syntrans.reproduce.batching import batch_flags, world_size_of
from syntrans.reproduce.config_file import CONFIG_DIR, read_args_file
from syntrans.reproduce.published import stated
from syntrans.reproduce.released_code import released
from syntrans.reproduce.tables import TABLES

pytestmark = pytest.mark.fast

CONFIGS = sorted(p for p in CONFIG_DIR.rglob("*.args") if p.name != "demo.args")
PLUMBING = {"--task", "--criterion"}  # the plugin's own task and criterion: no paper setting


def _same(found, wanted) -> bool:
    if found is None or wanted is None:
        return found is wanted
    try:
        return float(found) == float(wanted)
    except ValueError:
        return found.replace(" ", "") == wanted.replace(" ", "")


def _record_name(rel: str) -> str:
    """The record a config is checked against: +MULTI-TASK (``pascal/<ds>.multitask.args``) is the Transformer
    baseline trained on other data (Bugliarello & Okazaki 2020, §3.1 "a standard Transformer", App. A "All
    experiments are based on the base Transformer architecture"), so its record is the baseline's."""
    return rel.replace(".multitask.args", ".baseline.args") if rel.startswith("pascal/") else rel


def problems(path: Path) -> List[str]:
    """Where a config departs from its paper's record without saying so, or misattributes a value."""
    rel = path.relative_to(path.parents[1]).as_posix()
    cfg = read_args_file(path)
    record = stated(_record_name(rel))
    out = []
    found_of = {"tokens-per-update": None if cfg.tokens_per_update is None else str(cfg.tokens_per_update)}
    for key in ("--beam", "--lenpen"):
        found_of[f"decode {key}"] = cfg.decode[cfg.decode.index(key) + 1] if key in cfg.decode else None
    note_of = lambda key: cfg.notes.get("decode" if key.startswith("decode ") else key, "")  # noqa: E731
    for key, st in record.items():
        found = found_of[key] if key in found_of else cfg.value(key)
        if not _same(found, st.value) and not note_of(key).startswith("deviates"):
            want = "absent" if st.value is None else repr(st.value)
            out.append(f"{rel}: {key} is {found!r}, the paper states {want} ({st.where}) and no '# deviates: why' note")
    # where the paper is silent, the authors' released code's value (or a '# deviates' note saying why not)
    code = released(rel)
    code_values = code.values if code is not None and not code.none else {}
    for key, (value, where) in code_values.items():
        if key in record or key == "checkpoint" or key == "decode --lenpen":
            continue
        found = found_of[key] if key in found_of else cfg.value(key)
        if not _same(found, value) and not note_of(key).startswith("deviates"):
            want = "absent" if value is None else repr(value)
            out.append(f"{rel}: {key} is {found!r}, the paper is silent and the authors' code has {want} ({where}) "
                       "and no '# deviates: why' note")
    # every flag (and directive) says where it comes from, and says it truly
    keys = [f for f in cfg.flags if f.startswith("--") and f not in PLUMBING]
    keys += [k for k in ("tokens-per-update", "decode --beam") if found_of[k] is not None]
    for key in keys:
        note = note_of(key)
        st = record.get(key)
        if note.startswith("authors' code: "):
            if st is not None:
                out.append(f"{rel}: {key} says '{note}' but the paper states it ({st.where}: {st.value!r})")
            elif key not in code_values:
                out.append(f"{rel}: {key} says '{note}' but the record of the authors' code has no {key}")
            elif note[len("authors' code: "):] != code_values[key][1]:
                out.append(f"{rel}: {key} says '{note}', the record names {code_values[key][1]!r}")
        elif note.startswith("ours") and st is None and key in code_values:
            out.append(f"{rel}: {key} says 'ours' but the authors' code sets it ({code_values[key][1]}): follow it "
                       "('# authors' code: <file>') or say why not ('# deviates from the authors' code: …')")
        elif note.startswith("stated: "):
            if st is None:
                out.append(f"{rel}: {key} says '{note}' but the paper's record states no {key}")
            elif note[len("stated: "):] != st.where:
                out.append(f"{rel}: {key} says '{note}', the record's location is {st.where!r}")
        elif note.startswith("ours"):
            if st is not None:
                out.append(f"{rel}: {key} says 'ours' but the paper states it ({st.where}: {st.value!r})")
        elif not note.startswith("deviates"):
            out.append(f"{rel}: {key} has no '# stated: <where>', '# authors' code: <file>', '# ours…' or "
                       f"'# deviates…' note (found {note!r})")
    return out


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_config_equals_its_paper(path):
    assert problems(path) == []


def test_checker_finds_an_unmarked_departure(tmp_path):
    """The check above can fail: a stated value changed, a stated switch dropped, an 'ours' that the paper states."""
    src = (CONFIG_DIR / "pascal" / "nc11_en_de.args").read_text(encoding="utf-8")
    bad = (src.replace("--lr 0.0007", "--lr 0.001").replace("--pascal-heads 2 ", "--pascal-heads 3 ")
           .replace("--dropout 0.3                                     # stated: App. A",
                    "--dropout 0.3   # ours: a guess")
           .replace("(stated: App. A)\n--task", "(ours: decoding)\n--task"))
    folder = tmp_path / "configs" / "pascal"
    folder.mkdir(parents=True)
    (folder / "nc11_en_de.args").write_text(bad, encoding="utf-8")
    found = "\n".join(problems(folder / "nc11_en_de.args"))
    assert "--lr is '0.001', the paper states '0.0007' (Table 7)" in found
    assert "--pascal-heads is '3'" in found
    assert "--dropout says 'ours' but the paper states it (App. A" in found
    # a deviation with a reason is accepted
    ok = src.replace("--lr 0.0007                                        # stated: Table 7",
                     "--lr 0.001   # deviates from Table 7: a test")
    (folder / "nc11_en_de.args").write_text(ok, encoding="utf-8")
    assert problems(folder / "nc11_en_de.args") == []


def test_every_config_is_in_a_table_and_every_table_config_exists():
    used = {s.config for t in TABLES.values() for r in t.rows for s in r.systems}
    present = {p.relative_to(CONFIG_DIR).as_posix() for p in CONFIGS}
    assert used - present == set()
    # +MULTI-TASK's configs (pascal/<ds>.multitask.args) may wait for their Table 1 systems
    assert {p for p in present - used if not p.endswith(".multitask.args")} == set()


@pytest.mark.parametrize("ds,side", [("aspec_en_ja", "src"), ("ldc_en_zh", "src"), ("aspec_ja_en", "tgt"),
                                     ("ldc_zh_en", "tgt")])
def test_nsd_goes_on_the_english_side(ds, side):
    """Ma et al. 2019, §4.1: only English is parsed, so the NSD flags of every row name one side only."""
    other = "tgt" if side == "src" else "src"
    for row in range(2, 16):
        flags = read_args_file(CONFIG_DIR / "nsd" / f"{ds}.row{row:02d}.args").flags
        mine = [f for f in flags if f.startswith(f"--nsd-{side}-")]
        assert mine, (ds, row)
        assert not [f for f in flags if f.startswith(f"--nsd-{other}-")], (ds, row)


def test_nsd_rows_use_the_unweighted_loss():
    """Eq. 17 sums L_NMT + L_dist + L_entdist unweighted: rows 2-12 with a classifier weigh both 1, rows 13-15 drop
    the losses their Loss column lacks."""
    expect = {12: ("1.0", "1.0"), 13: ("0.0", "0.0"), 14: ("1.0", "0.0"), 15: ("0.0", "1.0")}
    for row, (ce, dist) in expect.items():
        cfg = read_args_file(CONFIG_DIR / "nsd" / f"aspec_en_ja.row{row:02d}.args")
        assert (cfg.value("--nsd-ce-weight"), cfg.value("--nsd-dist-weight")) == (ce, dist), row


@pytest.mark.parametrize("tokens,max_tokens,world", [(32000, 4096, 1), (32768, 8192, 2), (25000, 4096, 2),
                                                      (6000, 4096, 1), (16384, 8192, 8), (12000, 12000, 1)])
def test_batch_flags_keep_the_papers_tokens_per_update(tokens, max_tokens, world):
    flags, message = batch_flags(tokens, max_tokens, world)
    per_gpu, freq = int(flags[1]), int(flags[3])
    got = per_gpu * world * freq
    assert per_gpu <= max_tokens  # never more than the config's per-GPU budget
    assert tokens <= got < tokens + world * freq  # the paper's batch, up to rounding each share up
    assert freq == 1 or (freq - 1) * max_tokens * world < tokens  # the fewest accumulation steps that fit
    assert f"--update-freq {freq}" in message and str(tokens) in message


def test_batch_flags_by_hand():
    assert batch_flags(32000, 4096, 1)[0] == ["--max-tokens", "4000", "--update-freq", "8"]
    assert batch_flags(32768, 8192, 2)[0] == ["--max-tokens", "8192", "--update-freq", "2"]
    assert batch_flags(16384, 8192, 4)[0] == ["--max-tokens", "4096", "--update-freq", "1"]
    with pytest.raises(ValueError, match="world size must be a positive integer, found 0"):
        batch_flags(1000, 100, 0)


def test_world_size_from_the_flags():
    assert world_size_of(["--fp16", "--distributed-world-size", "4"]) == 4
    assert world_size_of(["--distributed-world-size=3"]) == 3


def test_config_file_command_prints_the_batch_flags(capsys):
    from syntrans.reproduce.config_file import main

    assert main([str(CONFIG_DIR / "syncattn" / "wmt14_en_de.args"), "--world-size", "2"]) == 0
    out, err = capsys.readouterr()
    flags = out.split()
    assert flags[-4:] == ["--max-tokens", "3125", "--update-freq", "4"]  # 25,000 tokens (App. A) on 2 GPUs
    assert "25000 tokens per update" in err and "#" not in out


def test_config_file_command_takes_a_name_under_the_configs(capsys, tmp_path, monkeypatch):
    """A name (with or without the leading configs/) reads the same file as its path, from any folder; a missing one
    is an error naming both places looked at."""
    from syntrans.reproduce.config_file import main

    monkeypatch.chdir(tmp_path)  # no configs/ here: the name resolves under CONFIG_DIR
    outs = []
    for arg in (str(CONFIG_DIR / "syncattn" / "wmt14_en_de.args"), "syncattn/wmt14_en_de.args",
                "configs/syncattn/wmt14_en_de.args"):
        assert main([arg, "--world-size", "2"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2] and outs[0]
    assert main(["syncattn/nope.args"]) == 2
    err = capsys.readouterr().err
    assert "syncattn/nope.args does not exist nor " in err and str(CONFIG_DIR / "syncattn" / "nope.args") in err


def test_runner_passes_the_batch_and_says_so(tmp_path):
    from syntrans.reproduce.runner import Options, Reproduction

    logs = []
    rep = Reproduction(Options("pascal_table1", work_dir=tmp_path, train_args=["--distributed-world-size", "2"]),
                       log=logs.append)
    cfg = read_args_file(CONFIG_DIR / "pascal" / "wmt16_en_de.args")
    assert rep.batch(cfg, "x") == ["--max-tokens", "2000", "--update-freq", "8"]  # 2048 per GPU: the authors' code
    assert "32000 tokens per update" in logs[-1]
    rep = Reproduction(Options("pascal_table1", work_dir=tmp_path, train_args=["--update-freq", "2"]), log=logs.append)
    assert rep.batch(cfg, "x") == [] and "not enforced" in logs[-1]


def test_seeds_and_checkpoints_follow_the_paper(tmp_path):
    from syntrans.reproduce.runner import Options, Reproduction
    from syntrans.reproduce.tables import IWSLT_DE_EN, WMT14_EN_DE

    rep = Reproduction(Options("distance_table1", work_dir=tmp_path), log=lambda m: None)
    assert rep.protocol(IWSLT_DE_EN) == ([1, 2, 3, 4, 5], None)  # 5 seeds (Hou et al. 2022, §4.2)
    assert rep.protocol(WMT14_EN_DE) == ([1], 5)  # one run, the last 5 checkpoints (§4.2)
    rep = Reproduction(Options("gated_table6", work_dir=tmp_path), log=lambda m: None)
    assert rep.protocol(IWSLT_DE_EN) == ([1], 10)  # one seed, the last 10 epochs (Table 6)
    rep = Reproduction(Options("distance_table1", work_dir=tmp_path, seeds=[7], average_last=2), log=lambda m: None)
    assert rep.protocol(IWSLT_DE_EN) == ([7], 2)  # the user's choice wins


def test_checkpoint_last_where_the_paper_is_silent_and_the_authors_code_decodes_it(tmp_path):
    """Bugliarello & Okazaki and Deguchi et al. state no checkpoint rule; their released code decodes
    checkpoint_last.pt (eval.sh, README.rst), so ours does, and says so; a smoke run keeps checkpoint_best.pt."""
    from syntrans.reproduce.published import protocol
    from syntrans.reproduce.runner import Options, Reproduction
    from syntrans.reproduce.tables import NC11_EN_DE, WMT14_EN_DE

    for table, ds, where in (("pascal_table1", NC11_EN_DE, "eval.sh"), ("syncattn_table1", WMT14_EN_DE, "README.rst")):
        p = protocol(table, ds.key)
        assert p.checkpoint == "last" and "authors' code" in p.where
        assert "checkpoint_last.pt" in p.where and where in p.where
        rep = Reproduction(Options(table, work_dir=tmp_path), log=lambda m: None)
        assert rep.protocol(ds) == ([1], None) and rep.last_checkpoint[ds.key]
        assert rep.checkpoint(tmp_path, "x", None, rep.last_checkpoint[ds.key]).name == "checkpoint_last.pt"
        assert "checkpoint_last.pt (the end of training)" in rep.protocols[ds.title]
        smoke = Reproduction(Options(table, work_dir=tmp_path, smoke=True, synthetic=True), log=lambda m: None)
        smoke.protocol(ds)
        assert not smoke.last_checkpoint[ds.key]


PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"
PAPER_TEXT = {"distance_mask": "hou2022_distance_mask.txt", "gated": "hou_gated.txt", "pascal": "bugliarello2020_pascal.txt",
              "lisa": "bugliarello2020_pascal.txt", "dbsa": "deguchi2021_syncattn.txt",
              "syncattn": "deguchi2021_syncattn.txt", "nsd": "ma2019_nsd.txt"}


@pytest.mark.skipif(not PAPERS.is_dir(), reason=f"the papers' text is not at {PAPERS}")
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stated_quote_is_the_papers_own_words(path):
    """A 'stated' note (and the record it is checked against) that quotes its paper ('…') quotes it word for word:
    a setting is marked stated only where the paper's text says it (e.g. the gated paper's SLA: its gate per head of
    each layer and no regularisation are stated, the gate's form is not)."""
    import re

    from syntrans.reproduce.published import OURS_FOLDERS

    if path.parent.name in OURS_FOLDERS:  # our own recipe (the Multi30k table): no paper, nothing marked stated
        assert not any(n.startswith("stated") for n in read_args_file(path).notes.values()), path
        return
    raw = (PAPERS / PAPER_TEXT[path.parent.name]).read_text(encoding="utf-8")
    text = " ".join(re.sub(r"(\w)-\n(\w)", r"\1\2", raw).split()) + "\n" + " ".join(
        re.sub(r"(\w)-\n(\w)", r"\1-\2", raw).split())
    cfg = read_args_file(path)
    rel = path.relative_to(path.parents[1]).as_posix()
    wheres = [n for n in cfg.notes.values() if n.startswith("stated")] + [s.where for s in stated(_record_name(rel)).values()]
    for where in wheres:
        for quote in re.findall(r"'([^']+)'", where):
            for piece in quote.split("…"):
                assert " ".join(piece.split()) in text, (where, piece)


def test_the_sla_configs_mark_the_gates_form_as_our_reading():
    """The gated paper states a naive gate per head of each layer with no regularisation, not its form: --gate-layers
    (this paper's gate network over the SLA heads) is marked as our reading and names Li et al.'s per-token gate."""
    for path in sorted((CONFIG_DIR / "gated").glob("*.sla.args")):
        cfg = read_args_file(path)
        assert cfg.notes["--gate-layers"].startswith("ours: a reading of §5.2") and "--sla-token-gate" in \
            cfg.notes["--gate-layers"]
        assert cfg.notes["--gate-mode"] == "stated: §5.2 ('a naive gating network')"
        assert cfg.value("--sla-window") == "word" and cfg.value("--sla-token-gate") is None
