"""NSD on the target side under ``translation_multi_simple_epoch``'s decoder language token (``--decoder-langtok``):
in training the token's slot of the decoder's NSD input holds the filler NO_NSD (BOS has BOS_NSD); decoding must feed
the same, and the model's own prediction only from the first word on. With ``--lang-tok-replacing-bos-eos`` the token
takes BOS's slot and nothing is forced between BOS and the sentence."""
import pytest
import torch
from fairseq import options, tasks
from fairseq.dataclass.configs import GenerationConfig
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from multilingual import LANG_PAIRS, LANGS

from syntrans.syntax.nsd_labels import BOS_NSD, NO_NSD

SMALL = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
         "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
         "--decoder-attention-heads", "2", "--share-all-embeddings"]
NSD = ["--nsd-kind", "dD", "--nsd-tgt-input", "add", "--nsd-tgt-output"]
PREPENDED = ["--encoder-langtok", "src", "--decoder-langtok"]


def decode_inputs(data, flags):
    """The NSD values the decoder's input layer is given at each decoding step (one (B, 1) tensor a step), beam 2,
    and the sample's decoder-input feature as training builds it."""
    argv = [str(data), "--task", "syntax_translation_multi_simple_epoch", "--arch", "syntax_transformer",
            "--lang-pairs", LANG_PAIRS, "--langs", ",".join(LANGS), "-s", "en", "-t", "de", *flags, *SMALL, *NSD]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(1)
    model = task.build_model(cfg.model).eval()
    task.load_dataset("test")
    ds = task.dataset("test")
    sample = ds.collater([ds[i] for i in range(3)])
    seen = []
    hook = model.decoder.nsd.input.register_forward_pre_hook(lambda mod, a: seen.append(a[1].clone()))
    generator = task.build_generator([model], GenerationConfig(beam=2, max_len_b=6))
    with torch.no_grad():
        task.inference_step(generator, [model], sample)
    hook.remove()
    return seen, sample["net_input"]["tgt_nsd_in_dD"]


@pytest.mark.parametrize("flags, before", [(PREPENDED, 1),
                                           (PREPENDED + ["--lang-tok-replacing-bos-eos"], 0),
                                           (["--encoder-langtok", "src"], 0)])
def test_decoding_feeds_the_language_token_the_filler_it_has_in_training(multilingual_data, flags, before):
    seen, trained = decode_inputs(multilingual_data, flags)
    # training: BOS first, then the filler in each slot of a token before the sentence, then the words' values
    assert (trained[:, 0] == BOS_NSD).all()
    assert (trained[:, 1:1 + before] == NO_NSD).all()
    assert (trained[:, 1 + before] != NO_NSD).all()
    # decoding: the same, a step at a time
    assert all(step.shape[1] == 1 for step in seen) and len(seen) > 2 + before
    assert (seen[0] == BOS_NSD).all()
    for k in range(1, 1 + before):
        assert (seen[k] == NO_NSD).all(), k
    for step in seen[1 + before:]:  # the model's own predictions: values of its range, never a filler
        assert not ((step == NO_NSD) | (step == BOS_NSD)).any()
