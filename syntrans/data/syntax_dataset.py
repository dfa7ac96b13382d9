"""A LanguagePairDataset wrapper that adds the syntax features a model asks for to every batch."""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset, data_utils

from .features import FEATURES, FeatureNeeds, after_prefix
from .missing_sidecars import LackingKinds, how_to_write
from .sidecars import Sidecar, validate_side


def complete_batches(indices: np.ndarray, batches: List[np.ndarray], max_sentences: Optional[int],
                     max_tokens: Optional[int] = None, num_tokens=None) -> List[np.ndarray]:
    """``batches`` plus batches of the indices they miss, in ``indices`` order, each within
    ``max_sentences`` and (padded like fairseq: longest × count) within ``max_tokens``."""
    indices = np.asarray(indices, dtype=np.int64)
    covered = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches]) if len(batches) else np.zeros(0, np.int64)
    missing = indices[~np.isin(indices, covered)]
    if not len(missing):
        return batches
    out, cur, longest = list(batches), [], 0
    for i in missing.tolist():
        n = int(num_tokens(i)) if (max_tokens and num_tokens is not None) else 0
        full = (max_sentences and len(cur) >= max_sentences) or (max_tokens and max(longest, n) * (len(cur) + 1) > max_tokens)
        if cur and full:
            out.append(np.array(cur, dtype=np.int64))
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    out.append(np.array(cur, dtype=np.int64))
    return out


def batch_order(samples: List[dict], batch: dict, pad: int) -> List[dict]:
    """``samples`` in the order fairseq's collater put them into ``batch`` (sorted by source length). By id where the
    ids are unique; where they are not (a batch of several language pairs of ``translation_multi_simple_epoch``, each
    numbering its own sentences) by the collater's own sort, repeated here, which must give the batch's ids."""
    ids = [int(s["id"]) for s in samples]
    if len(set(ids)) == len(ids):
        by_id = dict(zip(ids, samples))
        return [by_id[i] for i in batch["id"].tolist()]
    lengths = torch.LongTensor([int(s["source"].ne(pad).long().sum()) for s in samples])
    _, order = lengths.sort(descending=True)  # fairseq's language_pair_dataset.collate
    out = [samples[i] for i in order.tolist()]
    if [int(s["id"]) for s in out] != batch["id"].tolist():
        raise RuntimeError("the syntax features of a batch could not be put in the order of its sentences (their ids "
                           "repeat and fairseq's sort by source length gave another order)")
    return out


class SyntaxPairDataset(BaseWrapperDataset):
    """Wraps a LanguagePairDataset; the features a model reads (``needs``, :class:`~syntrans.data.features.FeatureNeeds`:
    given when the model is built, :meth:`request`) are read per item and padded in the collater exactly like their
    tokens: the required ones, and the optional ones whose sidecars this split has (e.g. parents that only an
    auxiliary loss needs). ``prefixes``: the path prefix of each side's files (``source``, ``target``;
    :func:`~syntrans.data.sidecars.side_prefix`), for messages; none for data held in memory. ``before``: per side, the
    tokens the wrapped dataset puts before the sentence's first piece (a language token of
    ``translation_multi_simple_epoch``), which every feature of that side follows (:func:`after_prefix`)."""

    def __init__(self, dataset, src_side: Dict[str, Sidecar], tgt_side: Dict[str, Sidecar],
                 needs: Optional[FeatureNeeds] = None, prefixes: Optional[Dict[str, str]] = None,
                 before: Optional[Dict[str, int]] = None):
        super().__init__(dataset)
        self.src_side, self.tgt_side = src_side, tgt_side
        self.prefixes = prefixes or {}
        self.before = {"source": 0, "target": 0, **(before or {})}
        self.needs = needs if needs is not None else FeatureNeeds()
        validate_side(src_side, np.asarray(dataset.src_sizes) - self.before["source"], "source")
        if dataset.tgt_sizes is not None:
            validate_side(tgt_side, np.asarray(dataset.tgt_sizes) - self.before["target"], "target")

    def request(self, needs: FeatureNeeds) -> None:
        """The features the model reads (a split loaded before the model was built hears them here)."""
        self.needs = needs

    def __getattr__(self, name):  # e.g. .src, .tgt, .left_pad_source of the wrapped dataset
        if name == "dataset":
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def lacking(self, name: str) -> LackingKinds:
        """The sidecar kinds feature ``name`` needs that this split lacks (with the side's file prefix, for
        :func:`~syntrans.data.missing_sidecars.how_to_write`)."""
        f = FEATURES[name]
        side = self.src_side if f.side == "source" else self.tgt_side
        return LackingKinds([k for k in f.needs if k not in side], self.side_prefix(f.side))

    def side_prefix(self, side_name: str) -> Optional[str]:
        """``{data}/{split}.{src}-{tgt}.{lang}`` of the ``source`` or ``target`` side: from a sidecar it has, else the
        prefix it was given (``prefixes``); None when neither tells."""
        side = self.src_side if side_name == "source" else self.tgt_side
        known = next(iter(side.values()), None)
        if known is not None:
            return known.prefix.rsplit(".", 1)[0]
        return self.prefixes.get(side_name)

    def missing(self, name: str) -> Optional[str]:
        """Why feature ``name`` cannot be built here, or None."""
        f = FEATURES[name]
        lacking = self.lacking(name)
        if lacking:
            return f"feature {name} needs the {f.side} sidecar(s) {', '.join(lacking)}"
        return None

    def sidecar_path(self, name: str) -> str:
        """The files of the first sidecar feature ``name`` lacks (or of its last one, e.g. ``dist``)."""
        f = FEATURES[name]
        side = self.src_side if f.side == "source" else self.tgt_side
        kind = next((k for k in f.needs if k not in side), f.needs[-1])
        base = self.side_prefix(f.side) or "<split>.<src>-<tgt>.<lang>"
        return f"{base}.{kind}.{{idx,bin}}"

    def features(self) -> List[str]:
        """The features every item of this split carries: the requested ones and the optional ones it can build."""
        return sorted(self.needs.required | {n for n in self.needs.optional if self.missing(n) is None})

    def __getitem__(self, index):
        item = self.dataset[index]
        for name in self.features():
            f = FEATURES[name]
            side, tokens = (self.src_side, item["source"]) if f.side == "source" else (self.tgt_side, item["target"])
            why = self.missing(name)
            if why:
                raise FileNotFoundError(f"{why} ({self.sidecar_path(name)}), missing for sentence {index}; "
                                        f"{how_to_write(self.lacking(name))}")
            arrays = {k: side[k][index] for k in f.needs}
            try:
                value = after_prefix(f, f.build(arrays), self.before[f.side])
            except ValueError as e:
                raise ValueError(f"{side[f.needs[-1]].prefix}: sentence {index} (line {index + 1} of the text): {e}") from None
            if tokens is not None and len(value) != len(tokens):
                raise ValueError(
                    f"{side[f.needs[0]].prefix}: sentence {index}: feature {name} has {len(value)} values "
                    f"but the {f.side} has {len(tokens)} tokens (EOS and {self.before[f.side]} token(s) before the "
                    "sentence included)"
                )
            item[name] = torch.from_numpy(value)
        return item

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        """fairseq's batching, plus a last batch of whatever it left out.

        fairseq-fixed 0.12.3.1 drops the remainder when ``required_batch_size_multiple`` > 1 (the
        default 8: fairseq-generate would skip up to 7 test sentences); nothing is dropped here.
        """
        batches = self.dataset.batch_by_size(indices, max_tokens, max_sentences, required_batch_size_multiple)
        return complete_batches(indices, batches, max_sentences, max_tokens, self.dataset.num_tokens)

    def collater(self, samples, pad_to_length=None):
        batch = self.dataset.collater(samples, pad_to_length=pad_to_length)
        names = self.features()
        if not batch or not names:
            return batch
        ordered = batch_order(samples, batch, self.dataset.src_dict.pad())
        for name in names:
            f = FEATURES[name]
            if f.side == "source":
                ref, left = batch["net_input"]["src_tokens"], self.dataset.left_pad_source
            else:
                ref, left = batch["target"], self.dataset.left_pad_target
            values = [s[name] for s in ordered]
            padded = data_utils.collate_tokens(values, f.pad, left_pad=left, pad_to_length=ref.size(1))
            if f.positions and left:  # positions within the sentence → positions in the left-padded row
                shift = torch.tensor([ref.size(1) - len(v) for v in values], dtype=padded.dtype).unsqueeze(1)
                padded = torch.where(padded >= 0, padded + shift, padded)
            batch["net_input"][name] = f.finish(padded)
        return batch
