"""The paper settings of ``syntax_transformer`` as fairseq architecture presets (``--arch NAME``).

A preset is a bundle of default flags: it sets fields by their flat names (``distance_layers``: the group
``distance``, field ``layers``) where they are not set already (:func:`set_fields`), so a flag given on the command
line wins, and every field no preset sets keeps the default its mechanism's config declares.
``--arch syntax_transformer`` is Transformer base with no mechanism on. Per-dataset settings of each paper's tables
live in ``configs/``.

fairseq runs a preset on the model's config as it holds it: the command line's flat Namespace, and again when the
model is built, on that Namespace, on fairseq-hydra-train YAML (nested) or on a checkpoint's stored config. The
adapter (:func:`~syntrans.models.config.model_config`) lets a nested value win over a flat one, so a preset's flat
values fill only what the YAML or checkpoint does not hold.
"""
from fairseq.models import register_model_architecture
from fairseq.models.transformer.transformer_legacy import base_architecture, transformer_iwslt_de_en

from .syntax_transformer import MODEL


def preset(name: str):
    """Register the decorated preset as architecture ``name`` of ``syntax_transformer`` (which also records its name
    in the config's ``preset`` field, unless a preset's name is there already); the function itself is returned
    unchanged, so presets can build on each other."""

    def register(fn):
        def apply(args):
            fn(args)
            set_fields(args, preset=name)

        register_model_architecture(MODEL, name)(apply)
        return fn

    return register


def set_fields(args, **values) -> None:
    """A preset's settings: each becomes the value of ``args.<name>`` unless that is already set (by a flag, a config
    or an earlier preset), as fairseq's architecture functions do."""
    for name, value in values.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


@preset(MODEL)
def syntax_base_architecture(args):
    """Transformer base (fairseq's defaults for every Transformer field not set); the mechanisms' fields keep their
    declared defaults where no preset or flag sets them; the methods start as their papers initialise them unless
    ``--syntax-start`` says otherwise."""
    base_architecture(args)
    set_fields(args, syntax_start="paper")


def _iwslt_size(args):
    """The IWSLT presets' shared rest (Hou et al. 2022, App. A): transformer_iwslt_de_en dimensions (512, 4 heads,
    FFN 1024), dropout 0.3, attention dropout 0.2, then the syntax defaults."""
    set_fields(args, dropout=0.3, attention_dropout=0.2)
    transformer_iwslt_de_en(args)
    syntax_base_architecture(args)


@preset("distance_transformer_iwslt_de_en")
def distance_transformer_iwslt_de_en(args):
    """Hou et al. 2022 (App. A), IWSLT14 de-en: 6+6 layers, 512, 4 heads, FFN 1024, dropout 0.3,
    attention dropout 0.2, soft mask τ = 10 in heads 0-3 of encoder layer 0."""
    set_fields(args, distance_layers="0", distance_heads=4)
    _iwslt_size(args)


@preset("distance_transformer_wmt_en_de")
def distance_transformer_wmt_en_de(args):
    """Hou et al. 2022 (App. A), WMT14 en-de: 6+6 layers, 512, 8 heads, FFN 1024 ("2048 in ASPEC and 1024 in other
    datasets"; the stated 50M parameters fit it), dropout and attention dropout 0.1, soft mask τ = 10 in heads 0-1
    of encoder layer 0 (§4.1: two syntax heads)."""
    set_fields(args, distance_layers="0", distance_heads=2, dropout=0.1, attention_dropout=0.1,
               encoder_ffn_embed_dim=1024, decoder_ffn_embed_dim=1024)
    syntax_base_architecture(args)


@preset("pascal_transformer_wmt_en_de")
def pascal_transformer_wmt_en_de(args):
    """Bugliarello & Okazaki 2020, WMT16 en-de: Transformer base, 5 PASCAL heads of 8 in encoder layer 0,
    σ = 1, no parent ignoring (other datasets' heads/q: configs/pascal/)."""
    set_fields(args, pascal_layers="0", pascal_heads=5)
    syntax_base_architecture(args)


@preset("pascal_transformer_iwslt_de_en")
def pascal_transformer_iwslt_de_en(args):
    """PASCAL at IWSLT size (no published IWSLT setting: 2 PASCAL heads of 4 in encoder layer 0, σ = 1,
    q = 0; dropout 0.3, attention dropout 0.2 as Hou et al.'s IWSLT comparison)."""
    set_fields(args, pascal_layers="0", pascal_heads=2)
    _iwslt_size(args)


@preset("lisa_transformer_wmt_en_de")
def lisa_transformer_wmt_en_de(args):
    """LISA as in Bugliarello & Okazaki 2020: Transformer base, head 0 of encoder layer 0 bi-affine and
    trained on first-subword parents with weight 1.0."""
    set_fields(args, lisa_layers="0")
    syntax_base_architecture(args)


@preset("lisa_transformer_iwslt_de_en")
def lisa_transformer_iwslt_de_en(args):
    """LISA at IWSLT size: head 0 of encoder layer 0, weight 1.0; dropout 0.3, attention dropout 0.2."""
    set_fields(args, lisa_layers="0")
    _iwslt_size(args)


@preset("gated_distance_transformer_iwslt_de_en")
def gated_distance_transformer_iwslt_de_en(args):
    """Hou et al., gated self-attention, IWSLT14 de-en: 6+6 layers, 512, FFN 1024, 4 heads, shared embeddings,
    dropout 0.3, attention dropout 0.2; every head of every encoder layer gated between the soft distance mask
    (τ = 10) and stock attention, syntax ignoring p = 0.4, pre-warm-up K = 80 epochs (other datasets: configs/gated/)."""
    set_fields(args, distance_layers="all", distance_heads=4, gate_layers="all", gate_syntax_dropout=0.4,
               gate_warmup_epochs=80, share_all_embeddings=True)
    _iwslt_size(args)


@preset("sla_transformer_iwslt_de_en")
def sla_transformer_iwslt_de_en(args):
    """SLA (Li et al. 2021) as Hou et al. (gated self-attention, §5.2) re-implement it, at that paper's IWSLT size:
    every head of every encoder layer attends within dependency-tree distance m = 2 (ours: m is not stated) and is
    mixed with the stock attention of the same head by a learned per-head gate "without any regularization": no
    BatchNorm, no pre-warm-up, no syntax dropout; shared embeddings, dropout 0.3, attention dropout 0.2 (§5.1)."""
    set_fields(args, sla_layers="all", sla_heads=4, sla_threshold=2, gate_layers="all", gate_mode="gated",
               gate_no_batchnorm=True, gate_warmup_epochs=0, gate_syntax_dropout=0.0, share_all_embeddings=True)
    _iwslt_size(args)


@preset("dbsa_transformer_wmt_en_de")
def dbsa_transformer_wmt_en_de(args):
    """Deguchi et al. 2019, WMT14 en-de: Transformer base; one DBSA head in the first encoder layer and one
    (causal) in the first decoder layer, λ_dep = 0.5."""
    set_fields(args, dbsa_encoder_layers="0", dbsa_decoder_layers="0", dbsa_heads=1, dbsa_weight=0.5)
    syntax_base_architecture(args)


@preset("syncattn_transformer_wmt_en_de")
def syncattn_transformer_wmt_en_de(args):
    """Deguchi et al. 2021, WMT14 en-de: the DBSA model plus L_sync with λ_sync = 0.5, C from the penultimate
    decoder layer (other datasets' λ_sync: configs/syncattn/)."""
    set_fields(args, sync_attn=True, sync_weight=0.5, sync_layer=-2)
    dbsa_transformer_wmt_en_de(args)


@preset("nsd_transformer")
def nsd_transformer(args):
    """NSD (Ma et al. 2019) with nothing switched on yet: Transformer base plus the NSD options' defaults
    (dD, λ_SPE 40, the unweighted loss of Eq. 17); choose per side with --nsd-{src,tgt}-{input,spe,output}
    (the Table 1 rows: configs/nsd/)."""
    syntax_base_architecture(args)


@preset("nsd_src_transformer_base")
def nsd_src_transformer_base(args):
    """Ma et al. 2019, Table 1, En→Ja and En→Zh: only English is parsed (§4.1), so NSD goes on the source. dD as
    input W(x‖e)+b (Eq. 10) with the syntactic PE (Eq. 15–16, λ_SPE 40) and predicted from the encoder output
    (L_entdist + L_dist, Eq. 17–20); Transformer base. Sets only source-side fields."""
    set_fields(args, nsd_kind="dD", nsd_src_input="linear", nsd_src_spe=True, nsd_src_output=True, nsd_spe_lambda=40.0)
    syntax_base_architecture(args)


@preset("nsd_tgt_transformer_base")
def nsd_tgt_transformer_base(args):
    """Ma et al. 2019, Table 1, Ja→En and Zh→En: only English is parsed (§4.1), so NSD goes on the target. dD as
    input W(x‖e)+b (Eq. 10) with the syntactic PE (Eq. 15–16, λ_SPE 40) and predicted from the decoder output
    (L_entdist + L_dist, Eq. 17–20); in decoding the predicted NSD of each token is the next step's input (§3.2);
    Transformer base. Sets only target-side fields."""
    set_fields(args, nsd_kind="dD", nsd_tgt_input="linear", nsd_tgt_spe=True, nsd_tgt_output=True, nsd_spe_lambda=40.0)
    syntax_base_architecture(args)


@preset("nsd_transformer_base")
def nsd_transformer_base(args):
    """Ma et al. 2019's best Table 1 setting on both sides at once: :func:`nsd_src_transformer_base` plus
    :func:`nsd_tgt_transformer_base` (dD input W(x‖e)+b, syntactic PE λ_SPE 40, output with L_entdist + L_dist,
    Eq. 17–20). No Table 1 direction parses both sides (only English is parsed, §4.1): a combination for corpora
    with parses of both languages; Transformer base."""
    set_fields(args, nsd_tgt_input="linear", nsd_tgt_spe=True, nsd_tgt_output=True)
    nsd_src_transformer_base(args)


@preset("sh_transformer_wmt_en_de")
def sh_transformer_wmt_en_de(args):
    """+S&H as in Bugliarello & Okazaki 2020 (§3.1, App. A; Sennrich & Haddow 2016): Transformer base whose source
    token embeddings have their last 10 dimensions replaced by a 10-dim embedding of the word's dependency label."""
    set_fields(args, labels_input=True, labels_embed_dim=10)
    syntax_base_architecture(args)
