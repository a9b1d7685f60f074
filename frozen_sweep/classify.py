"""Label text with a finished classification run's best model, or give a regression run's number for it.

    python -m frozen_sweep.classify RUN [--input FILE] [--output FILE] < lines.txt

RUN: the run's directory, or its model file (python -m frozen_sweep.export RUN OUT): the same labels and
probabilities. Reads one example a line, UTF-8 (from stdin, or --input): a text, or for a run trained on pairs
`text_a<TAB>text_b`; writes `label<TAB>probability` a line (a regression run: the predicted number), in the input's
order (to stdout, or --output, written whole or not at all; with --stream, a batch at a time); an empty line gives an
empty line. The Python API: frozen_sweep.load_run(RUN).classify. The run is loaded by the one loader of finished runs
(frozen_sweep.weights.finished_run.load_run): its frozen parameters regenerated from their seed (a fine-tuned run
directory's from its base run; its model file stores those the base trained) and verified. Errors name the line:
invalid UTF-8, a wrong number of columns, an empty text of a pair, one longer than the model's positions.
"""

from frozen_sweep.config import TaskKind
from frozen_sweep.use import command_line


def main(argv=None) -> None:
    p = command_line.parser(__doc__)
    p.add_argument("--batch-size", type=int, default=64, help="examples per forward pass (default 64)")
    args = p.parse_args(argv)
    run = command_line.open_run(args)
    run.require("classify", TaskKind.classify, TaskKind.regression)

    def answer(lines: list[str], source: str, first_line: int) -> list[str]:
        answers = run.classify(lines, args.batch_size, source=source, first_line=first_line)
        if run.kind == TaskKind.regression:
            return ["\n" if number is None else f"{number:.4f}\n" for number in answers]
        return ["\n" if label is None else f"{label[0]}\t{label[1]:.4f}\n" for label in answers]

    command_line.serve(args, run, answer)


if __name__ == "__main__":
    command_line.run_command(main)
