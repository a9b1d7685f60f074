"""Write a finished run as one seed-only model file, to hand on or ship:

    python -m frozen_sweep.export RUN OUT.safetensors

The file (safetensors: loading it runs no code) holds the trainable tensors, the seed, the config, the vocabulary,
each frozen tensor's SHA-256 and a classifier's label names, and nothing else: its size is about the trainable share
of the full model's, plus the vocabulary. Every command that takes a run (translate, score, classify) takes the file
in its place, on any machine; the frozen tensors are drawn again from the seed there, and a file whose tensors do not
regenerate to their hashes (another torch version, an altered file) is refused, naming the tensor. A fine-tuned run's
frozen tensors that its base run trained are stored like trainable ones; those its base drew and kept frozen are drawn
again from the base's seed. RUN may be a run directory or a model file; --checkpoint best|last|PATH picks a run directory's weights (a
running or interrupted run's too).

    python -m frozen_sweep.export RUN OUT_DIR --format hf

writes a translation run as a Hugging Face MarianMT directory instead (MarianMTModel.from_pretrained(OUT_DIR),
MarianTokenizer.from_pretrained(OUT_DIR); needs `transformers`: pip install 'frozen_sweep[hf]'), all its weights
included, and a SHA256SUMS of its files (`sha256sum -c SHA256SUMS`, or frozen_sweep.weights.integrity.check_checksums);
greedy search gives the run's greedy translations. Runs MarianMT cannot express are refused, saying why.
"""

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from omegaconf import OmegaConf

from frozen_sweep.config import TaskKind
from frozen_sweep.use import command_line
from frozen_sweep.use.command_line import UsageError
from frozen_sweep.weights.finished_run import FinishedRun, load_run, seed_drawn
from frozen_sweep.weights.freeze import frozen_fingerprint, parameter_counts
from frozen_sweep.weights.integrity import write_checksums
from frozen_sweep.weights.model_file import write_model_file


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="a finished run's directory, or a model file")
    p.add_argument("out", metavar="OUT", help="the model file to write (replaced atomically if it exists); with "
                   "--format hf, a new directory")  # fmt: skip
    p.add_argument("--format", choices=["safetensors", "hf"], default="safetensors")
    command_line.add_checkpoint(p)
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.format == "hf":
        return export_marian(args.run, out, args.checkpoint)
    check_model_file_path(out)
    run = load_run(args.run, checkpoint=args.checkpoint)
    write_run_file(run, out, run.weights_summary())


def check_model_file_path(out: Path) -> None:
    if out.is_dir():
        raise UsageError(f"{out} is a directory; OUT is the model file to write, e.g. {out / 'model.safetensors'}")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent} does not exist: create it first")


def write_run_file(run: FinishedRun, out: Path, weights: str) -> None:
    """`run` (its model as it is now) as the model file `out`; says on stderr what it holds (`weights`: whose)."""
    model, drawn = run.model, seed_drawn(run)
    hashes = {name: sha256 for name, sha256 in frozen_fingerprint(model).items() if name in drawn}
    labelled = TaskKind(run.config.task.kind).labelled  # a regression's labels: None
    classifier = {"labels": run.labels, "pairs": run.pairs} if labelled else None
    write_model_file(out, model, run.config.seed, OmegaConf.to_yaml(run.config), run.vocab, hashes, classifier,
                     run.base_draws)  # fmt: skip
    total = parameter_counts(model)["params_total"]
    stored = total - sum(p.numel() for name, p in model.named_parameters() if name in drawn)
    print(f"{out}: {out.stat().st_size:,} bytes; {stored:,} of {total:,} parameters stored ({stored / total:.1%}), "
          f"the rest drawn from seed {run.config.seed}; weights: {weights}", file=sys.stderr)  # fmt: skip


def export_marian(run_path: str, out: Path, checkpoint: str = "best") -> None:
    """The run as a MarianMT directory, written beside OUT and renamed into place once complete."""
    from frozen_sweep.weights.marian import not_expressible, write_marian

    if importlib.util.find_spec("transformers") is None:
        raise UsageError("--format hf needs Hugging Face transformers: pip install 'frozen_sweep[hf]'")
    if out.exists():
        raise UsageError(f"{out} exists; --format hf writes a new directory")
    run = load_run(run_path, checkpoint=checkpoint)
    reasons = not_expressible(run.config)
    if reasons:
        raise UsageError(f"{run.path}: MarianMT cannot hold this model: {'; '.join(reasons)}")
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        write_marian(Path(tmp) / "model", run.config, run.model.eval(), run.vocab)
        write_checksums(Path(tmp) / "model")
        os.replace(Path(tmp) / "model", out)
    print(f"{out}: MarianMT (transformers), greedy search gives the run's greedy translations; weights: "
          f"{run.weights_summary()}", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    command_line.run_command(main)
