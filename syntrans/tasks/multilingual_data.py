"""fairseq's multilingual data manager (``translation_multi_simple_epoch``) with each language pair's syntax
sidecars: every pair's ``LanguagePairDataset`` is wrapped in a :class:`~syntrans.data.syntax_dataset.SyntaxPairDataset`
reading the sidecars beside its binarized data (``{split}.{src}-{tgt}.{lang}.{kind}``, either direction as fairseq
finds the data), and the dataset of all pairs in :class:`~syntrans.data.multi_batches.SyntaxMultiBatches`.

Where the language tokens go (fairseq 0.12, ``multilingual_data_manager.py``), and what the features do there:

* ``--encoder-langtok src|tgt``: the token is put before the source (``PrependTokenDataset``): source features move
  one token on (:func:`~syntrans.data.features.after_prefix`);
* ``--decoder-langtok``: the token is put before the target, so the decoder reads BOS, the token, the sentence:
  target features move one token on;
* with ``--lang-tok-replacing-bos-eos`` instead, the encoder's token replaces the source's EOS and the decoder's the
  BOS of its input, both in the collater (``TransformEosLangPairDataset``): the sentence keeps its positions and the
  token takes a slot whose feature is already a filler.

The tokens before the sentence are counted from the datasets fairseq built (its ``PrependTokenDataset`` layers), not
re-derived from the flags.
"""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Dict, List, Tuple

from fairseq.data import PrependTokenDataset
from fairseq.data.multilingual.multilingual_data_manager import MultilingualDatasetManager

from ..data import sidecars
from ..data.features import FeatureNeeds
from ..data.multi_batches import SyntaxMultiBatches
from ..data.syntax_dataset import SyntaxPairDataset


def tokens_before(dataset) -> int:
    """How many tokens fairseq puts before each sentence of ``dataset`` (its ``PrependTokenDataset`` layers)."""
    n = 0
    while isinstance(dataset, PrependTokenDataset):
        n, dataset = n + 1, dataset.dataset
    return n


def pair_direction(data_path: str, split: str, src: str, tgt: str) -> Tuple[str, str]:
    """(a, b) of the files ``{split}.{a}-{b}.*`` holding the pair: ``src-tgt``, else ``tgt-src`` (fairseq's order)."""
    if os.path.exists(os.path.join(data_path, f"{split}.{src}-{tgt}.{src}.idx")):
        return src, tgt
    return tgt, src


class SyntaxDataManager(MultilingualDatasetManager):
    """The data manager whose language pairs carry their sidecars (module docs). ``needs``: the features the models
    built so far read, handed to every pair (:meth:`request`)."""

    def __init__(self, args, lang_pairs, langs, dicts, sampling_method):
        super().__init__(args, lang_pairs, langs, dicts, sampling_method)
        self.needs = FeatureNeeds()
        self.pairs: Dict[str, List[SyntaxPairDataset]] = defaultdict(list)  # split → its pairs' datasets

    def request(self, needs: FeatureNeeds) -> None:
        self.needs = needs
        for pairs in self.pairs.values():
            for ds in pairs:
                ds.request(needs)

    def load_langpair_dataset(self, data_path, split, src, src_dict, tgt, tgt_dict, *args, **kwargs):
        pair = super().load_langpair_dataset(data_path, split, src, src_dict, tgt, tgt_dict, *args, **kwargs)
        a, b = pair_direction(data_path, split, src, tgt)
        if os.path.exists(os.path.join(data_path, f"{split}1.{a}-{b}.{src}.idx")):
            raise NotImplementedError(f"{data_path}: sharded splits ({split}1, …) are not supported with syntax yet")
        before = {"source": tokens_before(pair.src), "target": tokens_before(pair.tgt) if pair.tgt is not None else 0}
        prefixes = {"source": sidecars.side_prefix(data_path, split, a, b, src),
                    "target": sidecars.side_prefix(data_path, split, a, b, tgt)}
        ds = SyntaxPairDataset(pair, sidecars.load_side(data_path, split, a, b, src),
                               sidecars.load_side(data_path, split, a, b, tgt), self.needs, prefixes, before)
        self.pairs[split].append(ds)
        return ds

    def load_dataset(self, split, training, epoch=0, combine=False, shard_epoch=None, **kwargs):
        self.pairs[split] = []
        return SyntaxMultiBatches(super().load_dataset(split, training, epoch, combine, shard_epoch, **kwargs))


__all__ = ["SyntaxDataManager", "pair_direction", "tokens_before"]
