"""The sweep's own values, checked before any job is composed: a glob that matches no option would leave a sweep of
no job, and a value listed twice two jobs that are one run in one directory."""

from typing import Callable, Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ValueType

from ._planned import SweepConfigError


def check_sweep_values(overrides: Sequence[str], group_options: Callable[[str], list[str]]) -> None:
    """SweepConfigError, naming the override and what is allowed; `group_options`: a config group's option names."""
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        if override.value_type == ValueType.GLOB_CHOICE_SWEEP:
            options = group_options(override.key_or_group)
            if not override.value().filter(options):
                raise SweepConfigError(
                    f"{override.input_line} matches no option of {override.key_or_group}, so the sweep has no job; "
                    f"allowed: a pattern matching one of {', '.join(options) or '(none)'}. No job was started."
                )
        elif override.is_sweep_override():
            values = list(override.sweep_string_iterator())
            twice = sorted({value for value in values if values.count(value) > 1})
            if twice:
                raise SweepConfigError(
                    f"{override.input_line} lists {', '.join(twice)} more than once: the jobs would be one run in one "
                    "directory; give each value once. No job was started."
                )
