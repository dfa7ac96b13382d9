"""The ``syntax_translation_multi_simple_epoch`` task: fairseq's ``translation_multi_simple_epoch`` (the task of
mBART-50, M2M-100 and NLLB-200) whose language pairs carry their syntax sidecars, the features following the language
tokens under each of its options (:mod:`.multilingual_data`). Same flags as fairseq's task; the data-bin holds each
pair binarized with the pretrained model's fixed dictionary, each with its sidecars (docs/commands.md)."""
import logging
from typing import Tuple

from fairseq.tasks import LegacyFairseqTask, register_task
from fairseq.tasks.translation_multi_simple_epoch import TranslationMultiSimpleEpochTask
from fairseq.utils import split_paths

from ..data import sidecars
from ..data.feature_range import feature_range
from ..data.missing_sidecars import how_to_write
from ..generation.end_of_split import EndOfSplit
from ..generation.printing import NO_GOLD, PRINT_SYNTAX_HELP, gen_subset_of, syntax_generator
from .cpu_autocast import CPU_AUTOCAST, CPU_AUTOCAST_HELP
from .checkpoint_match import check_decided_overrides, check_resume_dictionaries, check_warm_start
from .model_interface import SyntaxModel, SyntaxTask, model_overrides
from .multilingual_data import SyntaxDataManager, pair_direction
from .syntax_steps import SyntaxSteps

logger = logging.getLogger("syntrans.task")


@register_task("syntax_translation_multi_simple_epoch")
class SyntaxMultiSimpleEpochTask(SyntaxSteps, TranslationMultiSimpleEpochTask, SyntaxTask):
    """``translation_multi_simple_epoch`` whose batches carry the syntax features the model reads."""

    @staticmethod
    def add_args(parser):
        """fairseq's flags, and ``--cpu-autocast`` (:mod:`.cpu_autocast`)."""
        TranslationMultiSimpleEpochTask.add_args(parser)
        parser.add_argument("--cpu-autocast", choices=CPU_AUTOCAST, default="off", help=CPU_AUTOCAST_HELP)
        parser.add_argument("--print-syntax", action="store_true", help=PRINT_SYNTAX_HELP)

    def __init__(self, args, langs, dicts, training):
        super().__init__(args, langs, dicts, training)
        for flag, value in (("--truncate-source", args.truncate_source), ("--load-alignments", args.load_alignments),
                            ("--extra-data", args.extra_data)):
            if value:
                raise ValueError(f"{flag} is not supported by syntax_translation_multi_simple_epoch (the sidecars "
                                 "follow the main data's sentences whole)")
        self.data_manager = SyntaxDataManager(args, self.lang_pairs, langs, dicts, self.sampling_method)
        self.syntax_generator = self.syntax_printer = None  # --print-syntax: the generator whose parses are printed

    @property
    def syntax_needs(self):
        return self.data_manager.needs

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        self._check_needs(split)

    def _check_needs(self, split):
        needs = self.syntax_needs
        train = needs.training if split == getattr(self.args, "train_subset", None) else set()
        for ds in self.data_manager.pairs.get(split, []):
            for name in sorted(needs.required | train):
                why = ds.missing(name)
                if why:
                    role = "its training loss needs" if name not in needs.required else "the model asks for"
                    raise FileNotFoundError(f"split {split} of {self.args.data}: {role} {why}, which is missing "
                                            f"(expected {ds.sidecar_path(name)}); {how_to_write(ds.lacking(name))}")

    def value_range(self, side: str, feature: str) -> Tuple[int, int]:
        """(smallest, largest) value of ``feature`` over one side (``encoder``: the sources, ``decoder``: the targets)
        of every language pair's training split."""
        data_path, split = split_paths(self.args.data)[0], getattr(self.args, "train_subset", "train")
        lo = hi = None
        for pair in self.lang_pairs:
            src, tgt = pair.split("-")
            a, b = pair_direction(data_path, split, src, tgt)
            lang = src if side == "encoder" else tgt
            try:
                low, high = feature_range(sidecars.load_side(data_path, split, a, b, lang), feature)
            except FileNotFoundError as e:
                raise FileNotFoundError(f"split {split} of {data_path}, {pair}, {lang} side: {e}") from None
            lo, hi = (low, high) if lo is None else (min(lo, low), max(hi, high))
        logger.info(f"values of {feature} (the {side} side) in {split} of {', '.join(self.lang_pairs)}: {lo}..{hi}, "
                    "fixed into the model")
        return lo, hi

    def model_overrides_text(self) -> str:
        text = getattr(self.args, "model_overrides", "")
        return text if isinstance(text, str) else ""

    def build_model(self, args, from_checkpoint=False):
        """fairseq's model building; a new model's dictionaries and Transformer checked against the checkpoint it
        will start from (:mod:`.checkpoint_match`), then the features the model reads requested of every pair."""
        if from_checkpoint:  # (fairseq-generate refuses --arch with this task itself: its parser has no such flag)
            check_decided_overrides(model_overrides(self), args)  # {'arch': …} would build another model class
        model = super().build_model(args, from_checkpoint)
        if not from_checkpoint:
            check_resume_dictionaries(self, model)
            check_warm_start(self, model, args)
        if isinstance(model, SyntaxModel):
            if not from_checkpoint:
                model.allow_warm_start()
            self.data_manager.request(self.syntax_needs | model.syntax_needs())
        for split in list(self.datasets):
            self._check_needs(split)
        return model

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None):
        """fairseq's generator, each model's decoder told how many tokens the generator forces between BOS and the
        sentence: the target language token, which fairseq's ``inference_step`` puts there under ``--decoder-langtok``
        (unless it replaces BOS: ``--lang-tok-replacing-bos-eos``), and the features fill in training."""
        _, tgt_langtok = self.args.langtoks["main"]
        before = 1 if tgt_langtok and not self.args.lang_tok_replacing_bos_eos else 0
        for model in models:
            decoder = getattr(model, "decoder", None)
            if hasattr(decoder, "target_prefix_tokens"):
                decoder.target_prefix_tokens = before

        def build(cls):
            if cls is None:
                return super(SyntaxMultiSimpleEpochTask, self).build_generator(
                    models, args, extra_gen_cls_kwargs=extra_gen_cls_kwargs)
            # fairseq 0.12's task drops seq_gen_cls: its own kwargs (the target language token stripped from the
            # output, unless --keep-inference-langtok), then the base task's build with the class
            kwargs = dict(extra_gen_cls_kwargs or {})
            if tgt_langtok and not getattr(args, "keep_inference_langtok", False):
                kwargs["symbols_to_strip_from_output"] = {
                    self.data_manager.get_decoder_langtok(self.args.target_lang, tgt_langtok)}
            return LegacyFairseqTask.build_generator(self, models, args, seq_gen_cls=cls, extra_gen_cls_kwargs=kwargs)

        if not getattr(self.args, "print_syntax", False):
            return build(seq_gen_cls)
        subset = getattr(self.args, "gen_subset", None) or "test"
        pairs = self.data_manager.pairs.get(subset, [])
        self.syntax_generator, self.syntax_printer = syntax_generator(
            self, models, args, build, seq_gen_cls, gold=pairs[0] if len(pairs) == 1 else NO_GOLD,
            skip_tokens=self._language_tokens())
        return self.syntax_generator

    def _language_tokens(self):
        """The language tokens the task puts into the generation pair's source and target."""
        src_spec, tgt_spec = self.args.langtoks["main"]
        found = {self.data_manager.get_encoder_langtok(self.args.source_lang, self.args.target_lang, src_spec),
                 self.data_manager.get_decoder_langtok(self.args.target_lang, tgt_spec)}
        return {int(t) for t in found if t is not None}

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq's step; with ``--print-syntax`` the batch's SH-/TH- lines are printed (before its S- lines)."""
        hypos = super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)
        if self.syntax_printer is not None and generator is self.syntax_generator:
            self.syntax_printer.batch(sample, hypos)
        return hypos

    def get_batch_iterator(self, dataset, *args, **kwargs):
        """fairseq's iterator; with ``--print-syntax``, the generation split's ends with the UAS summary."""
        epoch_iter = super().get_batch_iterator(dataset, *args, **kwargs)
        if getattr(self.args, "print_syntax", False) and gen_subset_of(self, dataset):
            epoch_iter = EndOfSplit(epoch_iter, self._end_of_split)
        return epoch_iter

    def _end_of_split(self):
        if self.syntax_printer is not None:
            self.syntax_printer.finish()

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        if self.syntax_needs.required:
            raise NotImplementedError("interactive translation needs syntax features for the input: binarize it with "
                                      "syntrans-preprocess and use fairseq-generate")
        return super().build_dataset_for_inference(src_tokens, src_lengths, constraints=constraints)


__all__ = ["SyntaxMultiSimpleEpochTask"]
