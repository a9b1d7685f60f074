"""Helpers shared by the test modules, which never import from each other (fixtures live in conftest.py)."""
