"""One generation batch of in-memory sentences, collated by the very datasets fairseq-generate reads through.

The source tokens go into a fairseq ``LanguagePairDataset`` with the task's padding settings (what
``load_langpair_dataset`` builds from binarized data), wrapped, for the ``syntax_translation`` task, by the
project's :class:`~syntrans.data.syntax_dataset.SyntaxPairDataset` over in-memory sidecars; its collater pads the
tokens (left-padded source) and builds and pads the syntax features the model asks for.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np
import torch
from fairseq.data import LanguagePairDataset

from ..data.syntax_dataset import SyntaxPairDataset
from ..tasks.syntax_translation import SyntaxTranslationTask


def encode_source(task, pieces: List[str]) -> torch.Tensor:
    """The source token ids of one BPE'd line, EOS appended, as fairseq-preprocess binarizes it: (n_pieces + 1,) int64."""
    return task.source_dictionary.encode_line(" ".join(pieces), add_if_not_exist=False, append_eos=True).long()


def collate(task, src_tokens: List[torch.Tensor], side: Optional[Dict] = None) -> Dict:
    """A fairseq sample of ``src_tokens`` (one 1-D tensor per sentence; ``sample["id"]`` indexes this list).

    ``side``: the source sidecars (kind → :class:`~syntrans.hub.source_syntax.MemorySidecar`), for the
    ``syntax_translation`` task; the features the task's model asks for must be buildable from them.
    """
    cfg = task.cfg
    dataset = LanguagePairDataset(
        src_tokens, np.array([len(t) for t in src_tokens], dtype=np.int64), task.source_dictionary,
        tgt_dict=task.target_dictionary, left_pad_source=cfg.left_pad_source, left_pad_target=cfg.left_pad_target,
        pad_to_multiple=getattr(cfg, "required_seq_len_multiple", 1), shuffle=False,
    )
    if isinstance(task, SyntaxTranslationTask):
        dataset = SyntaxPairDataset(dataset, side or {}, {}, task.syntax_needs)
    return dataset.collater([dataset[i] for i in range(len(src_tokens))])


def required_features(task) -> set:
    """The batch features the models built by ``task`` cannot go without (none for a task other than ours)."""
    return set(task.syntax_needs.required) if isinstance(task, SyntaxTranslationTask) else set()
