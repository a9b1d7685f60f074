"""Helpers shared by the test modules, which never import from each other (fixtures every module gets live in
conftest.py; an opt-in one lives beside the helpers it serves)."""
