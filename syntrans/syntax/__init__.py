"""Pure syntax algorithms (no fairseq import): trees, distances, gaps, masks, NSD, parsed corpora."""
from .gaps import EOS_GAP, SENTENCE_BREAK, SENTENCE_GAP, subword_gaps, subword_gaps_array
from .masks import local_range_log_mask, local_range_mask
from .nsd import NSD_KINDS, gap_depths, line_nsd, nsd, nsd_from_distances, nsd_from_heads, subword_nsd
from .parents import PARENT_MODES, subword_parents, subword_parents_array
from .parsed import ParsedSentence, format_conllu, group_by_line, read_parsed, write_conllu
from .trees import as_tree, binarize, leaves, tree_distances, tree_height

__all__ = [
    "EOS_GAP", "SENTENCE_BREAK", "SENTENCE_GAP", "subword_gaps", "subword_gaps_array",
    "local_range_log_mask", "local_range_mask",
    "NSD_KINDS", "gap_depths", "line_nsd", "nsd", "nsd_from_distances", "nsd_from_heads", "subword_nsd",
    "PARENT_MODES", "subword_parents", "subword_parents_array",
    "ParsedSentence", "format_conllu", "group_by_line", "read_parsed", "write_conllu",
    "as_tree", "binarize", "leaves", "tree_distances", "tree_height",
]
