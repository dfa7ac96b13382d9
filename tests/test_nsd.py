"""Neural syntactic distances (Ma et al. 2019): dS, dG, dR from constituency trees, dD from dependency heads.

Expected values are derived by hand in comments or by an independent reference working on its own tree
representation (nested ``(label, [children])`` tuples with ``str`` leaves), never by the code under test.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syntrans.syntax import (
    NSD_KINDS,
    SENTENCE_BREAK,
    as_tree,
    binarize,
    gap_depths,
    line_nsd,
    nsd,
    nsd_from_distances,
    nsd_from_heads,
    read_parsed,
    subword_nsd,
    tree_distances,
    tree_height,
)

pytestmark = pytest.mark.fast

GUM = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gum"
TREE_KINDS = ("dS", "dG", "dR")

# --------------------------------------------------------------------------- hand examples

# Balanced: branching nodes S (depth 0), NP (depth 1), VP (depth 1); ROOT and the upper VP are unary.
# nd: NP = VP = 1, S = 2 → tree_distances [1, 2, 1], H = 2; v_1 = NP, v_2 = S, v_3 = VP
BALANCED = "(ROOT (S (NP (DT the) (NN cat)) (VP (VP (VBD sat) (RB down)))))"
# dS = H − depth(v_i) = [2 − 1, 2 − 0, 2 − 1] + [H]; dG = depth(v_i) + [0]; dR = differences of dG
BALANCED_NSD = {"dS": [1, 2, 1, 2], "dG": [1, 0, 1, 0], "dR": [1, -1, 1, -1]}

# Unbalanced: S (depth 0) over NP1 "the cat" (depth 1) and VP (depth 1) over "sat" and PP (depth 2) over "on"
# and NP2 "the mat" (depth 3). nd: NP1 = NP2 = 1, PP = 2, VP = 3, S = 4 → tree_distances [1, 4, 3, 2, 1], H = 4.
# Gaps: the|cat → NP1, cat|sat → S, sat|on → VP, on|the → PP, the|mat → NP2; depths [1, 0, 1, 2, 3]
UNBALANCED = "(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))))"
UNBALANCED_DIST = [1, 4, 3, 2, 1]
UNBALANCED_NSD = {
    "dS": [3, 4, 3, 2, 1, 4],  # 4 − [1, 0, 1, 2, 3], then H = 4; note dS(the) = 3 > tree distance 1
    "dG": [1, 0, 1, 2, 3, 0],
    "dR": [1, -1, 1, 1, 1, -3],  # 1, 0 − 1, 1 − 0, 2 − 1, 3 − 2, 0 − 3
}
# UD heads: the → cat (2), cat → sat (3), sat = root, on → mat (6), the → mat (6), mat → sat (3)
UNBALANCED_HEADS = [2, 3, 0, 6, 6, 3]
UNBALANCED_DD = [1 - 2, 2 - 3, 3 - 0, 4 - 6, 5 - 6, 6 - 3]  # = [-1, -1, 3, -2, -1, 3]

# Flat: one ternary node, H = 1, both gaps are its own → every depth 0
FLAT = "(NP (DT a) (JJ big) (NN dog))"
FLAT_NSD = {"dS": [1, 1, 1], "dG": [0, 0, 0], "dR": [0, 0, 0]}

# One word under a unary chain: no branching node, H = 0; dS(w_n) = H = 0, dG(w_n) = 0
ONE_WORD = "(ROOT (S (NP (NN hi))))"
ONE_WORD_NSD = {"dS": [0], "dG": [0], "dR": [0]}


def test_kinds():
    assert NSD_KINDS == ("dS", "dG", "dR", "dD")


@pytest.mark.parametrize("tree, expected", [
    (BALANCED, BALANCED_NSD), (UNBALANCED, UNBALANCED_NSD), (FLAT, FLAT_NSD), (ONE_WORD, ONE_WORD_NSD)])
@pytest.mark.parametrize("kind", TREE_KINDS)
def test_hand_trees(tree, expected, kind):
    assert nsd(tree, kind) == expected[kind]
    assert nsd(as_tree(tree), kind) == expected[kind]  # stanza Tree input


def test_hand_distances_route():
    assert tree_distances(UNBALANCED) == UNBALANCED_DIST  # precondition of the hand derivation
    assert gap_depths(UNBALANCED_DIST) == [1, 0, 1, 2, 3]
    for kind in TREE_KINDS:
        assert nsd_from_distances(UNBALANCED_DIST, kind) == UNBALANCED_NSD[kind]
    # balanced tree: every leaf sits at branching depth 2, so dS equals tree_distances on the gaps
    assert nsd(BALANCED, "dS")[:-1] == tree_distances(BALANCED) == [1, 2, 1]
    # one word: no gaps
    assert gap_depths([]) == []
    assert [nsd_from_distances([], k) for k in TREE_KINDS] == [[0], [0], [0]]


def test_gap_depths_ties_split_at_all_maxima():
    # (X (A a b) c (B d e)): X has gaps 1 and 2 holding its nd 2, A and B each one gap holding 1
    assert gap_depths([1, 2, 2, 1]) == [1, 0, 0, 1]
    # (X a (Y b c d) e): X's gaps 0 and 3 hold 2; Y's gaps 1, 2 hold 1
    assert gap_depths([2, 1, 1, 2]) == [0, 1, 1, 0]


def test_hand_dd():
    assert nsd(UNBALANCED_HEADS, "dD") == UNBALANCED_DD == [-1, -1, 3, -2, -1, 3]
    assert nsd_from_heads(UNBALANCED_HEADS) == UNBALANCED_DD
    assert nsd([0], "dD") == [1]  # one word: the root's dD is its own index 1
    # root last: a → c, b → c, c = root → [1 − 3, 2 − 3, 3 − 0]
    assert nsd_from_heads(np.array([3, 3, 0])) == [-2, -1, 3]
    assert nsd_from_heads([]) == []


# --------------------------------------------------------------------------- multi-sentence lines

def test_line_dd_each_sentence_own_indices():
    # sentence 1 = UNBALANCED (6 words); sentence 2 "it purrs ." local heads [2, 0, 2] → dD [1 − 2, 2 − 0, 3 − 2]
    # on the line sentence 2's heads are offset by 6: [8, 0, 8]; its root must still get 2, not 8
    heads = UNBALANCED_HEADS + [8, 0, 8]
    got = line_nsd("dD", heads=heads)
    assert got.dtype == np.int64
    assert got.tolist() == [-1, -1, 3, -2, -1, 3] + [-1, 2, 1]


def test_line_dd_root_first_and_one_word_sentences():
    # "stop !" local heads [0, 1] → [1, 1]; "yes" → [1]; "go home" local heads [0, 1] → [1, 1]
    # line heads: [0, 1] + [0] + [0, 4]
    assert line_nsd("dD", heads=[0, 1, 0, 0, 4]).tolist() == [1, 1, 1, 1, 1]
    # "a b" with b root: local [2, 0] → [−1, 2]; then "c d e" with root d: local [2, 0, 2] → [−1, 2, 1]
    # line heads: [2, 0] + [4, 0, 4]
    assert line_nsd("dD", heads=[2, 0, 4, 0, 4]).tolist() == [-1, 2, -1, 2, 1]
    assert line_nsd("dD", heads=[]).tolist() == []


def test_line_ds_each_sentence_own_height():
    # UNBALANCED (H = 4) then BALANCED (H = 2): dS [3, 4, 3, 2, 1, 4] + [1, 2, 1, 2]
    row = UNBALANCED_DIST + [SENTENCE_BREAK] + [1, 2, 1]
    got = line_nsd("dS", dists=row)
    assert got.dtype == np.int64
    assert got.tolist() == [3, 4, 3, 2, 1, 4, 1, 2, 1, 2]
    # with a one-word sentence between them (two breaks in a row): its dS is [0]
    row = UNBALANCED_DIST + [SENTENCE_BREAK, SENTENCE_BREAK] + [1, 2, 1]
    assert line_nsd("dS", dists=row, n_words=11).tolist() == [3, 4, 3, 2, 1, 4, 0, 1, 2, 1, 2]
    # dG / dR of the first row: [1, 0, 1, 2, 3, 0] + [1, 0, 1, 0]
    row = UNBALANCED_DIST + [SENTENCE_BREAK] + [1, 2, 1]
    assert line_nsd("dG", dists=row).tolist() == [1, 0, 1, 2, 3, 0, 1, 0, 1, 0]
    assert line_nsd("dR", dists=np.array(row)).tolist() == [1, -1, 1, 1, 1, -3, 1, -1, 1, -1]


def test_line_empty_and_one_word():
    assert line_nsd("dS", dists=[]).tolist() == [0]  # one word
    assert line_nsd("dS", dists=[], n_words=1).tolist() == [0]
    assert line_nsd("dG", dists=[], n_words=0).tolist() == []  # an empty line


def test_subword_nsd():
    # words with pieces [1, 2, 3] → values repeated per subword
    got = subword_nsd([3, -1, 2], [1, 2, 3])
    assert got.dtype == np.int64
    assert got.tolist() == [3, -1, -1, 2, 2, 2]
    assert subword_nsd([], []).tolist() == []


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("call, match", [
    (lambda: nsd(UNBALANCED, "dX"), r"unknown NSD kind 'dX'.*dS, dG, dR, dD"),
    (lambda: nsd_from_distances([1], "dD"), r"unknown NSD kind 'dD'.*dS, dG, dR"),
    (lambda: line_nsd("ds", dists=[1]), r"unknown NSD kind 'ds'"),
    (lambda: nsd([2, 0], "dS"), r"dS needs a constituency tree.*list"),
    (lambda: nsd(UNBALANCED, "dD"), r"dD needs dependency heads.*found a constituency tree"),
    (lambda: nsd([0, 3], "dD"), r"word 1 .*head 3.*0\.\.2"),
    (lambda: nsd([-1, 0], "dD"), r"word 0 .*head -1"),
    (lambda: nsd([0, 2], "dD"), r"word 1 .*its own head"),
    (lambda: nsd([0, 0], "dD"), r"exactly one root.*found 2.*line_nsd"),
    (lambda: nsd([2, 1], "dD"), r"exactly one root.*found 0"),
    (lambda: nsd([0, 1.5], "dD"), r"word 1 .*1\.5.*integer"),
    (lambda: line_nsd("dD", heads=[2, 1, 0]), r"cycle"),
    (lambda: line_nsd("dD", heads=[0, 3, 0, 1]), r"word 3 .*root word 0.*contiguous"),
    (lambda: line_nsd("dD", heads=[0, 5]), r"word 1 .*head 5"),
    (lambda: line_nsd("dD"), r"head row"),
    (lambda: line_nsd("dS", heads=[0]), r"dist row"),
    (lambda: line_nsd("dS", dists=[1, 2, 1], n_words=5), r"5 words but its dist row gives 4"),
    (lambda: line_nsd("dD", heads=[0, 1], n_words=3), r"3 words but its head row gives 2"),
    (lambda: gap_depths([1, SENTENCE_BREAK, 1]), r"gap 1 .*SENTENCE_BREAK.*line_nsd"),
    (lambda: nsd_from_distances([1, 0], "dS"), r"gap 1 .*holds 0.*>= 1"),
    (lambda: line_nsd("dS", dists=[1, -5]), r"gap 1 .*holds -5"),
    (lambda: gap_depths([3]), r"gap 0 .*holds 3 .*largest distance inside its constituent is 0"),
    (lambda: gap_depths([1, 3, 1]), r"gap 1 .*holds 3 .*is 1"),
    # under the top gap (3): the right span [2, 1, 2] is fine (a node of 2 over a child gap 1), but the left
    # span [2] is a node over two words with no gap below it, whose distance must be 1
    (lambda: gap_depths([2, 3, 2, 1, 2]), r"gap 0 .*holds 2 .*is 0"),
    (lambda: gap_depths([1.0, 2]), r"gap 0 .*integer"),
    (lambda: subword_nsd([1, 2], [1]), r"1 piece counts but 2 values"),
    (lambda: subword_nsd([1, 2], [1, 0]), r"word 1 .*0 pieces"),
    (lambda: subword_nsd([1.5, 2], [1, 1]), r"values must be integers"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------- independent reference on tuple trees

PHRASES = ["S", "NP", "VP", "PP", "SBAR", "ADJP", "X"]
TAGS = ["NN", "DT", "VB", "IN", "JJ", "PRP", "."]


def to_ptb(node) -> str:
    if isinstance(node, str):
        return node
    label, kids = node
    return "(" + label + " " + " ".join(to_ptb(k) for k in kids) + ")"


def branching(node) -> bool:
    return not isinstance(node, str) and len(node[1]) >= 2


def ref_height(node) -> int:
    """Branching nodes on the longest root-to-leaf path."""
    if isinstance(node, str):
        return 0
    return (1 if branching(node) else 0) + max(ref_height(k) for k in node[1])


def ref_branching_paths(root):
    """For each leaf, left to right, the id()s of its branching ancestors, top first."""
    out = []

    def walk(node, path):
        if isinstance(node, str):
            out.append(path)
            return
        here = path + [id(node)] if branching(node) else path
        for k in node[1]:
            walk(k, here)

    walk(root, [])
    return out


def ref_dg(root):
    """dG by definition: for adjacent leaves, their common branching ancestors minus the lowest; 0 for the last."""
    paths = ref_branching_paths(root)
    out = []
    for a, b in zip(paths, paths[1:]):
        common = 0
        for x, y in zip(a, b):
            if x != y:
                break
            common += 1
        out.append(common - 1)
    return out + [0]


def nary_shape(node, counter):
    """Unlabelled n-ary bracketing with unary chains and preterminals collapsed: a word is its index,
    a branching node the tuple of its children's shapes."""
    if isinstance(node, str):
        return next(counter)
    if len(node[1]) == 1:
        return nary_shape(node[1][0], counter)
    return tuple(nary_shape(k, counter) for k in node[1])


def stanza_shape(node, counter):
    """The same for a stanza Tree (for binarize's output)."""
    if not node.children:
        return next(counter)
    if len(node.children) == 1:
        return stanza_shape(node.children[0], counter)
    return tuple(stanza_shape(k, counter) for k in node.children)


def rebuild(ds, lo, hi, first_only):
    """Bracketing of words lo..hi (inclusive) from dS alone: split at the span's maximum dS among its gaps
    (gap i lies between words i and i + 1): at every position holding it (n-ary), or only the first (binary)."""
    if lo == hi:
        return lo
    gaps = range(lo, hi)
    m = max(ds[i] for i in gaps)
    cuts = [i for i in gaps if ds[i] == m]
    if first_only:
        cuts = cuts[:1]
    bounds = [lo - 1] + cuts + [hi]
    return tuple(rebuild(ds, a + 1, b, first_only) for a, b in zip(bounds, bounds[1:]))


@st.composite
def random_trees(draw, max_depth: int = 6):
    """Random constituency trees: random n-ary branching, unary chains, preterminals over leaves."""
    counter = itertools.count()

    def node(depth):
        if depth >= max_depth or draw(st.integers(0, 9)) < 3:
            return (draw(st.sampled_from(TAGS)), [f"w{next(counter)}"])  # a preterminal over a fresh word
        n_kids = draw(st.sampled_from([1, 1, 2, 2, 2, 3, 3, 4]))  # 1 = unary chain link
        return (draw(st.sampled_from(PHRASES)), [node(depth + 1) for _ in range(n_kids)])

    top = node(0)
    if draw(st.booleans()):
        top = ("ROOT", [top])
    return top


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(random_trees())
def test_ds_plus_dg_is_height(tree):
    ptb = to_ptb(tree)
    h = ref_height(tree)
    assert tree_height(ptb) == h
    ds, dg = nsd(ptb, "dS"), nsd(ptb, "dG")
    n = len(ref_branching_paths(tree))
    assert len(ds) == len(dg) == n
    assert [a + b for a, b in zip(ds, dg)] == [h] * n
    assert ds[-1] == h and dg[-1] == 0
    assert all(a >= b for a, b in zip(ds, tree_distances(ptb)))  # dS measures from the top


@FAST
@given(random_trees())
def test_dg_against_reference(tree):
    ptb = to_ptb(tree)
    assert nsd(ptb, "dG") == ref_dg(tree)
    assert nsd(as_tree(ptb), "dG") == ref_dg(tree)


@FAST
@given(random_trees())
def test_dr_sums_to_dg(tree):
    ptb = to_ptb(tree)
    dr = nsd(ptb, "dR")
    assert list(itertools.accumulate(dr)) == nsd(ptb, "dG")
    assert sum(dr) == 0  # dG(w_n) = 0


@FAST
@given(random_trees())
def test_sidecar_route_equals_tree_route(tree):
    ptb = to_ptb(tree)
    dists = tree_distances(ptb)
    for kind in TREE_KINDS:
        assert nsd_from_distances(dists, kind) == nsd(ptb, kind), kind
        assert line_nsd(kind, dists=dists).tolist() == nsd(ptb, kind), kind


@FAST
@given(random_trees())
def test_ds_keeps_the_bracketing(tree):
    ptb = to_ptb(tree)
    ds = nsd(ptb, "dS")
    n = len(ds)
    # all maxima → the n-ary bracketing of the tree with unary chains and preterminals collapsed
    assert rebuild(ds, 0, n - 1, first_only=False) == nary_shape(tree, itertools.count())
    # first maximum only → the right-factored binarization
    assert rebuild(ds, 0, n - 1, first_only=True) == stanza_shape(binarize(ptb), itertools.count())


@st.composite
def multi_tree_lines(draw):
    return draw(st.lists(random_trees(max_depth=4), min_size=1, max_size=4))


@FAST
@given(multi_tree_lines())
def test_line_nsd_trees_is_per_sentence(trees):
    row = []
    for k, tree in enumerate(trees):
        if k:
            row.append(SENTENCE_BREAK)
        row += tree_distances(to_ptb(tree))
    n = sum(len(ref_branching_paths(t)) for t in trees)
    for kind in TREE_KINDS:
        expected = [v for t in trees for v in nsd(to_ptb(t), kind)]
        assert line_nsd(kind, dists=row, n_words=n).tolist() == expected


@st.composite
def dependency_sentences(draw):
    """Heads (1-based, 0 = root) of one random dependency tree: words attach in random order to attached ones."""
    n = draw(st.integers(1, 10))
    order = draw(st.permutations(range(n)))
    heads = [0] * n
    for k, w in enumerate(order[1:], 1):
        heads[w] = order[draw(st.integers(0, k - 1))] + 1
    return heads


@FAST
@given(st.lists(dependency_sentences(), min_size=1, max_size=4))
def test_line_dd_is_per_sentence(sentences):
    line, expected, offset = [], [], 0
    for heads in sentences:
        line += [h + offset if h else 0 for h in heads]
        expected += [i - h for i, h in enumerate(heads, 1)]  # dD by definition, sentence-local
        offset += len(heads)
    assert [v for s in sentences for v in nsd_from_heads(s)] == expected
    assert line_nsd("dD", heads=line).tolist() == expected
    assert subword_nsd(expected, [2] * len(expected)).tolist() == [v for v in expected for _ in (0, 1)]


def test_deep_trees_do_not_recurse():
    # right-branching over 3000 words: (X w0 (X w1 (X w2 …))) → distances 2999, 2998, …, 1, H = 2999,
    # node k has depth k and lies on the longest path: dS = H − k = the distance itself, then H;
    # dG = [0, 1, …, 2998, 0]
    n = 3000
    dists = list(range(n - 1, 0, -1))
    assert nsd_from_distances(dists, "dS") == dists + [n - 1]
    assert nsd_from_distances(dists, "dG") == list(range(n - 1)) + [0]
    ptb = "(X (T w0) " * (n - 1) + f"(T w{n - 1})" + ")" * (n - 1)
    assert nsd(ptb, "dG") == list(range(n - 1)) + [0]
    chain = [k + 2 for k in range(n - 1)] + [0]  # a dependency chain, root last
    assert line_nsd("dD", heads=chain).tolist() == [-1] * (n - 1) + [n]


# --------------------------------------------------------------------------- GUM

@pytest.fixture(scope="module")
def gum():
    if not (GUM / "const").is_dir() or not (GUM / "dep").is_dir():
        pytest.skip(f"GUM data not found at {GUM}")
    const = sorted((GUM / "const").glob("*.ptb"))
    if not const:
        pytest.skip(f"no PTB files under {GUM / 'const'}")
    return [(read_parsed(str(p)), read_parsed(str(GUM / "dep" / (p.name[: -len(".ptb")] + ".conllu")))) for p in const]


def test_gum_sentences(gum):
    n = 0
    for c, u in gum:
        assert len(c) == len(u)
        for s, d in zip(c, u):
            words = len(s.words)
            values = {k: nsd(s.tree, k) for k in TREE_KINDS}
            values["dD"] = nsd(d.heads, "dD")
            assert all(len(v) == words for v in values.values())
            h = tree_height(s.tree)
            assert [a + b for a, b in zip(values["dS"], values["dG"])] == [h] * words
            dists = tree_distances(s.tree)
            for k in TREE_KINDS:
                assert nsd_from_distances(dists, k) == values[k]
            n += 1
    assert n > 1000  # the stored copy has 1536 sentences


def test_gum_lines_of_two_sentences(gum):
    n = 0
    for c, u in gum:
        for (s1, d1), (s2, d2) in zip(zip(c[::2], u[::2]), zip(c[1::2], u[1::2])):
            row = tree_distances(s1.tree) + [SENTENCE_BREAK] + tree_distances(s2.tree)
            words = len(s1.words) + len(s2.words)
            for k in TREE_KINDS:
                assert line_nsd(k, dists=row, n_words=words).tolist() == nsd(s1.tree, k) + nsd(s2.tree, k)
            off = len(d1.words)
            heads = d1.heads + [h + off if h else 0 for h in d2.heads]
            assert line_nsd("dD", heads=heads, n_words=words).tolist() == nsd(d1.heads, "dD") + nsd(d2.heads, "dD")
            n += 1
    assert n > 500
