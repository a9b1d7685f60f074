"""frozen_sweep: which parts of a transformer need training? Sweeps of frozen-random components, end to end."""

__version__ = "0.1.0"

from frozen_sweep import cpu

cpu.set_openmp_defaults()  # before any frozen_sweep module imports torch: libgomp reads it when torch loads
