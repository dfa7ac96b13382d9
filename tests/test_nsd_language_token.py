"""NSD on the target side under ``translation_multi_simple_epoch``'s decoder language token (``--decoder-langtok``):
in training the token's slot of the decoder's NSD input holds the filler NO_NSD (BOS has BOS_NSD); decoding must feed
the same, and the model's own prediction only from the first word on. With ``--lang-tok-replacing-bos-eos`` the token
takes BOS's slot and nothing is forced between BOS and the sentence."""
import pytest
import torch
from fairseq.dataclass.configs import GenerationConfig
from multilingual import generation_task_and_model

from syntrans.syntax.nsd_labels import BOS_NSD, NO_NSD

NSD = ["--nsd-kind", "dD", "--nsd-tgt-input", "add", "--nsd-tgt-output"]
PREPENDED = ["--encoder-langtok", "src", "--decoder-langtok"]


def decode_inputs(data, flags):
    """The NSD values the decoder's input layer is given at each decoding step (one (B, 1) tensor a step), beam 2,
    and the sample's decoder-input feature as training builds it."""
    task, model = generation_task_and_model(data, *flags, *NSD)
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
