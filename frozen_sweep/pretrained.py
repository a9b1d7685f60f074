"""Check that a pretrained Hugging Face checkpoint imports, and fetch it into the hub cache where there is a network:

    python -m frozen_sweep.pretrained SOURCE [--revision REV]

SOURCE is a directory written by save_pretrained or a hub name (Qwen/Qwen2.5-0.5B); a hub name's branch or tag is
resolved to its commit, and its config, safetensors weights and tokenizer files are kept in the hub cache (HF_HOME),
where later imports read them offline (HF_HUB_OFFLINE=1). Prints what was imported: the commit, our model config and
the parameters per component (frozen_sweep.weights.pretrained.load_pretrained is the Python API).
"""

import argparse
import json

from omegaconf import OmegaConf

from frozen_sweep.use import command_line
from frozen_sweep.use.errors import UsageError


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", metavar="SOURCE", help="a directory written by save_pretrained, or a hub name")
    p.add_argument("--revision", help="a hub name's branch, tag or commit (default: main)")
    args = p.parse_args(argv)
    from frozen_sweep.weights.hf_tables import PretrainedError
    from frozen_sweep.weights.pretrained import load_pretrained

    try:
        _, model_cfg, info = load_pretrained(args.source, args.revision)
    except PretrainedError as e:
        raise UsageError(str(e)) from None
    print(json.dumps(info | {"model": OmegaConf.to_container(model_cfg, enum_to_str=True)}, indent=1))


if __name__ == "__main__":
    command_line.run_command(main)
