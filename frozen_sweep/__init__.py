"""frozen_sweep: which parts of a transformer need training? Sweeps of frozen-random components, end to end."""

__version__ = "0.1.0"
