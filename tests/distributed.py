"""fairseq-train in several CPU processes for the tests (``from distributed import …``): fairseq's own distributed
code, gloo, one process per rank started here.

fairseq cannot start CPU ranks itself (it spawns one per CUDA device and asserts there are some), so each rank is
a ``fairseq-train`` of its own with an explicit rendezvous (``--distributed-init-method tcp://…`` and
``--distributed-rank r --distributed-no-spawn``), and ``--ddp-backend legacy_ddp``: torch's DDP, fairseq's
default, is refused on CPU because fairseq passes it a device id. ``backend="pytorch_ddp"`` runs fairseq-train
through tests/torch_ddp_cpu.py, which drops that device id and nothing else. A rank that dies leaves the others
waiting in a collective (gloo's default timeout is 30 minutes), so a watchdog stops the survivors at once.

Like helpers.py, importing this module imports neither syntrans nor fairseq nor torch.
"""
import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence

from helpers import BIN

# set by torchrun (and other launchers): fairseq would take them for its env:// rendezvous
LAUNCHER_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "MASTER_ADDR",
                "MASTER_PORT", "TORCHELASTIC_RUN_ID")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the OS's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TORCH_DDP_CPU = Path(__file__).resolve().parent / "torch_ddp_cpu.py"  # fairseq-train under torch's DDP on CPU


def rank_flags(rank: int, world_size: int, port: int, backend: str = "legacy_ddp") -> List[str]:
    """The fairseq-train flags of one CPU rank (docs/distributed.md)."""
    return ["--cpu", "--ddp-backend", backend, "--distributed-world-size", str(world_size),
            "--distributed-backend", "gloo", "--distributed-init-method", f"tcp://127.0.0.1:{port}",
            "--distributed-rank", str(rank), "--distributed-no-spawn"]


@dataclass
class Ranks:
    returncodes: List[int]  # negative: ended by a signal (-9 where the watchdog stopped it)
    stopped: List[bool]  # stopped by the watchdog
    stdout: List[str]
    stderr: List[str]
    timed_out: bool

    @property
    def ok(self) -> bool:
        return not self.timed_out and not any(self.stopped) and all(rc == 0 for rc in self.returncodes)

    def report(self, tail: int = 2500) -> str:
        """Each rank's exit status and the ends of its stderr (its stdout's where stderr is empty)."""
        parts = ["timed out: the watchdog stopped the ranks" if self.timed_out else "ranks ended"]
        for r, (rc, out, err) in enumerate(zip(self.returncodes, self.stdout, self.stderr)):
            status = "stopped by the watchdog" if self.stopped[r] else f"exit status {rc}"
            parts.append(f"--- rank {r}: {status}; {'stderr' if err.strip() else 'stdout'}:\n"
                         f"{(err if err.strip() else out)[-tail:]}")
        return "\n".join(parts)


def start_ranks(argv: Sequence, world_size: int = 2, rank_argv: Sequence[Sequence] = (), timeout: float = 300,
                tool: str = "fairseq-train", backend: str = "legacy_ddp") -> Ranks:
    """Run ``tool argv… rank_argv[r]… rank_flags(r)`` for every rank r and wait for all of them; as soon as one
    fails, or ``timeout`` seconds pass, the others are stopped (they would wait for it in a collective).
    ``backend`` ``pytorch_ddp``: fairseq-train through :data:`TORCH_DDP_CPU` (torch's DDP on CPU)."""
    command = [str(BIN / "python"), "-m", TORCH_DDP_CPU.stem] if backend == "pytorch_ddp" else [str(BIN / tool)]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_ENV and k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    if backend == "pytorch_ddp":  # python -m torch_ddp_cpu: its folder on the path
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TORCH_DDP_CPU.parent), env.get("PYTHONPATH")) if p)
    env["PYTHONWARNINGS"] = "ignore"
    env.setdefault("OMP_NUM_THREADS", "1")  # the ranks share the cores
    files = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in range(world_size)]
    procs = []
    try:
        for r in range(world_size):
            extra = list(rank_argv[r]) if r < len(rank_argv) else []
            procs.append(subprocess.Popen([*command, *map(str, argv), *map(str, extra),
                                           *rank_flags(r, world_size, port, backend)],
                                          stdout=files[r][0], stderr=files[r][1], env=env))
        deadline = time.monotonic() + timeout
        timed_out = False
        while any(p.poll() is None for p in procs):
            if any(p.returncode not in (None, 0) for p in procs):
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.1)
    finally:
        stopped = [p.poll() is None for p in procs]
        for p, stop in zip(procs, stopped):
            if stop:
                p.kill()
                p.wait()
    texts = []
    for out, err in files:
        out.seek(0)
        err.seek(0)
        texts.append((out.read(), err.read()))
        out.close()
        err.close()
    return Ranks([p.returncode for p in procs], stopped, [t[0] for t in texts], [t[1] for t in texts], timed_out)


def train_distributed(argv: Sequence, world_size: int = 2, timeout: float = 300, backend: str = "legacy_ddp") -> str:
    """fairseq-train ``argv`` in ``world_size`` CPU processes; asserts every rank succeeded and returns rank 0's
    stdout + stderr (only rank 0 logs metrics and writes checkpoints)."""
    ranks = start_ranks(argv, world_size, timeout=timeout, backend=backend)
    assert ranks.ok, f"fairseq-train in {world_size} processes failed:\n{ranks.report()}"
    return ranks.stdout[0] + ranks.stderr[0]
