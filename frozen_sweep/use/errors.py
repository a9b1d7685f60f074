"""The error a bad input or a run of the wrong kind raises, from the Python API and the commands alike."""


class UsageError(ValueError):
    """Bad input or run: the message says which (the line, the key) and what is allowed."""


def check_lengths(ids: list[list[int]], most: int, source: str, what: str, first_line: int = 1) -> None:
    """UsageError naming the first line longer than `most` subwords (`what` says which limit that is)."""
    for number, row in enumerate(ids, start=first_line):
        if len(row) > most:
            raise UsageError(f"{source} line {number} has {len(row)} subwords, more than {most} ({what})")
