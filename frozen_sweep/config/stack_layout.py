"""Which layers of a stack are reservoirs, and which layer a relearn job resets: pure functions of the config (no
torch, no files), read by the model builder and by frozen_sweep.config.checks."""

from frozen_sweep.config import ConfigError, Placement, ReservoirConfig, StackName


def reservoir_pattern(layers: int, r: ReservoirConfig) -> str:
    """The stack's layers as a string, L trainable and R reservoir; ConfigError when the placement cannot work."""
    placement, count = Placement(r.placement), r.count
    if placement == Placement.pattern:
        pattern = r.pattern or ""
        if len(pattern) != layers or set(pattern) - {"L", "R"}:
            raise ConfigError(
                f"reservoir.pattern={r.pattern}: must be {layers} letters (the {r.stack.value} has {layers} layers), "
                "each L (trainable) or R (reservoir)"
            )
        return pattern
    if not 0 <= count <= layers:
        raise ConfigError(f"reservoir.count={count}: must be in [0, {layers}] (the {r.stack.value}'s layers)")
    if placement == Placement.bottom:
        return "R" * count + "L" * (layers - count)
    if placement == Placement.top:
        return "L" * (layers - count) + "R" * count
    alternating = "LR" * count
    block = alternating[1:]  # R L R ... R: count reservoirs, one trainable layer between neighbours
    if len(block) > layers:
        raise ConfigError(
            f"reservoir.count={count} reservoirs cannot alternate with trainable layers in {layers} layers "
            f"(interleave needs at most {(layers + 1) // 2}); use reservoir.placement=bottom|top|pattern"
        )
    left = (layers - len(block)) // 2
    return "L" * left + block + "L" * (layers - left - len(block))


def parse_reset_layer(spec) -> tuple[str, int]:
    """"decoder.1" → ("decoder", 1); "encoder.-1" → ("encoder", -1), the last layer, as Python counts (a sweep
    over bases of several depths names their first and last layers alike); ConfigError for anything else."""
    stack, _, index = str(spec).partition(".")
    if stack not in StackName.__members__ or not index.removeprefix("-").isdigit():
        raise ConfigError(f"relearn.reset_layer={spec}: must be encoder.<i> or decoder.<i> (0-based; -1 the last)")
    return stack, int(index)
