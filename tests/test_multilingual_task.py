"""The multilingual task (issue 51): ``syntax_translation_multi_simple_epoch`` reads each language pair's sidecars
beside fairseq's binarized data, and every syntax feature follows the language tokens under each langtok option of
``translation_multi_simple_epoch`` (encoder token before the source or in place of its EOS, decoder token before the
target or in place of the decoder's BOS), in training batches of several pairs and in a generation split.

The expected values are found without the code under test: each batch row's sentence is located in its own tokens
(the source ends one slot before the row's end; the target starts after its language tokens), matched to its pair and
sentence by its tokens, and its features built from its sidecars as the bilingual task builds them; a feature one
token off fails."""
import pytest
from fairseq import options, tasks
from fairseq.data import Dictionary, data_utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from multilingual import LANG_PAIRS, LANGS

import syntrans  # noqa: F401  (registers the task)
from syntrans.data import sidecars
from syntrans.data.features import FEATURES, FeatureNeeds

pytestmark = pytest.mark.fast

SOURCE = ("src_gaps", "src_parent_middle", "src_parent_first", "src_parent_chain", "src_word_first", "src_dep_label",
          "src_nsd_dS")
TARGET = ("tgt_nsd_out_dR",)  # aligned with the target
DECODER_INPUT = ("tgt_parent_chain", "tgt_nsd_in_dD")  # aligned with the decoder input (BOS first)

#: langtok option → the flags, and whether a token is put before the source, before the target
OPTIONS = {
    "encoder src, decoder prepended": (["--encoder-langtok", "src", "--decoder-langtok"], 1, 1),
    "encoder tgt, no decoder token": (["--encoder-langtok", "tgt"], 1, 0),
    "replacing EOS and BOS": (["--encoder-langtok", "src", "--decoder-langtok", "--lang-tok-replacing-bos-eos"], 0, 0),
    "no language tokens": ([], 0, 0),
}


@pytest.fixture(scope="module")
def data(multilingual_data):
    return multilingual_data


def setup(data, flags, *pair):
    """The task as fairseq-train (no ``pair``) or fairseq-generate (``pair`` = (src, tgt)) sets it up, every feature
    requested as a model reading them all would."""
    argv = [str(data), "--task", "syntax_translation_multi_simple_epoch", "--arch", "transformer",
            "--lang-pairs", LANG_PAIRS, "--langs", ",".join(LANGS), *flags]
    if pair:
        argv += ["-s", pair[0], "-t", pair[1]]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    task.data_manager.request(FeatureNeeds(required=set(SOURCE + TARGET + DECODER_INPUT)))
    return task


def expected(data, split, tokens_src, tokens_tgt):
    """(src features, tgt features) built from the sidecars of the pair and sentence whose binarized tokens are
    these, unshifted (as the bilingual task builds them)."""
    vocab = Dictionary.load(str(data / "dict.en.txt"))  # the fixed dictionary, as fairseq-preprocess copied it
    for pair in LANG_PAIRS.split(","):
        src, tgt = pair.split("-")
        a, b = (src, tgt) if (data / f"{split}.{src}-{tgt}.{src}.idx").exists() else (tgt, src)
        bins = {lang: data_utils.load_indexed_dataset(str(data / f"{split}.{a}-{b}.{lang}"), vocab) for lang in (src, tgt)}
        for i in range(len(bins[src])):
            if bins[src][i][:-1].tolist() == tokens_src and bins[tgt][i][:-1].tolist() == tokens_tgt:
                sides = {lang: sidecars.load_side(str(data), split, a, b, lang) for lang in (src, tgt)}
                out = {}
                for name in SOURCE + TARGET + DECODER_INPUT:
                    f = FEATURES[name]
                    side = sides[src if f.side == "source" else tgt]
                    out[name] = f.build({k: side[k][i] for k in f.needs})
                return out
    raise AssertionError(f"no sentence of {split} has these tokens: {tokens_src} / {tokens_tgt}")


def check_batch(data, split, task, batch, before_src, before_tgt):
    langtoks = {task.source_dictionary.index(f"__{x}__") for x in LANGS}
    pad = task.source_dictionary.pad()
    net = batch["net_input"]
    for r in range(net["src_tokens"].size(0)):
        row, target = net["src_tokens"][r].tolist(), batch["target"][r].tolist()
        n = int(net["src_lengths"][r]) - 1 - before_src  # the sentence's pieces: between the tokens before and EOS
        start = len(row) - 1 - n  # left padding: the sentence ends one slot (EOS, or the token in its place) early
        assert all(t == pad for t in row[:start - before_src]) and all(t in langtoks for t in row[start - before_src:start])
        t0 = sum(1 for t in target[:before_tgt] if t in langtoks)  # the target starts after its language tokens
        assert t0 == before_tgt
        m = target.index(task.target_dictionary.eos(), t0) - t0
        want = expected(data, split, row[start:start + n], target[t0:t0 + m])
        for name in SOURCE + TARGET + DECODER_INPUT:
            f, got = FEATURES[name], net[name][r].tolist()
            ref = want[name].tolist()
            if name == "src_gaps":  # gaps between neighbours: (T − 1,), the gap before the sentence is a language token's
                assert got[start:start + n] == ref[:n], (name, r)
                if before_src:
                    assert got[start - 1] == f.before, (name, r)
                continue
            at, lo = (start, 0) if f.side == "source" else (t0, 1 if name in DECODER_INPUT else 0)
            shift = at if f.positions else 0
            span = n + 1 if f.side == "source" else m + 1
            moved = [v + shift if f.positions and v >= 0 else v for v in ref[lo:span]]
            assert got[at + lo:at + span] == moved, (name, r, got, ref, at)
            assert all(v == f.before for v in got[at + lo - (before_src if f.side == "source" else before_tgt):at + lo]), \
                (name, r, got)
            if name in DECODER_INPUT:
                assert got[0] == ref[0], (name, r)  # the decoder's BOS slot


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_features_follow_the_language_tokens_in_training_batches(option, data):
    """Training (three pairs, one a reversed direction, their sentences numbered apart and mixed in one batch)."""
    flags, before_src, before_tgt = OPTIONS[option]
    task = setup(data, flags)
    task.load_dataset("train")
    ds = task.dataset("train")
    ds.set_epoch(1)
    batch = ds.collater([ds[i] for i in range(len(ds))])
    assert batch["net_input"]["src_tokens"].size(0) == len(ds) == 120
    assert len(set(batch["id"].tolist())) < len(ds)  # ids repeat across the pairs: the order is found otherwise
    check_batch(data, "train", task, batch, before_src, before_tgt)
    if "--lang-tok-replacing-bos-eos" in flags:  # fairseq's own collater put the tokens in the EOS and BOS slots
        assert set(batch["net_input"]["src_tokens"][:, -1].tolist()) <= {task.source_dictionary.index(f"__{x}__")
                                                                         for x in LANGS}
        assert set(batch["net_input"]["prev_output_tokens"][:, 0].tolist()) == {
            task.target_dictionary.index(f"__{x}__") for x in ("de", "fr", "en")}


@pytest.mark.parametrize("option", ["encoder src, decoder prepended", "replacing EOS and BOS"])
def test_features_follow_the_language_tokens_in_a_generation_split(option, data):
    """fairseq-generate's set-up (``-s en -t de``, the test split), batched as generation batches it: every sentence
    kept although fairseq-fixed would drop those beyond a multiple of ``--required-batch-size-multiple``."""
    flags, before_src, before_tgt = OPTIONS[option]
    task = setup(data, flags, "en", "de")
    task.load_dataset("test")
    ds = task.dataset("test")
    batches = list(ds.batch_by_size(ds.ordered_indices(), max_sentences=3, required_batch_size_multiple=8))
    assert sorted(i for b in batches for i in b) == list(range(len(ds)))
    for b in batches:
        check_batch(data, "test", task, ds.collater([ds[i] for i in b]), before_src, before_tgt)
