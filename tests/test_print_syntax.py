"""fairseq-generate's --print-syntax: the parses a model's DBSA and LISA heads predict (SH-/TH- lines), recorded
while decoding, with the word-level UAS summary; the DBSA oracle (--dbsa-gold-parents) and its refusals.

In-process tests (``fast``) run the task's own build_generator/inference_step on a small random model; the end to
end tests run the stock fairseq-generate on one short training run."""
import os
import re
import shutil
import subprocess

import pytest
import torch
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.logging import progress_bar
from fairseq.sequence_generator import SequenceGenerator
from helpers import BIN, USER_DIR, build_task_and_model, short_runs

from syntrans.data.sidecars import Sidecar
from syntrans.generation.end_of_split import EndOfSplit
from syntrans.generation.recording import ParseRecordingGenerator
from syntrans.modules.attention_record import record_attention

# encoder layer 0: LISA head 0, DBSA heads 1-2; encoder layer 1: LISA head 0; decoder layers 0 and 1: DBSA heads 0-1
MODEL = ("dbsa_transformer_wmt_en_de", "--lisa-layers", "0,1", "--dbsa-heads", "2", "--dbsa-decoder-layers", "0,1")
SYNTAX_LINE = re.compile(r"^(SH|TH)-(\d+)\t(\w+@\d+)\t(.*)$")


def randomise_dbsa(model, std: float = 0.5, seed: int = 0) -> None:
    """Noise on every DBSA U: U starts as the identity, where a DBSA head is exactly a stock head."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("q_proj.U"):
                p.add_(torch.randn(p.shape, generator=g) * std)


def small_model(data, *extra, split="test"):
    task, model = build_task_and_model(data, *MODEL, *extra)
    randomise_dbsa(model)
    model.eval()
    task.load_dataset(split)
    return task, model, task.dataset(split)


def end_early(task, model, bonus: float = 2.0):
    """Add ``bonus`` to EOS's logit, so that the random model's hypotheses end at different steps (finished
    sentences leave the batch, beams are reordered more); without it they all run to the length limit."""
    eos = torch.tensor([task.target_dictionary.eos()])

    def hook(module, inputs, logits):  # logits (B, T, V)
        return logits.index_add(-1, eos, torch.full(logits.shape[:-1] + (1,), bonus, dtype=logits.dtype))

    model.decoder.output_projection.register_forward_hook(hook)


def gen_args(*extra):
    """fairseq-generate's generation config for the given flags."""
    parser = options.get_generation_parser()
    args = options.parse_args_and_arch(parser, ["x", "--user-dir", USER_DIR, "--task", "syntax_translation", *extra])
    return convert_namespace_to_omegaconf(args).generation


def batches(ds, size):
    for start in range(0, len(ds), size):
        yield ds.collater([ds[i] for i in range(start, min(start + size, len(ds)))])


def syntax_lines(text):
    """(kind SH/TH, id) → list of (tag, heads) in printed order, from every SH-/TH- line of ``text``."""
    out = {}
    for line in text.splitlines():
        m = SYNTAX_LINE.match(line)
        if m:
            heads = [int(x) for x in m.group(4).split()] if m.group(4) else []
            out.setdefault((m.group(1), int(m.group(2))), []).append((m.group(3), heads))
    return out


def printed_run(task, model, args, batch_size, results):
    """Run the task's --print-syntax generator over its split like fairseq-generate (writing into ``results``);
    returns (hypotheses by id, the syntax file's text)."""
    task.cfg.print_syntax, task.cfg.results_path, task.cfg.gen_subset = True, str(results), "test"
    gen = task.build_generator([model], args)
    ds = task.dataset("test")
    hypos_by_id = {}
    itr = task.get_batch_iterator(dataset=ds, max_sentences=batch_size).next_epoch_itr(shuffle=False)
    for sample in itr:
        hypos = task.inference_step(gen, [model], sample)
        hypos_by_id.update(zip(sample["id"].tolist(), hypos))
    return hypos_by_id, (results / "syntax-test.txt").read_text()


@pytest.mark.fast
def test_source_heads_are_the_recorded_argmax(tiny_data, tmp_path):
    """SH- lines printed through task.inference_step = the argmax of record_attention's probabilities of an
    encoder forward, per parse (LISA head; mean of the DBSA heads), left padding and EOS taken off here."""
    task, model, ds = small_model(tiny_data)
    _, text = printed_run(task, model, gen_args("--beam", "2", "--max-len-b", "3"), 16, tmp_path)
    printed = syntax_lines(text)
    attn0 = model.encoder.layers[0].self_attn
    assert attn0.block_keys == ("lisa", "dbsa") and (attn0.lisa.heads, attn0.dbsa.heads) == (slice(0, 1), slice(1, 3))
    checked = 0
    for sample in batches(ds, 16):
        src = sample["net_input"]["src_tokens"]
        enc = {k: v for k, v in sample["net_input"].items() if k != "prev_output_tokens"}
        with torch.no_grad(), record_attention(model) as probs:
            model.encoder(**enc)  # called as a module: record_attention's hooks fire
        expected_rows = {"lisa@0": probs["encoder", 0][:, 0], "dbsa@0": probs["encoder", 0][:, 1:3].mean(1),
                         "lisa@1": probs["encoder", 1][:, 0]}
        for b, sid in enumerate(sample["id"].tolist()):
            pads = int(src[b].eq(task.source_dictionary.pad()).sum())
            n = src.size(1) - pads - 1  # subwords before EOS
            lines = dict(printed["SH", sid])
            assert sorted(lines) == sorted(expected_rows)
            for tag, rows in expected_rows.items():
                keys = rows[b].argmax(-1)[pads: pads + n].tolist()
                expected = [k - pads if pads <= k < pads + n else -1 for k in keys]
                assert lines[tag] == expected, (sid, tag)
                checked += 1
    assert checked == 3 * len(ds)
    assert not any(kind == "TH" and tag.startswith("lisa") for (kind, _), v in printed.items() for tag, _ in v)


@pytest.mark.fast
def test_hypothesis_heads_are_those_of_a_teacher_forced_forward(tiny_data, tmp_path):
    """TH- lines (recorded step by step while beam searching, beams reordered and finished sentences dropped)
    = the argmax of the decoder's DBSA rows in a teacher-forced forward of each final hypothesis."""
    task, model, ds = small_model(tiny_data)
    end_early(task, model)
    hypos_by_id, text = printed_run(task, model, gen_args("--beam", "4", "--nbest", "4", "--max-len-b", "12"), 16,
                                    tmp_path)
    printed = syntax_lines(text)
    pad, eos = task.target_dictionary.pad(), task.target_dictionary.eos()
    lengths, checked = set(), 0
    for sample in batches(ds, 16):
        ids = sample["id"].tolist()
        for rank in range(4):
            hyps = [hypos_by_id[i][rank]["tokens"] for i in ids]
            lengths.update(len(h) for h in hyps)
            prev = torch.full((len(hyps), max(map(len, hyps))), pad)
            for b, h in enumerate(hyps):  # BOS (fairseq's EOS symbol) + the hypothesis without its EOS
                prev[b, : len(h)] = torch.cat([h.new_tensor([eos]), h[:-1]])
            net = {k: v for k, v in sample["net_input"].items() if not k.startswith("tgt_") and k != "prev_output_tokens"}
            with torch.no_grad(), record_attention(model) as probs:
                model(**net, prev_output_tokens=prev)
            for layer in (0, 1):
                rows = probs["decoder", layer][:, 0:2].mean(1)  # (B, T, T)
                for b, sid in enumerate(ids):
                    m = len(hyps[b]) - 1
                    expected = (rows[b].argmax(-1)[1: m + 1] - 1).tolist()
                    th = [heads for tag, heads in printed["TH", sid] if tag == f"dbsa@{layer}"]
                    assert len(th) == 4  # one per hypothesis, nbest order
                    assert th[rank] == expected, (sid, rank, layer)
                    checked += 1
    assert checked == 2 * 4 * len(ds)
    assert len(lengths) > 3  # hypotheses of many lengths: sentences finished at different steps


@pytest.mark.fast
def test_recording_generator_gives_the_stock_hypotheses(tiny_data):
    task, model, ds = small_model(tiny_data)
    end_early(task, model)
    stock = SequenceGenerator([model], task.target_dictionary, beam_size=3, max_len_b=10)
    ours = ParseRecordingGenerator([model], task.target_dictionary, beam_size=3, max_len_b=10)
    for sample in batches(ds, 16):
        a, b = stock.generate([model], sample), ours.generate([model], sample)
        for ha, hb in zip(a, b):
            assert len(ha) == len(hb) == 3
            for x, y in zip(ha, hb):
                assert torch.equal(x["tokens"], y["tokens"])
                assert torch.equal(x["positional_scores"], y["positional_scores"])
                assert torch.equal(x["score"], y["score"])
                assert "syntax" in y and "syntax" not in x


@pytest.mark.fast
def test_dbsa_and_lisa_oracles_give_the_gold_parse(tiny_data, tmp_path):
    """--dbsa-gold-parents and --lisa-gold-parents: the printed source parses are the gold ones, word UAS 100 %."""
    task, model, _ = small_model(tiny_data, "--dbsa-gold-parents", "--lisa-gold-parents")
    _, text = printed_run(task, model, gen_args("--beam", "2", "--max-len-b", "3"), 64, tmp_path)
    summary = [line for line in text.splitlines() if line.startswith("Syntax test: source")]
    assert len(summary) == 3
    for line in summary:
        m = re.search(r"word UAS = ([0-9.]+) \((\d+)/(\d+) words\)", line)
        assert m and m.group(1) == "100.00" and m.group(2) == m.group(3) and int(m.group(3)) > 100, line
    # the same model without the oracle: the random heads are far from the gold parse
    task, model, _ = small_model(tiny_data)
    _, text = printed_run(task, model, gen_args("--beam", "2", "--max-len-b", "3"), 64, tmp_path)
    assert "100.00" not in text


@pytest.mark.fast
def test_dbsa_oracle_refusals(tiny_data, tmp_path):
    with pytest.raises(ValueError, match="decoder side has no gold parse at generation"):
        build_task_and_model(tiny_data, "dbsa_transformer_wmt_en_de", "--dbsa-encoder-layers", "",
                             "--dbsa-gold-parents")
    bare = tmp_path / "data-bin"
    shutil.copytree(tiny_data, bare)
    for p in bare.glob("test.src-tgt.src.*.*"):  # the test split's source sidecars
        p.unlink()
    task, model = build_task_and_model(bare, "dbsa_transformer_wmt_en_de", "--dbsa-gold-parents")
    with pytest.raises(FileNotFoundError, match=r"split test .*src_parent_chain.*source sidecar"):
        task.load_dataset("test")
    task, model = build_task_and_model(bare, "dbsa_transformer_wmt_en_de")  # without the oracle it generates
    task.load_dataset("test")


@pytest.mark.fast
def test_print_syntax_refusals(tiny_data, tmp_path):
    task, model, _ = small_model(tiny_data)
    task.cfg.print_syntax, task.cfg.results_path = True, str(tmp_path)
    with pytest.raises(ValueError, match="--print-alignment"):
        task.build_generator([model], gen_args("--print-alignment"))
    with pytest.raises(ValueError, match="ensemble of 2"):
        task.build_generator([model, model], gen_args())
    plain, stock = build_task_and_model(tiny_data, "pascal_transformer_iwslt_de_en")
    plain.cfg.print_syntax = True
    with pytest.raises(ValueError, match="no LISA or DBSA heads"):
        plain.build_generator([stock], gen_args())


@pytest.mark.fast
@pytest.mark.parametrize("fmt", ["simple", "tqdm", "none", "json"])
def test_end_of_split_fires_once_after_the_last_batch(tiny_data, fmt):
    task, _, ds = small_model(tiny_data)
    events = []
    itr = EndOfSplit(task.get_batch_iterator(dataset=ds, max_sentences=7), lambda: events.append("end"))
    progress = progress_bar.progress_bar(itr.next_epoch_itr(shuffle=False), log_format=fmt, log_interval=100,
                                         default_log_format="simple")
    for sample in progress:
        events.append(len(sample["id"]))
    assert events[-1] == "end" and events.count("end") == 1
    assert sum(events[:-1]) == len(ds) and len(events) - 1 == len(itr)


# --------------------------------------------------------------------------- fairseq-generate end to end

def generate_stdout(data, ckpt, *extra):
    """fairseq-generate as the user runs it (test split, beam 3, at most 10 subwords: the short-trained model
    rarely stops); returns its stdout alone (fairseq logs to stderr, with timings that differ between runs)."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONWARNINGS"] = "ignore"
    argv = [str(BIN / "fairseq-generate"), str(data), "--user-dir", USER_DIR, "--task", "syntax_translation",
            "--path", str(ckpt), "--gen-subset", "test", "--beam", "3", "--max-len-b", "10", "--num-workers", "0",
            *map(str, extra)]
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, f"fairseq-generate failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


def without_syntax(text):
    return [line for line in text.splitlines() if not re.match(r"^(SH-|TH-|Syntax )", line)]


def gold_words(data, lang):
    """Words of the test split's ``lang`` side, from its head sidecar."""
    return int(Sidecar(str(data / f"test.src-tgt.{lang}.head")).sizes.sum())


@pytest.fixture(scope="module")
def trained(tiny_data, tmp_path_factory):
    return short_runs(tiny_data, tmp_path_factory, lambda name: ["--arch", *MODEL])("parses")[0]


@pytest.fixture(scope="module")
def printed(tiny_data, trained):
    """stdout of fairseq-generate with --print-syntax (batches of 64), without and with --remove-bpe."""
    return {bpe: generate_stdout(tiny_data, trained, "--batch-size", "64", "--print-syntax", *bpe)
            for bpe in ((), ("--remove-bpe",))}


@pytest.mark.slow
@pytest.mark.usefixtures("single_threaded_tools")
def test_generate_lines_unchanged_by_print_syntax(tiny_data, trained, printed):
    """The output minus the SH-/TH-/Syntax lines is fairseq's own, byte for byte, with and without --remove-bpe;
    one SH- line per source parse with one head per S- piece, one TH- line per decoder parse with one per H- piece."""
    for bpe, text in printed.items():
        assert without_syntax(text) == generate_stdout(tiny_data, trained, "--batch-size", "64", *bpe).splitlines()
    plain, removed = printed[()], printed[("--remove-bpe",)]
    assert syntax_lines(plain) == syntax_lines(removed)  # subword positions, whatever --remove-bpe does
    lines = syntax_lines(plain)
    src = dict(re.findall(r"^S-(\d+)\t(.*)$", plain, flags=re.M))
    hyp = dict((i, t) for i, _, t in re.findall(r"^H-(\d+)\t(\S+)\t(.*)$", plain, flags=re.M))
    assert len(src) == len(hyp) == 40
    for i, text in src.items():
        sh, th = lines["SH", int(i)], lines["TH", int(i)]
        assert [tag for tag, _ in sh] == ["lisa@0", "dbsa@0", "lisa@1"]
        assert [tag for tag, _ in th] == ["dbsa@0", "dbsa@1"]
        n, m = len(text.split()), len(hyp[i].split())
        assert all(len(h) == n and all(-1 <= k < n for k in h) for _, h in sh)
        assert all(len(h) == m and all(-1 <= k < m for k in h) for _, h in th)
    # the summary comes after the last sentence's lines and before fairseq's score line
    out = plain.splitlines()
    summary = [k for k, line in enumerate(out) if line.startswith("Syntax test:")]
    last_sentence = max(k for k, line in enumerate(out) if re.match(r"^[STHDP]-\d+\t", line))
    score = next(k for k, line in enumerate(out) if line.startswith("Generate test"))
    assert len(summary) == 5 and last_sentence < min(summary) and max(summary) < score
    words = gold_words(tiny_data, "src")
    for tag in ("lisa@0", "dbsa@0", "lisa@1"):
        assert re.search(rf"^Syntax test: source {tag} word UAS = [0-9.]+ \(\d+/{words} words\)$", plain, flags=re.M)
    for tag in ("dbsa@0", "dbsa@1"):
        assert re.search(rf"^Syntax test: target {tag}: no word UAS, the hypotheses have no gold parse", plain,
                         flags=re.M)


@pytest.mark.slow
@pytest.mark.usefixtures("single_threaded_tools")
def test_batch_1_prints_what_batch_64_does(tiny_data, trained, printed, tmp_path):
    """--batch-size 1 prints the same SH-/TH- lines by id as batches of 64; with --results-path they go to
    syntax-test.txt and fairseq's generate-test.txt has none."""
    out = generate_stdout(tiny_data, trained, "--batch-size", "1", "--print-syntax", "--results-path", tmp_path)
    assert not re.search(r"^(SH|TH)-", out, flags=re.M)
    assert not re.search(r"^(SH|TH)-|^Syntax ", (tmp_path / "generate-test.txt").read_text(), flags=re.M)
    text = (tmp_path / "syntax-test.txt").read_text()
    assert syntax_lines(text) == syntax_lines(printed[()])
    assert len(syntax_lines(text)) == 2 * 40
    summary = [line for line in printed[()].splitlines() if line.startswith("Syntax test:")]
    assert [line for line in text.splitlines() if line.startswith("Syntax test:")] == summary


@pytest.mark.slow
@pytest.mark.usefixtures("single_threaded_tools")
def test_score_reference_scores_the_target_parse_and_the_oracle(tiny_data, trained):
    """--score-reference: TH- lines parse the reference (one head per T- piece), and the target's word UAS is
    printed; the oracles through --model-overrides give source word UAS 100 %."""
    out = generate_stdout(tiny_data, trained, "--batch-size", "64", "--print-syntax", "--score-reference",
                          "--model-overrides", "{'dbsa': {'gold_parents': True}, 'lisa': {'gold_parents': True}}")
    lines = syntax_lines(out)
    ref = dict(re.findall(r"^T-(\d+)\t(.*)$", out, flags=re.M))
    assert len(ref) == 40
    for i, text in ref.items():
        th = lines["TH", int(i)]
        assert [tag for tag, _ in th] == ["dbsa@0", "dbsa@1"]
        assert all(len(h) == len(text.split()) for _, h in th)
    src_words, tgt_words = gold_words(tiny_data, "src"), gold_words(tiny_data, "tgt")
    for tag in ("lisa@0", "dbsa@0", "lisa@1"):
        assert f"Syntax test: source {tag} word UAS = 100.00 ({src_words}/{src_words} words)" in out.splitlines()
    for tag in ("dbsa@0", "dbsa@1"):
        m = re.search(rf"^Syntax test: target {tag} word UAS = [0-9.]+ \((\d+)/(\d+) words\), on leftward arcs and "
                      rf"roots = [0-9.]+ \((\d+)/(\d+) words\)$", out, flags=re.M)
        assert m, tag
        hits, total, hits_left, total_left = map(int, m.groups())
        assert total == tgt_words and 0 < total_left < total and hits_left <= hits
