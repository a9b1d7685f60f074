"""Write a finished run as one seed-only model file, to hand on or ship:

    python -m frozen_sweep.export RUN OUT.safetensors

The file (safetensors: loading it runs no code) holds the trainable tensors, the seed, the config, the vocabulary,
each frozen tensor's SHA-256 and a classifier's label names, and nothing else: its size is about the trainable share
of the full model's, plus the vocabulary. Every command that takes a run (translate, score, classify) takes the file
in its place, on any machine; the frozen tensors are drawn again from the seed there, and a file whose tensors do not
regenerate to their hashes (another torch version, an altered file) is refused, naming the tensor. A fine-tuned run's
frozen tensors that its base run trained are stored like trainable ones; those its base drew and kept frozen are drawn
again from the base's seed. RUN may be a run directory or a model file.

    python -m frozen_sweep.export RUN OUT_DIR --format hf

writes a Hugging Face directory instead, all its weights included (needs `transformers`: pip install
'frozen_sweep[hf]'): a language model or masked LM trained from a pretrained checkpoint as the checkpoint's own class
(its config.json and tokenizer, our weights: AutoModelForCausalLM or AutoModelForMaskedLM.from_pretrained gives the
run's logits); a translation run as MarianMT (MarianMTModel.from_pretrained(OUT_DIR),
MarianTokenizer.from_pretrained(OUT_DIR)), its greedy search giving the run's greedy translations; a LLaMA-style
language model (model.norm=rms, model.ffn=swiglu, model.positions=rope) as LLaMA (LlamaForCausalLM.from_pretrained,
AutoTokenizer.from_pretrained), its logits and greedy continuations the run's. Runs they cannot express are refused,
saying why. Every directory holds a SHA256SUMS of its files (`sha256sum -c SHA256SUMS`, or
frozen_sweep.weights.integrity.check_checksums).

    python -m frozen_sweep.export RUN OUT_DIR --format ctranslate2 [--quantization int8|int16|float16]

writes a translation run as a CTranslate2 model directory (ctranslate2.Translator(OUT_DIR); needs `ctranslate2`: pip
install 'frozen_sweep[ctranslate2]'), weights quantised as asked (default float32), the SentencePiece model beside
them as sentencepiece.model: all a deployment needs. Sources are given as SentencePiece pieces (`</s>` is appended by
the model); float32 greedy search gives the run's greedy translations. Language models, classifiers and reservoirs
other than transformer layers are refused, saying why (frozen_sweep.weights.ctranslate2_model).

--checkpoint best|last|PATH exports a running or interrupted run's checkpoint instead of its best weights.
"""

import argparse
import functools
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from omegaconf import OmegaConf

from frozen_sweep.config import TaskKind
from frozen_sweep.use import command_line
from frozen_sweep.use.command_line import UsageError
from frozen_sweep.weights import hf_export
from frozen_sweep.weights.ctranslate2_model import QUANTIZATIONS
from frozen_sweep.weights.finished_run import FinishedRun, load_run, seed_drawn
from frozen_sweep.weights.freeze import frozen_fingerprint, parameter_counts
from frozen_sweep.weights.integrity import write_checksums
from frozen_sweep.weights.model_file import write_model_file

# --format → (the package it needs, the pip extra that installs it, the task kinds it writes)
DIRECTORY_FORMATS = {
    "hf": ("transformers", "hf", "translation runs (MarianMT) and language models (LLaMA)"),
    "ctranslate2": ("ctranslate2", "ctranslate2", "translation runs (a CTranslate2 Translator)"),
}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="a finished run's directory, or a model file")
    p.add_argument("out", metavar="OUT", help="the model file to write (replaced atomically if it exists); with "
                   "--format hf or ctranslate2, a new directory")  # fmt: skip
    p.add_argument("--format", choices=["safetensors", *DIRECTORY_FORMATS], default="safetensors")
    p.add_argument("--quantization", choices=QUANTIZATIONS, default=None,
                   help="--format ctranslate2: the weights' type (default float32)")  # fmt: skip
    command_line.add_checkpoint(p)
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.quantization is not None and args.format != "ctranslate2":
        raise UsageError(f"--quantization is for --format ctranslate2, not --format {args.format}")
    if args.format in DIRECTORY_FORMATS:
        return export_directory(args.run, out, args.format, args.quantization or "float32", args.checkpoint)
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
                     run.base_draws, run.threads)  # fmt: skip
    total = parameter_counts(model)["params_total"]
    stored = total - sum(p.numel() for name, p in model.named_parameters() if name in drawn)
    print(f"{out}: {out.stat().st_size:,} bytes; {stored:,} of {total:,} parameters stored ({stored / total:.1%}), "
          f"the rest drawn from seed {run.config.seed}; weights: {weights}", file=sys.stderr)  # fmt: skip


def writers(fmt: str, quantization: str) -> dict:
    """Task kind → (what the directory is, why a config cannot be held, the writer, what the export promises)."""
    from frozen_sweep.weights import ctranslate2_model, llama_hf, marian

    translations = "greedy search gives the run's greedy translations"
    if fmt == "ctranslate2":
        write = functools.partial(ctranslate2_model.write_ctranslate2, quantization=quantization)
        promise = translations if quantization == "float32" else (f"{quantization} weights: greedy search gives "
                                                                    "translations close to the run's, not its own")
        return {TaskKind.translation: ("CTranslate2 Translator", ctranslate2_model.not_expressible, write, promise)}
    return {TaskKind.translation: ("MarianMT", marian.not_expressible, marian.write_marian, translations),
            TaskKind.lm: ("LLaMA", llama_hf.not_expressible, llama_hf.write_llama,
                          "its logits and greedy continuations are the run's")}  # fmt: skip


def pretrained_writer(source: str) -> tuple:
    """A run trained from checkpoint `source` as `writers` gives a format: the checkpoint's own class."""

    def write(directory: Path, cfg, model, vocab) -> None:  # the checkpoint's tokenizer, not the vocabulary read
        hf_export.write_pretrained_class(directory, cfg, model, source)

    not_expressible = functools.partial(hf_export.not_expressible, source=source)
    return f"{hf_export.architecture_of(source)} (as {source})", not_expressible, write, "its logits are the run's"


def export_directory(run_path: str, out: Path, fmt: str, quantization: str, checkpoint: str = "best") -> None:
    """The run as a MarianMT, LLaMA or CTranslate2 directory with a SHA256SUMS of its files, written beside OUT and
    renamed into place once complete."""
    package, extra, kinds = DIRECTORY_FORMATS[fmt]
    if importlib.util.find_spec(package) is None:
        raise UsageError(f"--format {fmt} needs {package}: pip install 'frozen_sweep[{extra}]'")
    if out.exists():
        raise UsageError(f"{out} exists; --format {fmt} writes a new directory")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent} does not exist: create it first")
    run = load_run(run_path, checkpoint=checkpoint)
    kind, formats = TaskKind(run.config.task.kind), writers(fmt, quantization)
    source = hf_export.checkpoint_source(run.config) if fmt == "hf" else None
    if source is not None:  # trained from a pretrained checkpoint: back to its own class
        formats = {kind: pretrained_writer(source)}
    if kind not in formats:
        raise UsageError(f"{run.path}: task.kind={kind.value}: --format {fmt} writes {kinds}")
    what, not_expressible, write, promise = formats[kind]
    reasons = not_expressible(run.config)
    if reasons:
        raise UsageError(f"{run.path}: {what} cannot hold this model: {'; '.join(reasons)}")
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        write(Path(tmp) / "model", run.config, run.model.eval(), run.vocab)
        write_checksums(Path(tmp) / "model")
        os.replace(Path(tmp) / "model", out)
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{out}: {what}, {size:,} bytes; {promise}; weights: {run.weights_summary()}", file=sys.stderr)


if __name__ == "__main__":
    command_line.run_command(main)
