"""Data-parallel ranks: who this process is (world.py, no torch) and torch.distributed around a job (distributed.py)."""
