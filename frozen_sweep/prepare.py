"""`python -m frozen_sweep.prepare [overrides]`: prepare a task's data by hand, e.g. on a login node before a sweep.

The overrides are a job's (`task=text_files task.path=/data/wmt14 task.src_lang=de task.tgt_lang=en`, an
`experiment=...`), composed and checked as the job would be; prints the prepared directory and a summary of its
manifest. Jobs, and sweeps before they start, find it prepared and only open it (docs/data.md).
"""

import json
import logging
import sys

from hydra import compose, initialize_config_module
from omegaconf.errors import OmegaConfBaseException

from frozen_sweep.config import ConfigError, register_configs
from frozen_sweep.data.preparation import prepare
from frozen_sweep.data.prepared import MANIFEST
from frozen_sweep.job.job_config import job_config


def summary(manifest: dict) -> str:
    splits = ", ".join(
        f"{name} {c['examples']:,} ({' + '.join(f'{n:,}' for n in c['tokens'].values())} subwords"
        + (f"; {c['skipped_empty']:,} skipped empty" if c["skipped_empty"] else "") + ")"
        for name, c in manifest["splits"].items()
    )
    sampled = f"trained on {manifest['vocab_sampled']:,} sampled training lines"
    return (
        f"{manifest['kind']} {'-'.join(manifest['langs'])} from {manifest['source_dir']}\n"
        f"vocabulary: {manifest['vocab_size']:,} pieces (asked {manifest['vocab_size_asked']:,}), {sampled}; ids "
        f"{manifest['dtype']}\n{splits}\nprepared in {sum(manifest['seconds'].values()):.1f} s {manifest['seconds']}"
    )


def main(argv: list[str] | None = None) -> int:
    overrides = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    register_configs()
    try:
        with initialize_config_module("frozen_sweep.conf", version_base="1.3"):
            cfg = job_config(compose("config", overrides=overrides), overrides)
        directory = prepare(cfg.task)
    except (ConfigError, OmegaConfBaseException, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(directory)
    print(summary(json.loads((directory / MANIFEST).read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
