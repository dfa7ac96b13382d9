"""The training steps every syntax task shares (``syntax_translation`` and its multilingual form): fairseq's epoch
told to the model, frozen syntax parts under data-parallel training (:mod:`.frozen_params`), and the forward passes
under CPU autocast with ``--cpu-autocast bf16`` (:mod:`.cpu_autocast`). A mixin put before
the fairseq task class, so that ``super()`` reaches fairseq's own steps."""
import torch

from .cpu_autocast import autocast_criterion, check_cpu_autocast
from .frozen_params import drop_frozen_grads, frozen_params, needs_zero_tie, with_zero_tie
from .model_interface import SyntaxModel


class SyntaxSteps:
    def cpu_autocast_mode(self) -> str:
        """The task's ``--cpu-autocast`` (a dataclass task's ``cfg``, a legacy task's ``args``), checked against the
        device the run uses."""
        options = getattr(self, "cfg", None) or getattr(self, "args", None)
        mode = str(getattr(options, "cpu_autocast", "off"))
        check_cpu_autocast(mode, torch.cuda.is_available() and not getattr(options, "cpu", False))
        return mode

    def begin_epoch(self, epoch, model):
        """Tell the model fairseq's epoch (1-based) at every epoch start, a resumed one included (warm-ups)."""
        super().begin_epoch(epoch, model)
        if isinstance(model, SyntaxModel):
            model.set_epoch(epoch)

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        """fairseq's step; under torch DDP without ``--find-unused-parameters`` frozen parts (a warm-up) get a zero
        gradient through the loss, since DDP waits for one from every parameter (see ``frozen_params``)."""
        tied = frozen_params(model) if needs_zero_tie(model) else []
        if tied:
            criterion = with_zero_tie(criterion, tied)
        criterion = autocast_criterion(criterion, self.cpu_autocast_mode())  # --cpu-autocast: the forward in bfloat16
        return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad=ignore_grad)

    def valid_step(self, sample, model, criterion):
        """fairseq's step, its forward under CPU autocast with ``--cpu-autocast bf16`` as in training."""
        return super().valid_step(sample, model, autocast_criterion(criterion, self.cpu_autocast_mode()))

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq's step, under CPU autocast when fairseq-generate is given ``--cpu-autocast bf16``."""
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.cpu_autocast_mode() == "bf16"):
            return super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens,
                                          constraints=constraints)

    def optimizer_step(self, optimizer, model, update_num):
        """fairseq's step, without the gradients frozen parts got from data-parallel training (legacy_ddp fills
        missing gradients with zeros before its all-reduce): Adam would apply weight decay to those parts and count
        steps for them. One process leaves them without gradient anyway, so this changes nothing there."""
        drop_frozen_grads(model)
        super().optimizer_step(optimizer, model, update_num)


__all__ = ["SyntaxSteps"]
