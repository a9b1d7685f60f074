"""A translation run as a CTranslate2 model directory (`ctranslate2.Translator(DIR)`), written through CTranslate2's own
specification API (`ctranslate2.specs.TransformerSpec`), so no detour through another toolkit's format.

Going through MarianMT would not do: CTranslate2's Marian converter expects Opus-MT's layout (`<pad>` as the last
vocabulary entry, the decoder started from a zero embedding) where ours has `<pad>` at id 0 and starts from `<s>`.
The specification states our layout instead: the SentencePiece pieces in id order as both vocabularies, `<s>` as the
decoder's start token, `</s>` appended to every source (as our search does), our own interleaved sine/cosine table as
the position encodings (no permutation of the residual stream, unlike MarianMT), post- or pre-norm as the run was
trained (a pre-norm stack's final layer norm included). Our search never emits `<pad>` or `<s>`; the output
projection gets a bias of −1e4 on those two rows so CTranslate2's does not either, with no option to pass.

Not expressible (refused, saying which): language models, masked LMs and classifiers (they are not encoder–decoder
translators; CTranslate2's Generator and Encoder would need other specifications), reservoirs other than transformer
layers (FFN-only, BiGRU, convolution: CTranslate2 has no such layers). A transformer-layer reservoir is an ordinary
layer with frozen random weights, exported like any other.
"""

from pathlib import Path

import torch

from frozen_sweep.config import Activation, FfnKind, NormPosition, Positions, ReservoirType, TaskKind
from frozen_sweep.data.specials import BOS, EOS, PAD, UNK
from frozen_sweep.data.vocab import Vocab
from frozen_sweep.model import Transformer
from frozen_sweep.model.reservoir import Reservoir

QUANTIZATIONS = ("int8", "int16", "float16", "float32")
BANNED_LOGIT_BIAS = -1e4  # exp(-1e4) is 0 in float32 and -1e4 fits float16: the token can never be picked


def not_expressible(cfg) -> list[str]:
    """Why a CTranslate2 Translator cannot hold this run's model (empty when it can)."""
    reasons = []
    kind = TaskKind(cfg.task.kind)
    if kind != TaskKind.translation:
        reasons.append(f"task.kind={kind.value}: a CTranslate2 Translator is an encoder–decoder translation model")
    m = cfg.model
    if NormPosition(m.norm) == NormPosition.rms or FfnKind(m.ffn) != FfnKind.mlp or Positions(m.positions) != \
            Positions.sinusoidal or m.kv_heads not in (None, m.heads) or not m.bias or m.norm_eps != 1e-5:
        reasons.append("model.norm=rms, ffn=swiglu, positions=rope, kv_heads, bias=false or norm_eps: this export "
                       "writes the paper's transformer (LayerNorm eps 1e-5, biases, its FFN, sinusoidal positions, one "
                       "key/value head per query head)")  # fmt: skip
    if m.token_types or m.embed_norm:
        reasons.append("model.token_types or model.embed_norm: this export's embeddings are the tokens and sinusoidal "
                       "positions alone")  # fmt: skip
    if cfg.reservoir.count and ReservoirType(cfg.reservoir.type) != ReservoirType.transformer:
        reasons.append(f"reservoir.type={ReservoirType(cfg.reservoir.type).value}: CTranslate2 has transformer "
                       "layers only")  # fmt: skip
    return reasons


def write_ctranslate2(directory: Path, cfg, model: Transformer, vocab: Vocab, quantization: str) -> None:
    """The model's specification, validated, quantised (`quantization`: one of QUANTIZATIONS) and saved in the new
    directory `directory`, with the SentencePiece model beside it as sentencepiece.model."""
    from ctranslate2.converters.converter import Converter

    reasons = not_expressible(cfg)
    if reasons:
        raise ValueError("CTranslate2 cannot hold this run's model: " + "; ".join(reasons))

    class RunConverter(Converter):  # convert() validates, quantises and saves whatever _load returns
        def _load(self):
            return transformer_spec(cfg, model, vocab)

    RunConverter().convert(str(directory), quantization=quantization)
    (directory / "sentencepiece.model").write_bytes(vocab.model)


def transformer_spec(cfg, model: Transformer, vocab: Vocab):
    """CTranslate2's TransformerSpec holding `model`'s weights (float32, on the CPU) and `vocab`'s pieces."""
    from ctranslate2.specs import common_spec
    from ctranslate2.specs.transformer_spec import TransformerSpec

    m = cfg.model
    activation = common_spec.Activation.RELU if m.activation == Activation.relu else common_spec.Activation.GELU
    spec = TransformerSpec.from_config((m.encoder_layers, m.decoder_layers), m.heads,
                                       pre_norm=m.norm == NormPosition.pre, activation=activation)  # fmt: skip
    # copies: CTranslate2's quantisation rewrites the arrays it is given in place, and the model may be used on
    ours = {name: p.detach().float().cpu().clone() for name, p in model.named_parameters(remove_duplicate=False)}

    def linear(target, src: str) -> None:
        target.weight, target.bias = ours[f"{src}.weight"], ours[f"{src}.bias"]

    def norm(target, src: str) -> None:
        target.gamma, target.beta = ours[f"{src}.weight"], ours[f"{src}.bias"]

    def fused(target, src: str, projections: str) -> None:  # CTranslate2 fuses q/k/v (self) or k/v (cross)
        target.weight = torch.cat([ours[f"{src}.{p}_proj.weight"] for p in projections])
        target.bias = torch.cat([ours[f"{src}.{p}_proj.bias"] for p in projections])

    for stack_name, stack_spec in (("encoder", spec.encoder), ("decoder", spec.decoder)):
        stack = getattr(model, stack_name)
        for i, (layer, layer_spec) in enumerate(zip(stack.layers, stack_spec.layer)):
            o = f"{stack_name}.layers.{i}" + (".layer" if isinstance(layer, Reservoir) else "")
            fused(layer_spec.self_attention.linear[0], f"{o}.self_attn", "qkv")
            linear(layer_spec.self_attention.linear[1], f"{o}.self_attn.out_proj")
            norm(layer_spec.self_attention.layer_norm, f"{o}.self_attn_res.norm")
            if stack_name == "decoder":
                linear(layer_spec.attention.linear[0], f"{o}.cross_attn.q_proj")
                fused(layer_spec.attention.linear[1], f"{o}.cross_attn", "kv")
                linear(layer_spec.attention.linear[2], f"{o}.cross_attn.out_proj")
                norm(layer_spec.attention.layer_norm, f"{o}.cross_attn_res.norm")
            linear(layer_spec.ffn.linear_0, f"{o}.ffn.fc1")
            linear(layer_spec.ffn.linear_1, f"{o}.ffn.fc2")
            norm(layer_spec.ffn.layer_norm, f"{o}.ffn_res.norm")
        if stack.final_norm is not None:  # pre-norm
            norm(stack_spec.layer_norm, f"{stack_name}.final_norm")
    spec.encoder.embeddings[0].weight = ours["src_embed.tokens.weight"]
    spec.encoder.position_encodings.encodings = model.src_embed.positions.clone()  # (max_positions, D)
    spec.decoder.embeddings.weight = ours["tgt_embed.tokens.weight"]
    spec.decoder.position_encodings.encodings = model.tgt_embed.positions.clone()
    spec.decoder.projection.weight = ours["output.weight"]
    bias = torch.zeros(ours["output.weight"].shape[0])  # (V,)
    bias[[PAD, BOS]] = BANNED_LOGIT_BIAS
    spec.decoder.projection.bias = bias

    pieces = [vocab.sp.id_to_piece(i) for i in range(len(vocab))]
    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = pieces[UNK], pieces[BOS], pieces[EOS]
    spec.config.decoder_start_token = pieces[BOS]
    spec.config.add_source_eos = True
    spec.config.layer_norm_epsilon = 1e-5  # torch's nn.LayerNorm default, ours
    return spec
