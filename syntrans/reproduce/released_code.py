"""What the authors' released code sets, per config of ``configs/``: the facts the configs follow where a paper is
silent and the Deviations block prints beside the paper's values where it is not.

Three papers released code (read at their public repositories' latest commits, values recorded here, no code copied):

* Bugliarello & Okazaki 2020 — github.com/e-bug/pascal: ``experiments/<dataset>/<model>/train.sh`` (training),
  ``…/eval.sh`` (decoding, scoring), ``experiments/<dataset>/prepare*_data.sh`` and ``binarize*.sh`` (data);
* Hou et al. 2022 (distance-mask) — github.com/LUMIA-Group/distance_transformer: ``run/train_<dataset>[_baseline].sh``
  (training and decoding), the ``--arch`` defaults of ``fairseq/models/{distance_,}transformer.py``, and
  ``preprocess/prepare*.sh`` (data);
* Deguchi et al. — github.com/de9uch1/dbsa, the DBSA plugin (Deguchi et al. 2019, the 2021 paper's DBSA row):
  ``dbsa/configs/transformer_dep.yaml`` (training), ``README.rst`` (decoding), ``scripts/prepare-aspec.sh`` (data).

:func:`released` gives one config's :class:`Released`: each key (a fairseq-train flag as :mod:`.published` keys it,
``tokens-per-update``, ``decode --beam``/``decode --lenpen``, ``checkpoint``) with the value the authors' code uses
and the file that sets it; a value of None means the code leaves that flag out. A system the authors released no
script for (the gated paper's, Hou et al.'s WMT14 baseline, Deguchi et al.'s baseline and SyncAttn) has ``none``:
why, and what ours follows instead.

The rule the configs follow (``tests/test_published_settings.py`` checks it): where the paper states a value, ours
is the paper's and the code's value is printed beside it when it differs; where the paper is silent and the code
sets it, ours is the code's (``# authors' code: <file>``), or the config says why not (``# deviates from the
authors' code: …``); ``# ours`` only where both are silent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

PASCAL_REPO = "github.com/e-bug/pascal"
DISTANCE_REPO = "github.com/LUMIA-Group/distance_transformer"
DBSA_REPO = "github.com/de9uch1/dbsa"


@dataclass(frozen=True)
class Released:
    """One config's counterpart in the authors' released code."""

    repo: str  # e.g. "github.com/e-bug/pascal"
    values: Dict[str, Tuple[Optional[str], str]] = field(default_factory=dict)  # key → (value, file)
    none: str = ""  # no released script for this system: why, and what ours follows
    note: str = ""  # what the values stand for when they are another system's (SyncAttn: the DBSA model's)

    def files(self) -> Tuple[str, ...]:
        """The files the values come from, in first-seen order."""
        seen = []
        for _, where in self.values.values():
            if where not in seen:
                seen.append(where)
        return tuple(seen)


def _v(where: str, **flags) -> Dict[str, Tuple[Optional[str], str]]:
    """{"--flag": (value, where)} from keyword flags: True → a switch that is on (""), None → left out."""
    return {"--" + k.replace("_", "-"): ("" if v is True else None if v is None else str(v), where)
            for k, v in flags.items()}


def _decode(where: str, beam, lenpen) -> Dict[str, Tuple[Optional[str], str]]:
    return {"decode --beam": (str(beam), where), "decode --lenpen": (str(lenpen), where)}


# ---------------------------------------------------------------- Bugliarello & Okazaki 2020: github.com/e-bug/pascal
#: our dataset key → the folder of experiments/
BO_DIRS = {"nc11_en_de": "nc11en2de", "nc11_de_en": "nc11de2en", "wmt16_en_de": "wmt16en2de",
           "wmt17_en_de": "wmt17en2de", "wmt18_en_tr": "wmt18en2tr", "aspec_en_ja": "wat18en2ja"}
#: our system (the config's variant) → the model folder of experiments/<dataset>/
BO_MODELS = {"baseline": "transformer", "pascal": "transformer_pascal", "lisa": "transformer_lisa",
             "multitask": "transformer_multitask", "sh": "transformer_tagemb"}
#: (--lr, β2 of --adam-betas) of every train.sh, per (dataset, system)
BO_LR_BETA2 = {
    ("nc11_en_de", "baseline"): ("0.001", "0.997"), ("nc11_en_de", "pascal"): ("0.0007", "0.997"),
    ("nc11_en_de", "lisa"): ("0.0007", "0.997"), ("nc11_en_de", "multitask"): ("0.0007", "0.997"),
    ("nc11_en_de", "sh"): ("0.0007", "0.997"),
    ("nc11_de_en", "baseline"): ("0.001", "0.997"), ("nc11_de_en", "pascal"): ("0.0007", "0.997"),
    ("nc11_de_en", "lisa"): ("0.0007", "0.98"), ("nc11_de_en", "multitask"): ("0.0007", "0.98"),
    ("nc11_de_en", "sh"): ("0.0007", "0.997"),
    ("wmt18_en_tr", "baseline"): ("0.001", "0.997"), ("wmt18_en_tr", "pascal"): ("0.0007", "0.98"),
    ("wmt18_en_tr", "lisa"): ("0.0007", "0.98"), ("wmt18_en_tr", "multitask"): ("0.0007", "0.997"),
    ("wmt18_en_tr", "sh"): ("0.0007", "0.997"),
    ("wmt16_en_de", "baseline"): ("0.001", "0.997"), ("wmt16_en_de", "pascal"): ("0.0007", "0.98"),
    ("wmt16_en_de", "lisa"): ("0.0007", "0.997"), ("wmt16_en_de", "multitask"): ("0.001", "0.997"),
    ("wmt16_en_de", "sh"): ("0.001", "0.997"),
    ("wmt17_en_de", "baseline"): ("0.001", "0.997"), ("wmt17_en_de", "pascal"): ("0.0007", "0.997"),
    ("wmt17_en_de", "lisa"): ("0.0007", "0.997"), ("wmt17_en_de", "multitask"): ("0.001", "0.997"),
    ("wmt17_en_de", "sh"): ("0.001", "0.997"),
    ("aspec_en_ja", "baseline"): ("0.001", "0.997"), ("aspec_en_ja", "pascal"): ("0.0007", "0.997"),
    ("aspec_en_ja", "lisa"): ("0.001", "0.997"), ("aspec_en_ja", "multitask"): ("0.0007", "0.98"),
    ("aspec_en_ja", "sh"): ("0.001", "0.997"),
}
#: PASCAL's heads of layer 1 and parent ignoring in transformer_pascal/train.sh (--encoder-pascal-heads h 0 0 0 0 0,
#: --parent-ignoring q): Table 7's values
BO_PASCAL = {"nc11_en_de": (2, 0.4), "nc11_de_en": (8, 0.0), "wmt18_en_tr": (7, 0.3), "wmt16_en_de": (5, 0.0),
             "wmt17_en_de": (7, 0.3), "aspec_en_ja": (7, 0.0)}
BO_SMALL = ("nc11_en_de", "nc11_de_en", "wmt18_en_tr")
#: GPUs of every train.sh: 4 machines × 4 GPUs (train.sge; App. A), --max-tokens 2048 each, no --update-freq
BO_GPUS = 16


def bo_files(ds: str, system: str) -> Tuple[str, str]:
    """(train.sh, eval.sh) of one dataset and system in github.com/e-bug/pascal."""
    base = f"experiments/{BO_DIRS[ds]}/{BO_MODELS[system]}"
    return f"{base}/train.sh", f"{base}/eval.sh"


def _bugliarello(ds: str, system: str) -> Released:
    train, evaluation = bo_files(ds, system)
    lr, beta2 = BO_LR_BETA2[(ds, system)]
    small = ds in BO_SMALL
    values = _v(train, share_all_embeddings=True, dropout=0.3 if small else 0.1, label_smoothing=0.1,
                optimizer="adam", adam_betas=f"(0.9,{beta2})", adam_eps="1e-09", lr_scheduler="inverse_sqrt", lr=lr,
                warmup_updates=8000, warmup_init_lr="1e-07", max_update=20000 if small else 100000, max_tokens=2048)
    values["tokens-per-update"] = (str(2048 * BO_GPUS), f"{train} (--max-tokens 2048 on 4 machines × 4 GPUs)")
    values.update(_decode(evaluation, 4, 0.6))
    values["checkpoint"] = ("checkpoint_last.pt", evaluation)
    if system == "pascal":
        heads, q = BO_PASCAL[ds]
        values.update(_v(train, pascal_layers=0, pascal_heads=heads, pascal_ignore=q))
    if system == "lisa":
        values.update(_v(f"{train} (--encoder-lisa-layer 0, --parse-penalty 1)", lisa_layers=0, lisa_weight=1.0))
    return Released(PASCAL_REPO, values)


# ------------------------------------------------ Hou et al. 2022: github.com/LUMIA-Group/distance_transformer
HOU_SCRIPTS = {"iwslt14_de_en": "run/train_iwslt_de2en", "iwslt14_en_de": "run/train_iwslt_en2de",
               "nc11_de_en": "run/train_nc11_de2en", "nc11_en_de": "run/train_nc11_en2de",
               "aspec_zh_ja": "run/train_aspec_ch2ja", "wmt14_en_de": "run/train_wmt_en2de"}
_DIST_ARCH = "fairseq/models/distance_transformer.py"
_BASE_ARCH = "fairseq/models/transformer.py"
#: the --arch of each script and what its defaults set that the script does not (normalisation, FFN, heads,
#: attention dropout, and relu_dropout, which fairseq's layers read as the activation dropout when that is 0)
HOU_ARCH = {
    ("iwslt14_de_en", "method"): ("distance_transformer_iwslt_de_en", _DIST_ARCH,
                                  dict(encoder_normalize_before=True, decoder_normalize_before=True,
                                       activation_dropout=0.1, encoder_ffn_embed_dim=1024, encoder_attention_heads=4)),
    ("iwslt14_de_en", "baseline"): ("transformer_iwslt_de_en", _BASE_ARCH,
                                    dict(encoder_normalize_before=True, decoder_normalize_before=True,
                                         activation_dropout=None, encoder_ffn_embed_dim=512,
                                         decoder_ffn_embed_dim=512, encoder_attention_heads=4,
                                         attention_dropout=0.0)),
    ("iwslt14_en_de", "method"): ("distance_transformer_iwslt_en_de", _DIST_ARCH,
                                  dict(encoder_normalize_before=None, decoder_normalize_before=None,
                                       activation_dropout=0.1, encoder_ffn_embed_dim=1024, encoder_attention_heads=4)),
    ("iwslt14_en_de", "baseline"): ("transformer_iwslt_en_de", _BASE_ARCH,
                                    dict(encoder_normalize_before=True, decoder_normalize_before=True,
                                         activation_dropout=None, encoder_ffn_embed_dim=1024,
                                         encoder_attention_heads=4, attention_dropout=0.0)),
    ("nc11", "method"): ("distance_transformer_nc11_{}", _DIST_ARCH,
                         dict(encoder_normalize_before=None, decoder_normalize_before=None, activation_dropout=0.1,
                              encoder_ffn_embed_dim=1024, encoder_attention_heads=4)),
    ("nc11", "baseline"): ("transformer_nc11_{}", _BASE_ARCH,
                           dict(encoder_normalize_before=True, decoder_normalize_before=True, activation_dropout=None,
                                encoder_ffn_embed_dim=1024, encoder_attention_heads=4, attention_dropout=0.0)),
    ("aspec_zh_ja", "method"): ("distance_transformer_aspec_ch_ja", _DIST_ARCH,
                                dict(encoder_normalize_before=None, decoder_normalize_before=None,
                                     activation_dropout=None, encoder_ffn_embed_dim=2048, encoder_attention_heads=8,
                                     decoder_attention_heads=8)),
    ("aspec_zh_ja", "baseline"): ("transformer_aspec_ch_ja", _BASE_ARCH,
                                  dict(encoder_normalize_before=None, decoder_normalize_before=None,
                                       activation_dropout=None, encoder_ffn_embed_dim=2048, encoder_attention_heads=8,
                                       decoder_attention_heads=8)),
    ("wmt14_en_de", "method"): ("distance_transformer_wmt_en_de", _DIST_ARCH,
                                dict(encoder_normalize_before=True, decoder_normalize_before=True,
                                     activation_dropout=0.1, encoder_ffn_embed_dim=1024, encoder_attention_heads=8)),
}
#: what each run/*.sh sets itself: (lr, warm-up, warm-up init lr, attention dropout, dropout, embeddings, max tokens
#: per GPU, GPUs × update-freq, epochs, beam, lenpen); "0" as the warm-up init lr: fairseq's default when the script
#: passes none (0 when there is a warm-up)
HOU_RUNS = {
    ("iwslt14_de_en", "method"): ("0.007", 6000, "1e-07", 0.2, 0.3, "all", 8192, 2, 100, 5, 1.0),
    ("iwslt14_de_en", "baseline"): ("0.007", 6000, "1e-07", None, 0.3, "all", 8192, 2, 100, 5, 1.0),
    ("iwslt14_en_de", "method"): ("0.001", 8000, "0", 0.2, 0.3, "decoder", 8192, 2, 100, 5, 1.0),
    ("iwslt14_en_de", "baseline"): ("0.001", 8000, "0", None, 0.3, "decoder", 8192, 2, 100, 5, 1.0),
    ("nc11", "method"): ("0.001", 4000, "1e-07", 0.2, 0.3, "all", 8192, 4, 80, 4, 0.6),
    ("nc11", "baseline"): ("0.001", 4000, "1e-07", None, 0.3, "all", 8192, 4, 80, 4, 0.6),
    ("aspec_zh_ja", "method"): ("0.0003", 4000, "0", 0.1, 0.3, "decoder", 8192, 2, 120, 5, 1.0),
    ("aspec_zh_ja", "baseline"): ("0.0003", 4000, "0", 0.0, 0.3, "decoder", 8192, 2, 120, 5, 1.0),
    ("wmt14_en_de", "method"): ("0.01", 8000, "1e-07", 0.1, 0.1, "decoder", 32768, 8, 220, 4, 0.6),
}
HOU_HEADS = {"iwslt14_de_en": 4, "iwslt14_en_de": 3, "nc11_de_en": 4, "nc11_en_de": 3, "aspec_zh_ja": 2,
             "wmt14_en_de": 2}
#: WMT14's script scores each of the last ten epoch checkpoints (fairseq-generate's tokenized BLEU4)
HOU_WMT14_CHECKPOINT = "the BLEU4 of each of checkpoint211.pt … checkpoint220.pt (the last 10 of 220 epochs)"


def _hou(ds: str, system: str) -> Released:
    if (ds, system) == ("wmt14_en_de", "baseline"):
        return Released(DISTANCE_REPO, none=f"the authors released no WMT14 baseline script (only "
                                            f"{HOU_SCRIPTS[ds]}.sh, the method's): ours takes the method's script's "
                                            "values, so the two rows differ by the syntax heads alone")
    group = "nc11" if ds.startswith("nc11") else ds
    script = HOU_SCRIPTS[ds] + ("_baseline.sh" if system == "baseline" else ".sh")
    arch, arch_file, arch_values = HOU_ARCH[(group, system)]
    arch = arch.format(ds[5:]) if "{}" in arch else arch
    lr, warmup, init, attn, dropout, tied, max_tokens, gpus, epochs, beam, lenpen = HOU_RUNS[(group, system)]
    values = _v(f"{arch_file} ({arch})", **arch_values)
    values.update(_v(script, lr=lr, warmup_updates=warmup, warmup_init_lr=init, dropout=dropout,
                     adam_betas="(0.9,0.98)", weight_decay=0.0001, label_smoothing=0.1, max_tokens=max_tokens,
                     max_epoch=epochs, max_update=None, share_all_embeddings=True if tied == "all" else None,
                     share_decoder_input_output_embed=True if tied == "decoder" else None))
    if attn is not None:
        values.update(_v(script, attention_dropout=attn))
    values["tokens-per-update"] = (str(max_tokens * gpus), f"{script} (--max-tokens {max_tokens} × {gpus} GPUs × "
                                                           "--update-freq)")
    values.update(_decode(script, beam, lenpen))
    values["checkpoint"] = (HOU_WMT14_CHECKPOINT if ds == "wmt14_en_de" else "checkpoint_best.pt", script)
    if system == "method":
        values.update(_v(script, distance_layers=0, distance_heads=HOU_HEADS[ds], distance_tau=10))
    return Released(DISTANCE_REPO, values)


# ---------------------------------------------------------------- Deguchi et al.: github.com/de9uch1/dbsa
DBSA_YAML = "dbsa/configs/transformer_dep.yaml"
DBSA_README = "README.rst"


def _deguchi(ds: str, system: str) -> Released:
    if system == "baseline":
        return Released(DBSA_REPO, none=f"the released code is the DBSA plugin alone (no Transformer baseline): ours "
                                        f"trains the baseline with the DBSA model's values ({DBSA_YAML}), so the rows "
                                        "differ by the DBSA heads alone")
    values = _v(DBSA_YAML, dropout=0.1, attention_dropout=0.1, activation_dropout=0.1, label_smoothing=0.1,
                optimizer="adam", adam_betas="(0.9,0.98)", lr_scheduler="inverse_sqrt", lr=0.0007,
                warmup_updates=4000, warmup_init_lr="1e-07", max_update=100000, dbsa_encoder_layers=0,
                dbsa_decoder_layers=0, dbsa_weight=0.5)
    if ds.startswith("aspec"):  # the yaml's batch (one GPU) is App. A's ASPEC batch; the WMT models share all
        values.update(_v(DBSA_YAML, max_tokens=12000, share_decoder_input_output_embed=True))
    values.update(_decode(f"{DBSA_README} (fairseq-generate --beam 5, no --lenpen: fairseq's 1.0)", 5, 1.0))
    values["checkpoint"] = ("checkpoint_last.pt", f"{DBSA_README} (fairseq-generate --path "
                                                  "checkpoints/checkpoint_last.pt)")
    if system == "syncattn":
        return Released(DBSA_REPO, values, note="SyncAttn itself is not released: the values are the DBSA model's "
                                                f"({DBSA_YAML}), on which SyncAttn is built")
    return Released(DBSA_REPO, values)


_GATED_NONE = (f"the gated paper's code is not released; its IWSLT14 and NC11 data are the same authors' "
               f"distance-mask preparation ({DISTANCE_REPO}, preprocess/), listed with the data settings")


def released(config: str) -> Optional[Released]:
    """The authors' released counterpart of one config (its path under configs/), or None for a paper without
    released code (Ma et al. 2019) and our own recipes."""
    folder, name = config.split("/", 1)
    parts = name[: -len(".args")].split(".")
    ds, variant = parts[0], (parts[1] if len(parts) > 1 else "method")
    if folder in ("pascal", "lisa"):
        return _bugliarello(ds, variant if variant in ("baseline", "sh", "multitask") else folder)
    if folder == "distance_mask":
        return _hou(ds, "baseline" if variant == "baseline" else "method")
    if folder == "gated":
        return Released(DISTANCE_REPO, none=_GATED_NONE)
    if folder in ("dbsa", "syncattn"):
        return _deguchi(ds, "baseline" if variant == "baseline" else folder)
    return None


#: the config folders whose papers released code: each config there has a :class:`Released`
RELEASED_FOLDERS = ("pascal", "lisa", "distance_mask", "gated", "dbsa", "syncattn")

__all__ = ["Released", "released", "RELEASED_FOLDERS", "bo_files", "BO_DIRS", "HOU_SCRIPTS", "DBSA_YAML"]
