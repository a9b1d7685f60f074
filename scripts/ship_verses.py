#!/usr/bin/env python3
"""Regenerate the corpus shipped in the package (frozen_sweep/data/verses/*.txt.gz) from installed SWORD modules.

The files are the project's own extraction (`frozen_sweep.data.sword.read_module`) of Debian's sword-text-sparv and
sword-text-kjv; run this after changing the extraction (and bump bible.SPLIT_VERSION if the text changes).
    scripts/ship_verses.py [--sword-dir /usr/share/sword/modules/texts/ztext] [MODULE ...]
"""

import argparse
from pathlib import Path

from frozen_sweep.config import TaskConfig
from frozen_sweep.data.shipped import SUFFIX, VERSES_DIR, write_shipped
from frozen_sweep.data.sword import read_module


def main() -> None:
    defaults = TaskConfig(name="ship")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("modules", nargs="*", default=sorted(defaults.modules.values()), help="SWORD module names")
    p.add_argument("--sword-dir", default=defaults.sword_dir, help="directory holding the modules")
    args = p.parse_args()
    for module in args.modules:
        path = VERSES_DIR / f"{module}{SUFFIX}"
        write_shipped(path, read_module(Path(args.sword_dir) / module))
        print(f"{path}: {path.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
