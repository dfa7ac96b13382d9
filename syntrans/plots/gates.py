"""The syntax gates of a gated model (Hou et al., gated self-attention) as a layer × head heat map.

A gated encoder layer mixes, per sentence and syntax head, A = G·A_syn + (1 − G)·A_raw
(:mod:`syntrans.mechanisms.gate`). The matrices here hold one number per encoder layer × head: the gate G
averaged over the sentences of a data split, NaN where a layer is not gated or a head is not one of its
syntax heads (heads ``syntax_heads`` and up of its self-attention).

Two sources:

* a model (or checkpoint) run over a split: :func:`gate_matrix_from_model`, :func:`gate_matrix_from_checkpoint`;
* a fairseq training log: at every validation the criterion logs ``gate_l{L}h{H}`` (mean over the validation
  sentences, rounded to 4 decimals), :func:`gate_history_from_log` reads them back. A log only knows the
  gated layers and heads: its matrix has as many layers and heads as the highest ones it names.

Plots use matplotlib's Agg canvas directly (no pyplot, no global backend switch); matplotlib and fairseq
are imported only inside the functions that need them.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]
History = List[Tuple[Optional[int], Optional[int], np.ndarray]]

IMAGE_SUFFIXES = (".png", ".pdf", ".svg")
DEFAULT_MAX_TOKENS = 4096  # batch size of a model run when neither max_tokens nor max_sentences is given


# ----------------------------------------------------------------------------------------- from a model

def gate_matrix_from_model(model, task, split: str, max_sentences: Optional[int] = None,
                           max_tokens: Optional[int] = None) -> np.ndarray:
    """Mean gate per encoder layer × head over all sentences of ``split``: an (n_layers, n_heads) float array.

    ``model`` is a ``syntax_transformer`` with gated encoder layers (a mixer over their syntax heads), ``task`` its
    ``syntax_translation`` task (the split is loaded when it is not yet). ``max_sentences``/``max_tokens`` set
    the batch size only (every sentence is run; per sentence the gate does not depend on the batching).
    Deterministic: the model runs in eval mode (its mode is restored afterwards), batches in dataset order.
    NaN for layers that are not gated and for heads beyond the layer's syntax heads.
    """
    import torch  # lazy: reading a training log needs neither torch nor fairseq
    from fairseq import utils  # lazy: imports fairseq

    from ..modules.attention_record import side_reports, syntax_layers  # lazy: imports fairseq

    encoder = getattr(model, "encoder", None)
    attns = {i: attn for (side, i), attn in syntax_layers(model).items() if side == "encoder" and attn.mixer_key}
    if not attns:
        raise ValueError("the model has no syntax gates (no gated encoder layer): train it with --gate-layers, "
                         "e.g. --arch gated_distance_transformer_iwslt_de_en")
    gate_layers = sorted(attns)
    n_layers, n_heads = len(encoder.layers), int(attns[gate_layers[0]].num_heads)
    heads = {i: int(attn.syntax_heads) for i, attn in attns.items()}

    if split not in getattr(task, "datasets", {}):
        task.load_dataset(split)
    dataset = task.dataset(split)
    if max_tokens is None and max_sentences is None:
        max_tokens = DEFAULT_MAX_TOKENS
    itr = task.get_batch_iterator(
        dataset=dataset, max_tokens=max_tokens, max_sentences=max_sentences,
        max_positions=utils.resolve_max_positions(task.max_positions(), model.max_positions()),
        ignore_invalid_inputs=False, required_batch_size_multiple=1, seed=1, num_shards=1, shard_id=0,
        num_workers=0, epoch=1, disable_iterator_cache=True,
    ).next_epoch_itr(shuffle=False)

    device = next(model.parameters()).device
    sums = np.zeros((n_layers, n_heads), dtype=np.float64)
    count = 0
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for sample in itr:
                if not sample or "net_input" not in sample:
                    continue
                sample = utils.apply_to_sample(lambda t: t.to(device), sample)
                net_input = sample["net_input"]
                batch = int(net_input["src_tokens"].size(0))
                reports = side_reports("encoder", encoder.forward_torchscript(net_input))
                for i, attn in attns.items():
                    report = reports.get(i)
                    mix = report.mechanisms.get(attn.mixer_key) if report else None
                    if mix is not None and mix.weights_per_head is None:
                        raise ValueError(f"encoder layer {i}'s gate ({attn.mixer_key}) is not one weight per syntax "
                                         "head and sentence (SLA's --sla-token-gate: one per token), which is what "
                                         "this figure draws")
                    g = mix.weights_per_head if mix is not None else None  # (B, n)
                    if g is None or g.dim() != 2 or g.size(0) != batch:
                        raise RuntimeError(f"encoder layer {i} is gated but its forward left no gate per syntax head "
                                           f"for this batch of {batch} sentences")
                    sums[i, :heads[i]] += g[:, :heads[i]].double().sum(0).cpu().numpy()
                count += batch
    finally:
        model.train(was_training)
    if count == 0:
        raise ValueError(f"split {split!r} has no sentences")
    matrix = np.full((n_layers, n_heads), np.nan)
    for i in gate_layers:
        matrix[i, :heads[i]] = sums[i, :heads[i]] / count
    return matrix


def gate_matrix_from_checkpoint(path: PathLike, data: PathLike, split: str = "valid", max_sentences: Optional[int] = None,
                                max_tokens: Optional[int] = None, device: Optional[str] = None) -> np.ndarray:
    """:func:`gate_matrix_from_model` for a fairseq checkpoint, its task reading ``data`` (a data-bin folder).

    ``device``: where the model runs (default: CUDA when available, else CPU).
    """
    from ..checkpoints.loading import load_checkpoint  # lazy: fairseq, which syntrans-plot sentence (sharing this
    model, _cfg, task = load_checkpoint(path, data, device=device)  # module's figure helpers) does without
    try:
        return gate_matrix_from_model(model, task, split, max_sentences=max_sentences, max_tokens=max_tokens)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e


# ------------------------------------------------------------------------------------------- from a log

_GATE_KEY = re.compile(r"gate_l(\d+)h(\d+)")
_SIMPLE_GATE = re.compile(r"(?:^|[\s|,])gate_l(\d+)h(\d+)[ =]([^\s|,]+)")
_SIMPLE_SUBSET = re.compile(r"valid on '([^']*)' subset")
_SIMPLE_EPOCH = re.compile(r"\bepoch[ =](\d+)\b")
_SIMPLE_UPDATES = re.compile(r"\bnum_updates[ =](\d+)\b")
_JSON_GATE = re.compile(r"^(.+)_gate_l(\d+)h(\d+)$")


def _matrix(gates: Dict[Tuple[int, int], float]) -> np.ndarray:
    n_layers = 1 + max(layer for layer, _ in gates)
    n_heads = 1 + max(head for _, head in gates)
    m = np.full((n_layers, n_heads), np.nan)
    for (layer, head), value in gates.items():
        m[layer, head] = value
    return m


def _int(value) -> Optional[int]:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None


def _parse_json_line(line: str, subset: Optional[str]):
    """A ``--log-format json`` validation line: {"epoch": 2, "valid_loss": "9.1", "valid_gate_l0h0": "0.4987", …}."""
    start = line.find("{")
    if start < 0 or "gate_l" not in line:
        return None
    try:
        stats = json.loads(line[start:])
    except ValueError:
        return None
    if not isinstance(stats, dict):
        return None
    gates: Dict[Tuple[int, int], float] = {}
    tag = None
    for key, value in stats.items():
        m = _JSON_GATE.match(str(key))
        if m and (subset is None or m.group(1) == subset):
            tag = m.group(1)
            gates[int(m.group(2)), int(m.group(3))] = float(value)
    if not gates:
        return None
    return _int(stats.get("epoch")), _int(stats.get(f"{tag}_num_updates")), _matrix(gates)


def _parse_simple_line(line: str, subset: Optional[str]):
    """A ``--log-format simple``/``tqdm`` validation line: … | epoch 002 | valid on 'valid' subset | gate_l0h0 0.4987 | …"""
    m = _SIMPLE_SUBSET.search(line)
    if m is None or (subset is not None and m.group(1) != subset):
        return None
    gates = {(int(a), int(b)): float(v) for a, b, v in _SIMPLE_GATE.findall(line)}
    if not gates:
        return None
    epoch, updates = _SIMPLE_EPOCH.search(line), _SIMPLE_UPDATES.search(line)
    return (int(epoch.group(1)) if epoch else None, int(updates.group(1)) if updates else None, _matrix(gates))


def gate_history_from_log(path: PathLike, subset: Optional[str] = None) -> History:
    """Every validation of a fairseq training log that logged gate values, in log order.

    Returns a list of ``(epoch, num_updates, matrix)``: ``epoch`` as logged (1-based; None only for lines
    without one, e.g. of fairseq-validate), ``num_updates`` None when the line has none, ``matrix`` the
    (layers, heads) gate means (NaN where the line has no value). Reads ``--log-format simple``/``tqdm`` lines
    (``gate_l0h0 0.4987``) and ``json`` lines (``"valid_gate_l0h0": "0.4987"``). ``subset``: only that
    validation subset (default: every subset). ValueError naming the file when no line holds gate values.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such training log")
    history: History = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f.read().splitlines():
            if "gate_l" not in line:
                continue
            entry = _parse_simple_line(line, subset) or _parse_json_line(line, subset)
            if entry is not None:
                history.append(entry)
    if not history:
        which = f"of subset {subset!r} " if subset else ""
        raise ValueError(f"{path}: no validation line {which}with gate values (gate_l<layer>h<head>) found; it needs "
                         "the log of a gated model (--gate-layers) with --log-format simple, tqdm or json")
    return history


def last_per_epoch(history: History) -> History:
    """The last validation of each epoch, by epoch (entries without an epoch are left out)."""
    last: Dict[int, Tuple[Optional[int], Optional[int], np.ndarray]] = {}
    for entry in history:
        if entry[0] is not None:
            last[entry[0]] = entry
    return [last[e] for e in sorted(last)]


# ---------------------------------------------------------------------------------------------- plots

def _check_image_path(out_path: PathLike) -> Path:
    out = Path(out_path)
    if out.suffix.lower() not in IMAGE_SUFFIXES:
        raise ValueError(f"{out}: unsupported image type {out.suffix or '(none)'!r}; use one of {', '.join(IMAGE_SUFFIXES)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib is optional (the plot extra)
    from matplotlib.figure import Figure  # lazy: as above

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig, out: Path) -> None:
    fig.savefig(out, dpi=150 if out.suffix.lower() == ".png" else None, bbox_inches="tight")


def _row_mean(row: np.ndarray) -> float:
    finite = row[np.isfinite(row)]
    return float(finite.mean()) if finite.size else math.nan


def mean_gate(matrix) -> float:
    """The mean over the gated cells (NaN when there are none)."""
    return _row_mean(np.asarray(matrix, dtype=float).ravel())


def write_gate_tsv(matrix, path: PathLike) -> Path:
    """The matrix as TSV: a header ``layer  head 0  head 1 …``, then one row per layer (its index first), NaN empty."""
    m = np.asarray(matrix, dtype=float)
    path = Path(path)
    lines = ["\t".join(["layer"] + [f"head {h}" for h in range(m.shape[1])])]
    for i, row in enumerate(m):
        lines.append("\t".join([str(i)] + ["" if not np.isfinite(v) else format(float(v), ".8g") for v in row]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_gate_tsv(path: PathLike) -> np.ndarray:
    """The matrix of a TSV written by :func:`write_gate_tsv` (empty cells as NaN)."""
    rows = Path(path).read_text(encoding="utf-8").splitlines()[1:]
    return np.array([[float(c) if c.strip() else math.nan for c in r.split("\t")[1:]] for r in rows if r], dtype=float)


def plot_gate_heatmap(matrix, out_path: PathLike, title: Optional[str] = None):
    """Heat map of a (layers, heads) gate matrix saved to ``out_path`` (.png, .pdf or .svg by its suffix), and the
    matrix as TSV next to it (``out_path`` with suffix ``.tsv``, see :func:`write_gate_tsv`).

    Rows are encoder layers ("layer 0" at the top), columns heads; colour scale fixed to 0..1, each gated cell
    shows its value, NaN cells stay blank. Returns the matplotlib Figure (the image: ``fig.axes[0].images[0]``).
    """
    import matplotlib  # lazy: matplotlib is optional (the plot extra)

    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or 0 in m.shape:
        raise ValueError(f"a gate matrix is (layers, heads) and not empty, found shape {m.shape}")
    out = _check_image_path(out_path)
    n_layers, n_heads = m.shape
    fig = _figure(max(3.5, 1.6 + 0.8 * n_heads), max(2.2, 1.0 + 0.5 * n_layers))
    ax = fig.add_subplot(1, 1, 1)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=(1.0, 1.0, 1.0, 0.0))  # NaN cells: blank
    image = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    for (i, h), v in np.ndenumerate(m):
        if np.isfinite(v):
            ax.text(h, i, f"{v:.2f}", ha="center", va="center", fontsize=8, color="white" if v < 0.6 else "black")
    ax.set_xticks(range(n_heads))
    ax.set_xticklabels([f"head {h}" for h in range(n_heads)])
    ax.set_yticks(range(n_layers))
    ax.set_yticklabels([f"layer {i}" for i in range(n_layers)])
    ax.tick_params(length=0)
    ax.set_title(title if title is not None else "mean syntax gate G per encoder layer and head", fontsize=10)
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("gate G (1 = syntax attention)")
    bar.set_ticks([0.0, 0.25, 0.5, 0.75, 1.0])
    _save(fig, out)
    write_gate_tsv(m, out.with_suffix(".tsv"))
    return fig


def plot_gate_epochs(history: Sequence, out_path: PathLike, title: Optional[str] = None):
    """One line per layer: the layer's mean gate (over its gated heads) against the epoch, from the last validation
    of each epoch of ``history`` (:func:`gate_history_from_log`). Layers never gated are left out. Returns the Figure."""
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib is optional (the plot extra)

    points = last_per_epoch(list(history))
    if not points:
        raise ValueError("no validation with an epoch number to plot")
    out = _check_image_path(out_path)
    epochs = [e for e, _, _ in points]
    n_layers = max(np.asarray(m).shape[0] for _, _, m in points)
    fig = _figure(6.0, 3.8)
    ax = fig.add_subplot(1, 1, 1)
    for i in range(n_layers):
        ys = [_row_mean(np.asarray(m, dtype=float)[i]) if i < np.asarray(m).shape[0] else math.nan for _, _, m in points]
        if all(math.isnan(y) for y in ys):
            continue
        ax.plot(epochs, ys, marker="o", markersize=3, label=f"layer {i}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("mean gate G over the layer's heads")
    ax.set_ylim(0.0, 1.0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.set_title(title if title is not None else "syntax gates during training (last validation of each epoch)", fontsize=10)
    if ax.lines:
        ax.legend(fontsize=8, loc="best")
    _save(fig, out)
    return fig
