"""The training loop (trainer.py) and its parts: loss, optimiser, updates, validation, stopping rules."""
