"""The batches of ``translation_multi_simple_epoch``'s dataset of several language pairs
(``SampledMultiDataset``), with the syntax features of every pair kept.

fairseq collates such a dataset with the first pair's collater (its ``shared_collater``), except where each pair
alters its language tokens in its own collater (``--lang-tok-replacing-bos-eos``: ``TransformEosLangPairDataset``).
There it collates each pair apart and rebuilds the batch from a fixed list of keys, which would drop every syntax
feature; :class:`SyntaxMultiBatches` collates each pair apart to the same widths and keeps every key. Its batches
also hold every sentence (:func:`~syntrans.data.syntax_dataset.complete_batches`): fairseq-fixed would drop the last
few of a split to make the batch sizes a multiple of ``--required-batch-size-multiple``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Dict, List

import torch
from fairseq.data import BaseWrapperDataset

from .syntax_dataset import complete_batches


def _merge(batches: List[dict]) -> dict:
    """Batches of one width each (their sentences sorted by source length) → one batch sorted by source length, every
    tensor of a sentence kept (``net_input``'s syntax features with the tokens)."""
    lengths = torch.cat([b["net_input"]["src_lengths"] for b in batches])
    lengths, order = lengths.sort(descending=True)

    def cat(tensors):
        return torch.cat(tensors, dim=0).index_select(0, order)

    net_input = {k: cat([b["net_input"][k] for b in batches]) for k in batches[0]["net_input"] if k != "src_lengths"}
    batch = {"id": cat([b["id"] for b in batches]), "nsentences": sum(b["nsentences"] for b in batches),
             "ntokens": sum(b["ntokens"] for b in batches), "net_input": {**net_input, "src_lengths": lengths},
             "target": cat([b["target"] for b in batches]) if batches[0].get("target") is not None else None}
    for key in batches[0]:
        if key not in batch and torch.is_tensor(batches[0][key]) and batches[0][key].size(0) == batches[0]["id"].size(0):
            batch[key] = cat([b[key] for b in batches])  # e.g. tgt_lang_id
    return batch


class SyntaxMultiBatches(BaseWrapperDataset):
    """Wraps a ``SampledMultiDataset``, ``SampledMultiEpochDataset`` or ``ConcatDataset`` (what fairseq's data
    manager makes of a split) of :class:`~syntrans.data.syntax_dataset.SyntaxPairDataset` pairs."""

    def __getattr__(self, name):  # load_next_shard, shard_epoch, datasets, … of the wrapped dataset
        if name == "dataset":
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def collater(self, samples, **extra_args):
        ds = self.dataset
        separate = (getattr(ds, "shared_collater", True) is False  # a ConcatDataset (valid, test) shares one
                    and getattr(ds.collate_format, "name", ds.collate_format) != "ordered_dict")
        if not samples or not separate:
            return ds.collater(samples, **extra_args)
        widths: Dict[str, int] = defaultdict(int)  # every pair padded to the batch's widths
        groups: Dict[int, list] = defaultdict(list)
        for i, s in samples:
            widths["source"] = max(widths["source"], s["source"].size(0))
            if s.get("target") is not None:
                widths["target"] = max(widths["target"], s["target"].size(0))
            groups[i].append(s)
        return _merge([ds.datasets[i].collater(groups[i], pad_to_length=widths) for i in sorted(groups)])

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        batches = self.dataset.batch_by_size(indices, max_tokens, max_sentences, required_batch_size_multiple)
        return complete_batches(indices, batches, max_sentences, max_tokens, self.dataset.num_tokens)


__all__ = ["SyntaxMultiBatches"]
