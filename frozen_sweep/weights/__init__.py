"""From a config to a model's weights: seeded inits, the freeze pattern and its accounting, seed-only checkpoints, a
finished run's model."""
