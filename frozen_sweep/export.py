"""Write a finished run as one seed-only model file, to hand on or ship:

    python -m frozen_sweep.export RUN OUT.safetensors

The file (safetensors: loading it runs no code) holds the trainable tensors, the seed, the config, the vocabulary and
each frozen tensor's SHA-256, and nothing else: its size is about the trainable share of the full model's, plus the
vocabulary. Every command that takes a run (translate, score, ...) takes the file in its place, on any machine; the
frozen tensors are drawn again from the seed there, and a file whose tensors do not regenerate to their hashes
(another torch version, an altered file) is refused, naming the tensor. RUN may be a run directory or a model file.
"""

import argparse
import sys
from pathlib import Path

from omegaconf import OmegaConf

from frozen_sweep.weights import command_line
from frozen_sweep.weights.command_line import UsageError
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.freeze import frozen_fingerprint
from frozen_sweep.weights.model_file import write_model_file


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="a finished run's directory, or a model file")
    p.add_argument("out", metavar="OUT", help="the model file to write (replaced atomically if it exists)")
    args = p.parse_args(argv)
    out = Path(args.out)
    if out.is_dir():
        raise UsageError(f"{out} is a directory; OUT is the model file to write, e.g. {out / 'model.safetensors'}")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent} does not exist: create it first")
    run = load_run(args.run)
    model = run.model
    write_model_file(out, model, run.config.seed, OmegaConf.to_yaml(run.config), run.vocab, frozen_fingerprint(model))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    print(f"{out}: {out.stat().st_size:,} bytes; {trainable:,} of {total:,} parameters stored "
          f"({trainable / total:.1%}), the rest drawn from seed {run.config.seed}", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    command_line.run_command(main)
