"""The model's own rules, on the config alone: widths that split into heads, rotary pairs, options that only go
together (a masked LM's head, parallel blocks, learned positions' offset), and positions enough for the longest
sequence a job will read or write."""

from frozen_sweep.config import ConfigError, FfnKind, NormPosition, Positions, StudyName, TaskKind


def check_positions(cfg) -> None:
    """The longest training sequence (task.max_len subwords + eos, padded to trainer.length_multiple) fits the
    model's positions, and so does the decoder's length cap for such a source; else the job would fail (or cut
    every long hypothesis) at its first long batch."""
    m, t, e = cfg.model, cfg.task, cfg.eval
    longest = -(-(t.max_len + 1) // cfg.trainer.length_multiple) * cfg.trainer.length_multiple
    if longest > m.max_positions:
        raise ConfigError(
            f"model.max_positions={m.max_positions} is below the longest training sequence, {longest} positions "
            f"(task.max_len={t.max_len} + eos, padded to trainer.length_multiple={cfg.trainer.length_multiple}): "
            f"raise model.max_positions to >= {longest} or lower task.max_len"
        )
    cap = int(e.max_len_a * (t.max_len + 1) + e.max_len_b)
    if t.kind == TaskKind.translation and cap > m.max_positions - 1:
        raise ConfigError(
            f"eval.max_len_a={e.max_len_a}, eval.max_len_b={e.max_len_b}: the decoder's length cap for a source of "
            f"task.max_len={t.max_len} is {cap} tokens, more than model.max_positions={m.max_positions} allows "
            f"({m.max_positions - 1} after bos): raise model.max_positions to >= {cap + 1} or lower eval.max_len_a"
        )


def validate_model(cfg) -> None:
    """Heads that split the width, key/value heads that split the heads, rotary pairs, a gate to freeze."""
    m = cfg.model
    if m.d_model % m.heads:
        raise ConfigError(f"model.heads={m.heads} must divide model.d_model={m.d_model}")
    if m.kv_heads is not None and (m.kv_heads < 1 or m.heads % m.kv_heads):
        raise ConfigError(f"model.kv_heads={m.kv_heads} must divide model.heads={m.heads} (null: = heads)")
    if m.positions == Positions.rope and (m.d_model // m.heads) % 2:
        raise ConfigError(f"model.positions=rope needs an even head width: d_model/heads={m.d_model // m.heads}")
    rotated = int(m.d_model // m.heads * m.rope_fraction)
    if m.positions == Positions.rope and (rotated < 2 or rotated % 2):
        raise ConfigError(f"model.rope_fraction={m.rope_fraction} rotates {rotated} of a head's {m.d_model // m.heads} "
                          "dimensions: it must rotate an even number, at least 2")  # fmt: skip
    if m.position_offset and m.positions != Positions.learned:
        raise ConfigError(f"model.position_offset={m.position_offset} is a row of a learned position table: it needs "
                          "model.positions=learned")  # fmt: skip
    if m.mlm_head and m.decoder_layers:
        raise ConfigError("model.mlm_head=true is a masked language model's output head: an encoder-only model "
                          "(model.decoder_layers=0)")  # fmt: skip
    if m.parallel and (m.encoder_layers or m.norm == NormPosition.post):
        raise ConfigError("model.parallel=true adds attention and FFN read from one normed input: a decoder-only "
                          "language model (model.encoder_layers=0) with model.norm=pre or rms")  # fmt: skip
    if cfg.freeze.gate.frozen and m.ffn != FfnKind.swiglu:
        raise ConfigError(f"freeze.gate.frozen=true: model={m.name} has no gate; it needs model.ffn=swiglu")
    if cfg.freeze.gate.frozen and StudyName(cfg.study) == StudyName.finetune:
        raise ConfigError("freeze.gate.frozen=true: a fine-tuning job freezes whole components; allowed: ffn")
