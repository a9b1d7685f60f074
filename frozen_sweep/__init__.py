"""frozen_sweep: which parts of a transformer need training? Sweeps of frozen-random components, end to end."""

__version__ = "0.1.0"


def __getattr__(name):
    """`from frozen_sweep import load_run` (frozen_sweep.use.run), imported only when asked for: `import
    frozen_sweep` stays light for the job's entry point."""
    if name in ("load_run", "Run"):
        from frozen_sweep.use import run

        return getattr(run, name)
    raise AttributeError(f"module 'frozen_sweep' has no attribute {name!r}")
