"""Metrics as a run trains (log.py), where they go (sinks.py), and the convergence measures of a finished run
(efficiency.py)."""
