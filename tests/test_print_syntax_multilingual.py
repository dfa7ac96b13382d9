"""--print-syntax under ``syntax_translation_multi_simple_epoch`` (docs/commands.md, Fine-tuning a released
multilingual model): the SH-/TH- lines give each parse per word piece of the sentence, the language tokens left out
(a parent on one is -1, as EOS), whether the token is put before the sentence or replaces its EOS and BOS; the
word-level UAS follows the generation pair's gold parses.

The expected source parents come from record_attention's probabilities of an encoder forward, the word pieces found
here in each row's tokens (neither padding, EOS nor a language token)."""
import re

import pytest
import torch
from fairseq.dataclass.configs import GenerationConfig
from multilingual import LANGS, generation_task_and_model

from syntrans.modules.attention_record import record_attention

DBSA = ["--dbsa-encoder-layers", "0", "--dbsa-decoder-layers", "0", "--dbsa-heads", "1"]
LINE = re.compile(r"^(SH|TH)-(\d+)\t(\w+@\d+)\t(.*)$")
OPTIONS = {"prepended": ["--encoder-langtok", "src", "--decoder-langtok"],
           "replacing EOS and BOS": ["--encoder-langtok", "src", "--decoder-langtok", "--lang-tok-replacing-bos-eos"]}


def run(data, flags, results):
    task, model = generation_task_and_model(data, *flags, *DBSA)
    with torch.no_grad():  # a random U far from the identity: parses that differ from the stock attention's
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    task.args.print_syntax, task.args.results_path, task.args.gen_subset = True, str(results), "test"
    generator = task.build_generator([model], GenerationConfig(beam=2, max_len_b=5))
    ds = task.dataset("test")
    samples, hypos_by_id = [], {}
    for sample in task.get_batch_iterator(dataset=ds, max_sentences=4).next_epoch_itr(shuffle=False):
        hypos = task.inference_step(generator, [model], sample)
        samples.append(sample)
        hypos_by_id.update(zip(sample["id"].tolist(), hypos))
    return task, model, samples, hypos_by_id, (results / "syntax-test.txt").read_text()


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_parses_are_per_word_piece_without_language_tokens(multilingual_data, tmp_path, option):
    task, model, samples, hypos_by_id, text = run(multilingual_data, OPTIONS[option], tmp_path)
    lines = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            lines[m.group(1), int(m.group(2)), m.group(3)] = [int(x) for x in m.group(4).split()]
    d = task.source_dictionary
    langtoks = {d.index(f"__{x}__") for x in LANGS}
    assert len(langtoks) == len(LANGS) and d.unk() not in langtoks
    checked = 0
    for sample in samples:
        net = sample["net_input"]
        src = net["src_tokens"]
        assert any(t in langtoks for t in src.flatten().tolist())  # the sentences carry their language token
        enc = {k: v for k, v in net.items() if k != "prev_output_tokens"}
        with torch.no_grad(), record_attention(model) as probs:
            model.encoder(**enc)
        rows = probs["encoder", 0][:, 0]  # (B, T, T) the DBSA head
        for b, sid in enumerate(sample["id"].tolist()):
            words = [p for p, t in enumerate(src[b].tolist()) if t not in langtoks | {d.pad(), d.eos()}]
            keys = rows[b].argmax(-1)[words].tolist()
            expected = [words.index(k) if k in words else -1 for k in keys]
            assert lines["SH", sid, "dbsa@0"] == expected, (sid, option)
            hypo = hypos_by_id[sid][0]["tokens"].tolist()
            pieces = [t for t in hypo[:-1] if t not in langtoks]  # without EOS and the language token
            assert len(lines["TH", sid, "dbsa@0"]) == len(pieces)
            assert all(-1 <= h < len(pieces) for h in lines["TH", sid, "dbsa@0"])
            checked += 1
    assert checked == len(task.dataset("test"))
    summary = re.search(r"Syntax test: source dbsa@0 word UAS = [\d.]+ \((\d+)/(\d+) words\)", text)
    assert summary, text[-500:]
    # scored against the generation pair's own gold parses: every word of its source side
    words = (multilingual_data.parent / "raw" / "en-de" / "test.en").read_text().split()
    assert int(summary.group(2)) == len(words)
