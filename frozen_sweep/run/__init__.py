"""A run directory: the names of its files, its record (RunResult), its lock, and the finished run another job starts
from."""
