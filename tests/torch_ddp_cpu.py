"""fairseq-train with ``--ddp-backend pytorch_ddp`` on CPU, for the tests (``python -m torch_ddp_cpu ARGS`` with
tests/ on PYTHONPATH, or ``python tests/torch_ddp_cpu.py ARGS``):
fairseq wraps the model in torch's DistributedDataParallel exactly as on a GPU
(``fairseq/models/distributed_fairseq_model.py``), except for ``device_ids``/``output_device``, which fairseq always
passes and torch refuses for a CPU module; this launcher drops those two arguments and changes nothing else. So
the model trains under torch's DDP (gradient buckets, the check that every parameter got a gradient) in CPU
processes with gloo, which is what the GPU runs do with NCCL."""
import sys

from fairseq_cli.train import cli_main  # first, as in fairseq-train: it sets up fairseq's logging format

import fairseq.models.distributed_fairseq_model as wrapping  # noqa: E402  (isort: skip)
from torch.nn.parallel import DistributedDataParallel  # noqa: E402


class CpuDistributedDataParallel(DistributedDataParallel):
    """torch's DDP, called the way fairseq calls it on a GPU, minus the device arguments."""

    def __init__(self, module, device_ids=None, output_device=None, **kwargs):
        super().__init__(module, **kwargs)
        print(f"torch_ddp_cpu: the model is wrapped in torch's DistributedDataParallel (find_unused_parameters="
              f"{self.find_unused_parameters})", file=sys.stderr, flush=True)


if __name__ == "__main__":
    wrapping.DistributedDataParallel = CpuDistributedDataParallel  # looked up when fairseq wraps the model
    sys.argv[0] = "fairseq-train"
    cli_main()
