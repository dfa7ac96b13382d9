"""The ``syntax_translation`` task: fairseq translation plus syntax sidecars for every split."""
# no ``from __future__ import annotations`` here: fairseq builds the task flags from the config fields' real types
import logging
import os
from dataclasses import dataclass, field
from typing import Optional, Tuple

from fairseq import utils
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask
from omegaconf import II
from omegaconf.errors import OmegaConfBaseException

from ..data import sidecars
from ..data.feature_range import feature_range
from ..data.features import FeatureNeeds
from ..data.missing_sidecars import how_to_write
from ..data.syntax_dataset import SyntaxPairDataset
from ..generation.end_of_split import EndOfSplit
from ..generation.printing import PRINT_SYNTAX_HELP, gen_subset_of, syntax_generator
from .checkpoint_match import check_decided_overrides, check_generation_arch, check_resume_dictionaries, check_warm_start
from .model_interface import SyntaxModel, SyntaxTask, model_overrides
from .cpu_autocast import CPU_AUTOCAST, CPU_AUTOCAST_HELP
from .shard_checks import check_shares
from .syntax_steps import SyntaxSteps

logger = logging.getLogger("syntrans.task")


@dataclass
class SyntaxTranslationConfig(TranslationConfig):
    """Same options as fairseq's translation task; sidecars are found next to the binarized data."""

    print_syntax: bool = field(default=False, metadata={"help": PRINT_SYNTAX_HELP})
    # where fairseq-generate writes, and the model overrides of the command that loads a checkpoint (no help: the
    # flags are fairseq's own, these fields only copy their values)
    cpu_autocast: ChoiceEnum(list(CPU_AUTOCAST)) = field(default="off", metadata={"help": CPU_AUTOCAST_HELP})
    cpu: bool = II("common.cpu")
    results_path: Optional[str] = II("common_eval.results_path")
    gen_subset: str = II("dataset.gen_subset")
    model_overrides: str = II("common_eval.model_overrides")


@register_task("syntax_translation", dataclass=SyntaxTranslationConfig)
class SyntaxTranslationTask(SyntaxSteps, TranslationTask, SyntaxTask):
    """Translation whose batches carry the syntax features the model reads (``model.syntax_needs()``)."""

    def __init__(self, cfg, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        self.syntax_needs = FeatureNeeds()  # of the models built so far; handed to every split
        self.syntax_generator = self.syntax_printer = None  # --print-syntax: the generator whose parses are printed

    def _check_supported(self):
        if self.cfg.truncate_source:
            raise ValueError("--truncate-source would cut tokens but not their syntax sidecars; syntax_translation refuses it")
        if self.cfg.load_alignments:
            raise ValueError("--load-alignments is not supported by syntax_translation")

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        self._check_supported()
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
        data_path = paths[(epoch - 1) % len(paths)]
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        # fairseq accepts data binarized in either direction; so do the sidecars
        a, b = (src, tgt) if os.path.exists(os.path.join(data_path, f"{split}.{src}-{tgt}.{src}.idx")) else (tgt, src)
        if os.path.exists(os.path.join(data_path, f"{split}1.{a}-{b}.{src}.idx")):
            raise NotImplementedError(f"{data_path}: sharded splits ({split}1, …) are not supported by syntax_translation yet")
        src_side = sidecars.load_side(data_path, split, a, b, src)
        tgt_side = sidecars.load_side(data_path, split, a, b, tgt)
        prefixes = {"source": sidecars.side_prefix(data_path, split, a, b, src),
                    "target": sidecars.side_prefix(data_path, split, a, b, tgt)}
        self.datasets[split] = SyntaxPairDataset(self.datasets[split], src_side, tgt_side, self.syntax_needs, prefixes)
        self._check_needs(split)

    def _check_needs(self, split):
        ds = self.datasets.get(split)
        if not isinstance(ds, SyntaxPairDataset):
            return
        needs = self.syntax_needs
        train = needs.training if split == self.cfg.train_subset else set()
        for name in sorted(needs.required | train):
            why = ds.missing(name)
            if why:
                role = "its training loss needs" if name not in needs.required else "the model asks for"
                raise FileNotFoundError(
                    f"split {split} of {self.cfg.data}: {role} {why}, which is missing "
                    f"(expected {ds.sidecar_path(name)}); {how_to_write(ds.lacking(name))}"
                )

    def value_range(self, side: str, feature: str) -> Tuple[int, int]:
        """(smallest, largest) value of batch feature ``feature`` over one side (``encoder``: the source, ``decoder``:
        the target) of the training split: what a model whose sizes depend on the values covers (asked by the model
        when it is built; a checkpoint keeps the range in its config)."""
        data_path = utils.split_paths(self.cfg.data)[0]
        split, src, tgt = self.cfg.train_subset, self.cfg.source_lang, self.cfg.target_lang
        lang = src if side == "encoder" else tgt
        a, b = (src, tgt) if os.path.exists(os.path.join(data_path, f"{split}.{src}-{tgt}.{src}.idx")) else (tgt, src)
        try:
            lo, hi = feature_range(sidecars.load_side(data_path, split, a, b, lang), feature)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"split {split} of {data_path}, {lang} side: {e}") from None
        logger.info(f"values of {feature} (the {side} side, {lang}) in {split}: {lo}..{hi}, fixed into the model")
        return lo, hi

    def model_overrides_text(self) -> str:
        """The ``--model-overrides`` of the command that loads a checkpoint (fairseq's ``common_eval.model_overrides``);
        '' where the task's config is not part of a command's config."""
        try:
            text = self.cfg.model_overrides
        except (AttributeError, OmegaConfBaseException):  # no root config to take it from
            return ""
        return "" if not isinstance(text, str) or text.startswith("${") else text

    def build_model(self, cfg, from_checkpoint=False):
        """fairseq's model building; then the features the model reads are requested of every split. A checkpoint's
        architecture is checked against the command's ``--arch`` and its ``--model-overrides`` (which may not name it), a new model's dictionaries against those of the
        checkpoint fairseq-train will load, and its Transformer against that of a checkpoint of another model it
        starts from, a stock Transformer's (:mod:`.checkpoint_match`)."""
        if from_checkpoint:
            check_generation_arch(self, cfg)  # fairseq-generate --arch: fairseq would ignore it
            check_decided_overrides(model_overrides(self), cfg)  # {'_name': …} has chosen fairseq's model class by now
        model = super().build_model(cfg, from_checkpoint=from_checkpoint)
        if not from_checkpoint:
            check_resume_dictionaries(self, model)  # a checkpoint_last.pt of another data-bin
            check_warm_start(self, model, cfg)  # a checkpoint of another model, e.g. a stock Transformer's
        if isinstance(model, SyntaxModel):
            if not from_checkpoint:
                model.allow_warm_start()  # fairseq-train's model: it may start from a stock Transformer's checkpoint
            self.syntax_needs = self.syntax_needs | model.syntax_needs()
            for ds in self.datasets.values():
                if isinstance(ds, SyntaxPairDataset):
                    ds.request(self.syntax_needs)
        for split in list(self.datasets):
            self._check_needs(split)
        return model

    def get_batch_iterator(self, dataset, *args, **kwargs):
        """fairseq's iterator, checked across the training processes: the same data in each, and batches enough
        for ``--skip-remainder-batch`` (see ``shard_checks``)."""
        epoch_iter = super().get_batch_iterator(dataset, *args, **kwargs)
        split = next((name for name, ds in self.datasets.items() if ds is dataset), "(unnamed)")
        check_shares(split, dataset, epoch_iter)
        if self.cfg.print_syntax and gen_subset_of(self, dataset):
            epoch_iter = EndOfSplit(epoch_iter, self._end_of_split)  # the UAS summary after the last batch
        return epoch_iter

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None, prefix_allowed_tokens_fn=None):
        """fairseq's generator; with ``--print-syntax`` one that records the parses (``syntrans.generation``)."""
        def build(cls):
            return super(SyntaxTranslationTask, self).build_generator(models, args, cls, extra_gen_cls_kwargs,
                                                                      prefix_allowed_tokens_fn)

        if not self.cfg.print_syntax:
            return build(seq_gen_cls)
        self.syntax_generator, self.syntax_printer = syntax_generator(self, models, args, build, seq_gen_cls)
        return self.syntax_generator

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq's step; with ``--print-syntax`` the batch's SH-/TH- lines are printed (before its S- lines)."""
        hypos = super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)
        if self.syntax_printer is not None and generator is self.syntax_generator:
            self.syntax_printer.batch(sample, hypos)
        return hypos

    def _end_of_split(self):
        if self.syntax_printer is not None:
            self.syntax_printer.finish()

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        if self.syntax_needs.required:
            raise NotImplementedError(
                "interactive translation needs syntax features for the input; use syntrans-translate (it parses the "
                "input), or binarize it with syntrans-preprocess and use fairseq-generate"
            )
        return super().build_dataset_for_inference(src_tokens, src_lengths, constraints=constraints)
