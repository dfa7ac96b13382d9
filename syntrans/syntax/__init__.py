"""Pure syntax algorithms (no fairseq import): trees, distances, gaps, masks, NSD, parsed corpora.

The names below are imported from their modules on first use (``from syntrans.syntax import tree_distances``
works as usual), so that importing one light module of the package does not import torch or stanza.
"""
from ..lazy_exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "dependency_paths": ("NO_PATH", "subword_path_lengths", "word_path_lengths"),
    "gaps": ("EOS_GAP", "SENTENCE_BREAK", "SENTENCE_GAP", "subword_gaps", "subword_gaps_array"),
    "masks": ("local_range_log_mask", "local_range_mask"),
    "nsd_labels": ("NSD_KINDS", "gap_depths", "line_nsd", "nsd", "nsd_from_distances", "nsd_from_heads", "subword_nsd"),
    "parents": ("PARENT_MODES", "subword_parents", "subword_parents_array"),
    "parsed": ("ParsedSentence", "format_conllu", "group_by_line", "read_parsed", "write_conllu"),
    "sla_window": ("WINDOWS", "tree_window", "window_log_mask"),
    "trees": ("as_tree", "binarize", "leaves", "tree_distances", "tree_height"),
})
