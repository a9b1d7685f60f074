"""The command line's keys checked against the schema (`hydra.launcher.…` against the chosen launcher's settings)
before Hydra composes anything: a mistyped key gets the closest allowed keys ("did you mean trainer.max_steps?", by
difflib), not Hydra's advice to append it with `+`, which only leads to a second error. Torch-free."""

import dataclasses
import difflib
import functools
import typing
from typing import Optional, Sequence

from omegaconf import OmegaConf

from frozen_sweep.config import Config, ConfigError

CONFIG_GROUPS = ("experiment", "task", "model", "freeze", "trainer", "reservoir", "relearn", "schema")
LAUNCHER_KEYS = "hydra.launcher."
DEFAULT_LAUNCHER = "local_gpus"  # conf/config.yaml's `override hydra/launcher`


def _schema_of(annotation) -> Optional[type]:
    """The dataclass a field holds (through Optional), else None (a value, a list or a free-form dict)."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if dataclasses.is_dataclass(candidate):
            return candidate
    return None


def unknown_key(key: str, schema: type = Config, under: int = 0) -> Optional[str]:
    """Why `key` (dotted) is not a key of the schema, with the closest allowed keys; None when it is one, or lies
    below a node the schema leaves free (a dict). `under`: how many leading parts name the node the schema types
    (2 for `hydra.launcher.…`)."""
    parts = key.split(".")
    path = parts[:under]
    for depth, part in enumerate(parts[under:], start=under):
        if schema is None:
            return None
        hints = typing.get_type_hints(schema)
        names = [f.name for f in dataclasses.fields(schema)]
        if part not in names:
            where = ".".join(path)
            prefix = f"{where}." if where else ""
            close = difflib.get_close_matches(part, names, n=3, cutoff=0.6)
            rest = "".join(f".{p}" for p in parts[depth + 1 :])
            hint = f"did you mean {' or '.join(prefix + c + rest for c in close)}? " if close else ""
            return (
                f"{key}: no such key in the config; {hint}allowed under {where or 'the top level'}: "
                f"{', '.join(sorted(names))}"
            )
        schema = _schema_of(hints[part])
        path.append(part)
    return None


def launcher_schemas() -> dict[str, type]:
    """The typed settings of each launcher Hydra knows, by name: the `hydra/launcher` configs its plugins register."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    Plugins.instance()  # imports the plugins, which register their configs
    group = ConfigStore.instance().repo["hydra"]["launcher"]
    schemas = {name.removesuffix(".yaml"): OmegaConf.get_type(entry.node) for name, entry in group.items()}
    return {name: schema for name, schema in schemas.items() if dataclasses.is_dataclass(schema)}


def unknown_launcher_key(key: str, launcher: Optional[str]) -> Optional[str]:
    """unknown_key for a `hydra.launcher.…` key of `launcher`'s settings, naming the launchers that have it."""
    schemas = launcher_schemas()
    problem = unknown_key(key, schemas[launcher], under=2) if launcher in schemas else None
    if problem is None:
        return None
    having = [f"hydra/launcher={name}" for name, schema in schemas.items() if unknown_key(key, schema, under=2) is None]
    elsewhere = f"; {' and '.join(having)} {'have' if len(having) > 1 else 'has'} it" if having else ""
    return f"{problem} (the settings of hydra/launcher={launcher}{elsewhere})"


def check_command_line(overrides: Sequence[str], launcher: Optional[str] = DEFAULT_LAUNCHER) -> Optional[str]:
    """The first override whose key the schema does not know, as unknown_key says it; None when all are known.

    `hydra.launcher.*` keys are checked against the settings of the launcher that `hydra/launcher=…` names, else of
    `launcher` (the configs' default; None: unknown, as under a user's own config directory, and then left to Hydra).
    Group choices (`model=tiny`), Hydra's other keys and deletions pass; appends (`+key=…`) are checked as `key=…`.
    A value Hydra's grammar cannot read because it holds `=` (a run directory) gets the key and the quoting."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides(list(overrides))
    except Exception:  # noqa: BLE001 - a syntax error: Hydra reports it, with its grammar, unless it is a path's `=`
        return next(filter(None, (unquoted_path(o, parser) for o in overrides)), None)
    for override in parsed:
        if override.key_or_group == "hydra.searchpath":  # another config directory may choose another launcher
            launcher = None
        if override.key_or_group == "hydra/launcher" and isinstance(override.value(), str):
            launcher = override.value()
    for override in parsed:
        key = override.key_or_group
        if override.is_delete():
            continue  # `+key=` (add) and `++key=` are checked as `key=` is: the schema has every key a job reads
        if override.is_hydra_override():
            problem = unknown_launcher_key(key, launcher) if key.startswith(LAUNCHER_KEYS) else None
            if problem:
                return problem
            continue
        if "." not in key and key in CONFIG_GROUPS:
            continue
        problem = unknown_key(key)
        if problem:
            return problem
    return None


def unquoted_path(override: str, parser) -> Optional[str]:
    """How to quote `key=value` when its value holds `=` (a run directory, e.g. outputs/x/freeze=none,seed=1) and
    Hydra's grammar cannot read it; None for any other override."""
    key, _, value = override.partition("=")
    if "=" not in value or "/" not in value or value[:1] in "'\"":  # a path's `=`, unquoted
        return None
    try:
        parser.parse_overrides([override])
    except Exception:  # noqa: BLE001 - Hydra's grammar error, whatever its class
        return (
            f"{key}={value}: Hydra reads '=' and ',' in a value as its own syntax; quote a run directory: "
            f"{key}='{value}' (in a shell: \"{key}='{value}'\")"
        )
    return None


def exit_on_unknown_key(argv: Sequence[str]) -> None:
    """Stop the command, before Hydra composes it, when a key of its overrides is not in the schema."""
    from hydra._internal.utils import get_args_parser

    args, _ = get_args_parser().parse_known_args(list(argv))
    own_configs = args.config_dir or args.config_path or args.config_name  # they may choose another launcher
    problem = check_command_line(args.overrides, None if own_configs else DEFAULT_LAUNCHER)
    if problem:
        raise SystemExit(f"{problem}. Nothing was started.")


def check_read(cfg, schema: type = Config, path: str = "") -> None:
    """ConfigError for a key set (away from its schema default) where the job does not read it: its `read_when`
    metadata (frozen_sweep.config.task, relearn, reservoir) names the sibling values under which it is read (a list
    of such conditions: under any of them)."""
    for name, nested, field in _read_rules(schema):
        node = cfg.get(name) if cfg is not None else None
        if nested is not None:
            check_read(node, nested, f"{path}{name}.")
            continue
        read_when = field.metadata["read_when"]
        if OmegaConf.is_missing(cfg, name):
            continue
        default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        value = OmegaConf.to_container(node) if OmegaConf.is_config(node) else node
        conditions = read_when if isinstance(read_when, list) else [read_when]
        chosen = {key: getattr(cfg[key], "value", cfg[key]) for condition in conditions for key in condition}
        if value != default and not any(_holds(condition, chosen) for condition in conditions):
            now = ", ".join(f"{path}{key}={value}" for key, value in chosen.items())
            wanted = "; or when ".join(", ".join(f"{path}{key}={'|'.join(v) if isinstance(v, list) else v}"
                                                 for key, v in condition.items()) for condition in conditions)
            shown = getattr(value, "value", value)  # an enum's value, as the command line writes it
            raise ConfigError(
                f"{path}{field.name}={shown}: read only when {wanted}, and this job has {now}, so it would be "
                f"ignored; write instead: {field.metadata['instead']}"
            )


def _holds(condition: dict, chosen: dict) -> bool:
    """Whether every key of a `read_when` condition has one of the values under which the key is read (one value, or
    a list of them)."""
    return all(chosen[key] in allowed if isinstance(allowed, list) else chosen[key] == allowed
               for key, allowed in condition.items())  # fmt: skip


@functools.lru_cache(maxsize=None)
def _read_rules(schema: type) -> tuple[tuple[str, Optional[type], Optional[dataclasses.Field]], ...]:
    """The fields of `schema` that check_read visits, worked out once per schema (a sweep checks every job): (name,
    its schema, None) for a nested schema holding a rule, (name, None, the field) for a field with `read_when`."""
    hints = typing.get_type_hints(schema)
    rules = []
    for field in dataclasses.fields(schema):
        nested = _schema_of(hints[field.name])
        if nested is not None and _read_rules(nested):
            rules.append((field.name, nested, None))
        elif nested is None and field.metadata.get("read_when"):
            rules.append((field.name, None, field))
    return tuple(rules)


def override_key(override: str) -> str:
    """The key a command-line override sets: `trainer.lr` of `trainer.lr=0.1`, `+x` and `~x` too."""
    return override.split("=", 1)[0].lstrip("+~")
