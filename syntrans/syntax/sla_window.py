"""The SLA window of a padded batch (Li et al. 2021, "Improving BERT with Syntax-aware Local Attention", as Hou et
al.'s gated self-attention paper, §2.1 and §5.2, describes it): which keys each query may attend to, M[i, j] = 1 when
the words of tokens i and j are at most m arcs apart in the source's dependency tree, D(i, j) ≤ m.

Three forms of the window (:data:`WINDOWS`), and where the boundary token (EOS, the sentence's last token) stands:

* ``word``: D(i, j) from token i's own word (the gated paper, §5.2: "The distance between two nodes is defined as
  their shortest path length in the dependency tree").
* ``neighbours``: the union of the windows of token i's word w and of its linear neighbours w−1 and w+1 where they
  are words of w's own tree, D'(i, j) = min_{k ∈ {w−1, w, w+1}} D(k, j) ≤ m (Li et al.'s released code,
  ``src/dataset.py``, takes the minimum over i−1, i, i+1); a neighbour in another sentence of the line adds nothing,
  so two sentences of one line never see each other. Ours: the restriction to the token's own tree.
* ``neighbours-unrestricted``: the same union over w−1, w and w+1 whatever tree they belong to, as the released code
  takes them (its ``i-1`` and ``i+1`` unconditionally); across a sentence boundary of the line the neighbour's window
  is then added too.

The boundary token: by default (ours) EOS sees only itself and is in no other token's window. ``boundary_visible``:
the released code's [CLS]/[SEP] visibility (``src/dataset.py`` sets [CLS] at distance 0 of every word and appends
distance 0 for [SEP] to every row, and gives both a row of zeros): EOS is in every real token's window and sees every
real token.

Pure torch, no fairseq: :mod:`syntrans.mechanisms.sla` forms log M from this once per batch.
"""
from __future__ import annotations

from typing import Tuple, Union

import torch

#: the forms of the window (module docstring)
WINDOWS = ("word", "neighbours", "neighbours-unrestricted")


def reach_closure(adjacency: torch.Tensor) -> torch.Tensor:
    """(B, T, T) bool: y reachable from x by any number of arcs (x itself included), by repeated squaring."""
    T = adjacency.size(-1)
    reach = torch.eye(T, dtype=torch.bool, device=adjacency.device) | (adjacency > 0)
    for _ in range(max(1, (T - 1).bit_length())):
        reach = reach | (torch.bmm(reach.float(), reach.float()) > 0)
    return reach


def linear_neighbours(node: torch.Tensor, valid: torch.Tensor) -> Tuple[torch.Tensor, ...]:
    """The first subword of the word before and after each token's word (B, T) long, and whether it exists (B, T)
    bool: the token before the word's first subword belongs to the previous word, the token after its last subword
    to the next (the subwords of a word are consecutive). EOS and padding are no word: never a neighbour."""
    B, T = node.shape
    pos = torch.arange(T, device=node.device).expand(B, T)
    before = (node - 1).clamp(min=0)  # (B, T)
    has_prev = valid & (node >= 1) & valid.gather(1, before)
    prev = node.gather(1, before)
    same = (node.unsqueeze(2) == node.unsqueeze(1)) & valid.unsqueeze(1) & valid.unsqueeze(2)  # (B, T, T)
    last = torch.where(same, pos.unsqueeze(1).expand(B, T, T), torch.full_like(same, -1, dtype=torch.long)).amax(-1)
    after = (last + 1).clamp(max=T - 1)  # (B, T)
    has_next = valid & (last + 1 <= T - 1) & valid.gather(1, after)
    nxt = node.gather(1, after)
    return prev, has_prev, nxt, has_next


def _window_kind(neighbours: Union[bool, str]) -> str:
    """The window's name from ``neighbours``: False → word, True → neighbours, or a name of :data:`WINDOWS`."""
    if neighbours is False or neighbours is None:
        return "word"
    if neighbours is True:
        return "neighbours"
    if neighbours not in WINDOWS:
        raise ValueError(f"SLA window must be one of {', '.join(WINDOWS)}, found {neighbours!r}")
    return str(neighbours)


def tree_window(word_first: torch.Tensor, parent_first: torch.Tensor, pad_mask: torch.Tensor, threshold: int,
                neighbours: Union[bool, str] = False, boundary_visible: bool = False) -> torch.Tensor:
    """Which keys each query may attend to: D(i, j) ≤ m, D the dependency path length between the words of tokens i
    and j (Hou et al., gated self-attention, §5.2), for a padded batch; ``neighbours`` (True or ``"neighbours"``,
    or ``"neighbours-unrestricted"``): the union over token i's word and its linear neighbours (module docstring;
    Li et al.'s released code); ``boundary_visible``: EOS sees and is seen by every real token (the released code's
    [CLS]/[SEP]).

    word_first (B, T) long: the position of the first subword of token i's word (−1: EOS, padding); parent_first
    (B, T) long: the first subword of its head word (its own word's for a root, −1: EOS, padding); both in padded
    coordinates; pad_mask (B, T) True at padding. Returns (B, T, T) bool: every token sees itself, padding queries
    everything (their rows are never read). Reachability within m steps of the word tree over token positions: m
    boolean matrix products."""
    kind = _window_kind(neighbours)
    B, T = word_first.shape
    valid = word_first >= 0  # (B, T) real subword tokens
    node = word_first.clamp(min=0)  # (B, T)
    arc = valid & (parent_first >= 0) & (parent_first != node)  # (B, T) a token whose word has a head word
    b = torch.arange(B, device=word_first.device).unsqueeze(1).expand(B, T)[arc]
    u, v = node[arc], parent_first[arc]
    adjacency = torch.zeros(B, T, T, dtype=torch.float32, device=word_first.device)
    adjacency[b, u, v] = 1.0
    adjacency[b, v, u] = 1.0  # (B, T, T): the word tree's arcs between first-subword positions, both directions
    reach = torch.eye(T, dtype=torch.bool, device=word_first.device).expand(B, T, T)
    for _ in range(int(threshold)):  # reach[b, x, y]: y within the steps taken so far from x
        reach = reach | (torch.bmm(reach.float(), adjacency) > 0)
    rows = reach.gather(1, node.unsqueeze(-1).expand(B, T, T))  # (B, T, T) rows[b, i, :] = reach[b, node_i, :]
    if kind != "word":
        tree = reach_closure(adjacency) if kind == "neighbours" else None  # (B, T, T) the words of one tree
        prev, has_prev, nxt, has_next = linear_neighbours(node, valid)
        for k, has in ((prev, has_prev), (nxt, has_next)):
            use = has  # (B, T)
            if tree is not None:  # tree[b, node_i, k_i]: the neighbour is a word of token i's own tree
                use = use & tree.gather(1, node.unsqueeze(-1).expand(B, T, T)).gather(2, k.unsqueeze(-1)).squeeze(-1)
            rows = rows | (reach.gather(1, k.unsqueeze(-1).expand(B, T, T)) & use.unsqueeze(-1))  # reach[b, k_i, :]
    window = rows.gather(2, node.unsqueeze(1).expand(B, T, T))  # (B, T, T) rows[b, i, node_j]
    window = window & valid.unsqueeze(2) & valid.unsqueeze(1)
    if boundary_visible:
        boundary = ~valid & ~pad_mask  # (B, T) EOS: neither a word's subword nor padding
        real = ~pad_mask  # (B, T)
        window = window | (boundary.unsqueeze(2) & real.unsqueeze(1)) | (real.unsqueeze(2) & boundary.unsqueeze(1))
    window = window | torch.eye(T, dtype=torch.bool, device=word_first.device)  # a token (EOS too) sees itself
    return window | pad_mask.unsqueeze(2)  # padding queries: no restriction


def window_log_mask(word_first: torch.Tensor, parent_first: torch.Tensor, pad_mask: torch.Tensor, threshold: int,
                    dtype: torch.dtype, neighbours: Union[bool, str] = False,
                    boundary_visible: bool = False) -> torch.Tensor:
    """log M of :func:`tree_window`: 0 inside the window, −inf outside (Hou et al., gated self-attention, Eq. 8-9
    with a 0/1 mask), (B, T, T) in ``dtype``."""
    window = tree_window(word_first, parent_first, pad_mask, threshold, neighbours, boundary_visible)
    return torch.zeros(window.shape, dtype=dtype, device=window.device).masked_fill(~window, float("-inf"))


__all__ = ["WINDOWS", "linear_neighbours", "reach_closure", "tree_window", "window_log_mask"]
