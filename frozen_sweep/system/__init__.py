"""The machine under every stage: the one atomic file write and the CPU threads a job uses. Imports nothing of
frozen_sweep."""
