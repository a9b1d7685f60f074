"""The error a bad input or a run of the wrong kind raises, from the Python API and the commands alike."""

TOO_LONG = ("error", "truncate", "skip")  # what a line longer than the model takes does (--too-long)


class UsageError(ValueError):
    """Bad input or run: the message says which (the line, the key) and what is allowed. `lines`: the input lines at
    fault, number → their own one-line message (the first's is the error's), so that a stream can answer the others."""

    def __init__(self, message: str, lines: dict[int, str] | None = None):
        super().__init__(message)
        self.lines = lines or {}


class TooLongError(UsageError):
    """Lines longer than the model takes (`--too-long skip` answers them with an empty line)."""


def line_error(source: str, number: int, message: str) -> UsageError:
    """UsageError of input line `number`: "SOURCE line N MESSAGE"."""
    text = f"{source} line {number} {message}"
    return UsageError(text, {number: text})


def check_lengths(ids: list[list[int]], most: int, source: str, what: str, first_line: int = 1,
                  too_long: str = "error") -> list[int]:  # fmt: skip
    """The numbers of the lines longer than `most` subwords (`what` says which limit that is): with too_long
    "truncate" cut to `most` in place; else TooLongError naming each of them."""
    long = {number: row for number, row in enumerate(ids, start=first_line) if len(row) > most}
    if long and too_long != "truncate":
        messages = {number: f"{source} line {number} has {len(row)} subwords, more than {most} ({what})"
                    for number, row in long.items()}  # fmt: skip
        raise TooLongError(next(iter(messages.values())), messages)
    for number in long:
        del ids[number - first_line][most:]
    return list(long)
