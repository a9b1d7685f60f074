"""Average a run's last checkpoints into one model file (fairseq's checkpoint averaging, for a seed-only model):

    python -m frozen_sweep.average RUN --last N OUT.safetensors

The run must have kept its validations' weights (trainer.keep_checkpoints=N or more: checkpoint_step<STEP>.pt); a
running or interrupted run's count too. Each trainable tensor is the mean of the N checkpoints'; the frozen tensors
are the same seed draws in every one (each checkpoint's are regenerated and checked against its hashes as it is
loaded, and must be the same hashes). The file is written as `python -m frozen_sweep.export` writes one, and every
command takes it. The checkpoints are read one at a time (memory: two models).
"""

import argparse
from pathlib import Path

import torch

from frozen_sweep.export import check_model_file_path, write_run_file
from frozen_sweep.run.directory import step_checkpoints
from frozen_sweep.use.errors import UsageError
from frozen_sweep.use import command_line
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.freeze import frozen_fingerprint


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="a run directory that kept its validations' checkpoints")
    p.add_argument("out", metavar="OUT", help="the model file to write (replaced atomically if it exists)")
    p.add_argument("--last", type=int, required=True, metavar="N", help="average the last N kept checkpoints")
    args = p.parse_args(argv)
    out, run_dir = Path(args.out), Path(args.run)
    check_model_file_path(out)
    if args.last < 1:
        raise UsageError(f"--last {args.last}: allowed: at least 1")
    kept = step_checkpoints(run_dir) if run_dir.is_dir() else []
    if len(kept) < args.last:
        raise UsageError(f"{run_dir} kept {len(kept)} validation checkpoint(s), fewer than --last {args.last}: train "
                         f"with trainer.keep_checkpoints={args.last} (or more)")  # fmt: skip
    paths = kept[-args.last :]
    averaged = load_run(run_dir, checkpoint=str(paths[0]))
    frozen = frozen_fingerprint(averaged.model)
    steps = [averaged.step]
    sums = {name: p.detach().double().clone() for name, p in averaged.model.named_parameters() if p.requires_grad}
    for path in paths[1:]:
        other = load_run(run_dir, checkpoint=str(path))
        steps.append(other.step)
        if frozen_fingerprint(other.model) != frozen:
            raise UsageError(f"{path}: its frozen tensors are not {paths[0].name}'s: not checkpoints of one run")
        for name, p in other.model.named_parameters():
            if p.requires_grad:
                sums[name] += p.detach().double()
    with torch.no_grad():
        for name, p in averaged.model.named_parameters():
            if p.requires_grad:
                p.copy_(sums[name] / len(paths))
    write_run_file(averaged, out, f"the mean of {len(paths)} checkpoints (steps {', '.join(map(str, steps))})")


if __name__ == "__main__":
    command_line.run_command(main)
