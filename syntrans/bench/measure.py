"""The benchmark's measurements: training and generation speed and peak memory, per device.

Measured for every model, on CPU (one torch thread unless ``--threads``) and (when available) CUDA, in
one process, interleaving the models inside each repetition (``for rep: for model: …``, the order
rotated every repetition) and taking the median over repetitions:

* training tokens/s: forward + backward + Adam step through ``syntax_label_smoothed_cross_entropy``
  over ``--batches`` training batches after ``--warmup`` untimed ones (target tokens, ``ntokens``);
* generation tokens/s: fairseq's ``SequenceGenerator`` (beam ``--beam``) over ``--gen-batches`` test
  batches, counting the tokens of the best hypothesis of each sentence (EOS included, as
  fairseq-generate does). Generation uses a copy of each model taken before any training step, so it
  is identical in every repetition; untrained models rarely stop early, so hypotheses mostly run to
  ``max_len_a · src_len + max_len_b`` and the lengths are reported with the speeds;
* peak memory of one training step (see :data:`MEMORY_METHOD`).

Every number is also given as a ratio to the model's reference row measured in the same run (see
:mod:`syntrans.bench.models`) and to the stock ``transformer``.
"""
from __future__ import annotations

import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import torch
from fairseq import utils
from fairseq.sequence_generator import SequenceGenerator
from torch.profiler import ProfilerActivity, profile

from ..criterions.syntax_label_smoothed_cross_entropy import SyntaxLabelSmoothedCrossEntropyCriterion
from .corpus import say
from .models import VANILLA, Bench, for_model
from .options import BenchOptions
from .bench_report import targets_for

MEMORY_METHOD = {
    "cpu": ("peak tensor memory of one training step (forward, backward, Adam step) on the largest timed batch, "
            "the same batch for every model = bytes held before the step (distinct storages of the model's "
            "parameters, buffers and tensors kept as module attributes, its Adam state and the batch) + the "
            "highest net amount allocated during the step, summed in time order from the CPU allocator's "
            "allocation/free events recorded by torch.profiler (profile_memory=True). One recorded step runs "
            "first so that state kept between steps is tracked; the check 'net change over the step = the "
            "new gradients' is reported as a residual (0 = exact accounting). Deterministic: independent of "
            "other processes and of allocator caching"),
    "cuda": ("peak of one training step (forward, backward, Adam step) on the largest timed batch after one "
             "untimed step on it = bytes held by this model before the step (as on CPU) + "
             "torch.cuda.max_memory_allocated() − torch.cuda.memory_allocated() around the step (peak stats "
             "reset right before it, so the other models resident on the GPU are not counted)"),
}


def _tensors(obj):
    if torch.is_tensor(obj):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


#: what torch's profiler writes to the process's stderr at every recording, not the benchmark's output: kineto's
#: start/stop notes and the CPU allocator's note that blocks allocated before the recording have no free event (the
#: reason a first run is recorded, see :func:`cpu_memory_events`)
PROFILER_NOISE = re.compile(r"^(USDT:.*profiler_(start|stop)\s*$|\[W[^\]]*CPUAllocator\.cpp:\d+\] Memory block of unknown "
                            r"size was allocated before the profiling started)")


@contextlib.contextmanager
def quiet_profiler() -> Iterator[None]:
    """Runs its block with the process's stderr (file descriptor 2, where torch's C++ code writes) caught; afterwards
    every caught line but :data:`PROFILER_NOISE` is written back to stderr, in order."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            kept = [line for line in caught.read().decode("utf-8", "replace").splitlines(keepends=True)
                    if not PROFILER_NOISE.match(line)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def cpu_memory_events(run: Callable[[], None]) -> list:
    """The CPU allocator's allocation (+) and free (−) events recorded by torch's profiler during ``run()``, in time
    order. Frees of blocks allocated before the recording are not reported: record a first run, so that the blocks
    kept between runs are recorded ones, and count the second. The profiler's own stderr notes are left out
    (:func:`quiet_profiler`)."""
    with quiet_profiler(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    events = [e for e in prof.profiler.kineto_results.events()
              if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]
    return sorted(events, key=lambda e: e.start_ns())


def running_peak(events: list) -> Tuple[int, int]:
    """(highest net amount allocated, net amount at the end) of time-ordered memory events, in bytes."""
    cur = peak = 0
    for e in events:
        cur += e.nbytes()
        peak = max(peak, cur)
    return peak, cur


def held_bytes(bench: Bench, sample: dict) -> int:
    """Bytes of the distinct storages held before a step: the model's parameters, gradients, buffers and
    tensors kept as module attributes (e.g. a syntax bias kept from the last batch), its Adam state
    and the batch."""
    storages = {}

    def add(t):
        st = t.untyped_storage()
        storages[(t.device.type, st.data_ptr())] = st.nbytes()

    for m in bench.model.modules():
        for t in _tensors(list(vars(m).values())):  # _parameters, _buffers and plain attributes
            add(t)
            if t.grad is not None:
                add(t.grad)
    for t in _tensors(list(bench.optimizer.state.values())):
        add(t)
    for t in _tensors(sample):
        add(t)
    return sum(storages.values())


class Runner:
    def __init__(self, opts: BenchOptions, task, benches: List[Bench], train: list, test: list, device: str):
        self.opts, self.device, self.benches = opts, device, benches
        self.cuda = device == "cuda"
        move = utils.move_to_cuda if self.cuda else (lambda s: s)
        self.train = [[move(for_model(s, b)) for s in train] for b in benches]
        self.test = [[move(for_model(s, b)) for s in test] for b in benches]
        self.criterion = SyntaxLabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
        self.generators = []
        for b in benches:
            b.model.load_state_dict(b.gen_model.state_dict())  # every device starts from the initial weights
            b.model.to(device)
            b.gen_model.to(device)
            b.gen_model.eval()
            b.optimizer = torch.optim.Adam(b.model.parameters(), lr=opts.lr, betas=(0.9, 0.98), eps=1e-8)
            self.generators.append(SequenceGenerator([b.gen_model], task.target_dictionary, beam_size=opts.beam,
                                                     max_len_a=opts.max_len_a, max_len_b=opts.max_len_b))

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def step(self, bench: Bench, sample: dict) -> None:
        bench.optimizer.zero_grad(set_to_none=True)
        loss, sample_size, _ = self.criterion(bench.model, sample)
        (loss / sample_size).backward()
        bench.optimizer.step()

    def train_pass(self, k: int, rep: int) -> float:
        b, batches = self.benches[k], self.train[k]
        b.model.train()
        torch.manual_seed(self.opts.seed + rep)  # same dropout stream for every model
        for s in batches[:self.opts.warmup]:
            self.step(b, s)
        self.sync()
        t0 = time.perf_counter()
        ntok = 0
        for s in batches[self.opts.warmup:]:
            self.step(b, s)
            ntok += int(s["ntokens"])
        self.sync()
        return ntok / (time.perf_counter() - t0)

    def gen_pass(self, k: int) -> Tuple[float, int, int]:
        b, gen = self.benches[k], self.generators[k]
        ntok = nsent = 0
        with torch.no_grad():
            self.sync()
            t0 = time.perf_counter()
            for s in self.test[k]:
                hypos = gen.generate([b.gen_model], s)
                ntok += sum(len(h[0]["tokens"]) for h in hypos)
                nsent += len(hypos)
            self.sync()
            dt = time.perf_counter() - t0
        return ntok / dt, ntok, nsent

    def peak_memory(self, k: int) -> Tuple[int, int, Optional[int]]:
        """(peak bytes, bytes held before the step, accounting residual) of one training step on the
        largest timed batch, after one untimed step on it (so that whatever the model keeps between
        steps was allocated while memory was tracked; see MEMORY_METHOD)."""
        b = self.benches[k]
        timed = self.train[k][self.opts.warmup:]
        sample = max(timed, key=lambda s: int(s["ntokens"]))
        b.model.train()
        if self.cuda:
            torch.manual_seed(self.opts.seed)
            self.step(b, sample)
            b.optimizer.zero_grad(set_to_none=True)
            held = held_bytes(b, sample)
            self.sync()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            torch.manual_seed(self.opts.seed)
            self.step(b, sample)
            self.sync()
            extra = torch.cuda.max_memory_allocated() - before
            residual = None
        else:
            # The CPU allocator reports to the profiler the allocations made while it records and the
            # frees of those; an earlier block's free goes unreported. The first recorded step makes
            # every block the model keeps between steps a recorded one, so the second step's frees of
            # them are counted.
            for trial in range(2):
                b.optimizer.zero_grad(set_to_none=True)
                held = held_bytes(b, sample)
                torch.manual_seed(self.opts.seed)
                events = cpu_memory_events(lambda: self.step(b, sample))
            extra, cur = running_peak(events)
            # after the step the net change must be exactly the new gradients (kept state is replaced
            # by state of the same size): a non-zero residual means something was not accounted for
            grads = sum(p.grad.numel() * p.grad.element_size() for p in b.model.parameters() if p.grad is not None)
            residual = cur - grads
        b.optimizer.zero_grad(set_to_none=True)
        return held + extra, held, residual

    def run(self) -> None:
        a = self.opts
        n = len(self.benches)
        for rep in range(a.reps):
            for k in [(rep + j) % n for j in range(n)]:  # rotate the order: no model is always first
                b = self.benches[k]
                tps = self.train_pass(k, rep)
                gps, ntok, nsent = self.gen_pass(k)
                b.train.append(tps)
                b.gen.append(gps)
                b.gen_tokens, b.gen_sentences = ntok, nsent
                say(f"{self.device} rep {rep + 1}/{a.reps} {b.name}: train {tps:,.0f} tok/s, generate {gps:,.0f} tok/s")
        for k, b in enumerate(self.benches):
            b.peak_bytes, b.static_bytes, b.mem_residual = self.peak_memory(k)


def measure_device(opts: BenchOptions, task, benches: List[Bench], train: list, test: list, device: str) -> dict:
    say(f"measuring on {device}: {len(benches)} models × {opts.reps} repetitions")
    runner = Runner(opts, task, benches, train, test, device)
    runner.run()
    by_name = {b.name: b for b in benches}
    stock = benches[0]

    def ratios(b: Bench, ref: Bench) -> Dict[str, float]:
        if ref is b:  # a reference against itself is exactly 1
            return {"train": 1.0, "gen": 1.0, "mem": 1.0}
        return {"train": statistics.median(b.train) / statistics.median(ref.train),
                "gen": statistics.median(b.gen) / statistics.median(ref.gen),
                "mem": b.peak_bytes / ref.peak_bytes}

    rows = []
    for b in benches:
        r = ratios(b, by_name[b.reference])
        rows.append({
            "model": b.name,
            "arch": b.arch,
            "reference": b.reference,
            "features": b.features,
            "params": b.params,
            "notes": b.notes,
            "train_tok_s": statistics.median(b.train),
            "train_ratio": r["train"],
            "train_tok_s_reps": list(b.train),
            "gen_tok_s": statistics.median(b.gen),
            "gen_ratio": r["gen"],
            "gen_tok_s_reps": list(b.gen),
            "gen_tokens": b.gen_tokens,
            "gen_sentences": b.gen_sentences,
            "gen_mean_len": b.gen_tokens / max(1, b.gen_sentences),
            "peak_mem_mb": b.peak_bytes / 2 ** 20,
            "mem_ratio": r["mem"],
            "held_mem_mb": b.static_bytes / 2 ** 20,
            "mem_residual_bytes": b.mem_residual,
            "ratios_vs_stock": ratios(b, stock),
            "targets": None if b.arch == VANILLA else targets_for(b.arch),
        })
    for b in benches:  # free device memory and reset for the next device
        b.model.to("cpu")
        b.gen_model.to("cpu")
        b.optimizer = None
        b.train, b.gen = [], []
    if device == "cuda":
        torch.cuda.empty_cache()
    info = {"device": device, "rows": rows, "memory_method": MEMORY_METHOD[device],
            "train_tokens_per_rep": sum(int(s["ntokens"]) for s in train[opts.warmup:]),
            "train_sentences_per_rep": sum(int(s["nsentences"]) for s in train[opts.warmup:]),
            "gen_sentences_per_rep": sum(len(s["id"]) for s in test)}
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    else:
        info["threads"] = torch.get_num_threads()
    return info
