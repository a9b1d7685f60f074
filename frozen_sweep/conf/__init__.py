"""The Hydra config tree, shipped with the package and found as `pkg://frozen_sweep.conf` (see __main__.py)."""
