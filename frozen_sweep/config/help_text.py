"""`python -m frozen_sweep --help`: the config groups with their options, listed as Hydra finds them (so a user's
`--config-dir` presets appear too), for the help template conf/hydra/help/frozen_sweep.yaml. No torch here."""

import textwrap
import weakref

from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.object_type import ObjectType

GROUPS = {  # the groups a user picks from, in the order of a job's make-up; `schema` is internal
    "experiment": "ready-made sweeps: the paper's tables, the demos (use with -m)",
    "task": "the data: the embedded Bible corpus, or your own text files (task.path)",
    "model": "the transformer's size; each preset picks the trainer settings it learns with",
    "freeze": "which components stay frozen at their init: the paper's rows (0)-(6), (2.1), (3.1)",
    "trainer": "optimiser, batch size, budgets, early stopping, loggers",
    "reservoir": "frozen random reservoir layers among trainable ones (study=reservoir)",
    "relearn": "reset one layer of a finished run and retrain it alone (study=relearn)",
    "hydra/launcher": "how -m runs the jobs: this machine's GPUs or CPU cores, a SLURM cluster, or one by one",
}


_options: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # config loader → {group: its options}


def group_options(group: str) -> list[str]:
    """The group's options, listed once per config loader: OmegaConf evaluates the help template's resolver in every
    merge and resolution of a config that holds it (each sweep job's), and each listing builds a config repository."""
    loader = GlobalHydra.instance().config_loader()
    options = _options.setdefault(loader, {})
    if group not in options:
        options[group] = sorted(loader.get_group_options(group, ObjectType.CONFIG))
    return options[group]


def config_groups() -> str:
    """One entry per group: what it is for, then its options, the one in use marked with *."""
    chosen = HydraConfig.get().runtime.choices if HydraConfig.initialized() else {}
    lines = []
    for group, purpose in GROUPS.items():
        options = group_options(group)
        marked = [f"*{option}" if chosen.get(group) == option else option for option in options]
        lines += [f"{group}: {purpose}", *textwrap.wrap(", ".join(marked), 116, initial_indent="    ", subsequent_indent="    ")]
    return "\n".join(lines)
