"""Translation speed against the engines people deploy: ours, Hugging Face `generate` on our MarianMT export, and
CTranslate2 on our CTranslate2 export, side by side on the same model and the same test sentences.

    python benchmarks/inference_engines.py [--models demo big] [--sentences 100 16] [--thread-counts 1 2]
        [--runs RUN ...] [--run-sentences 100]

For each model: the embedded corpus' test set (its prepared SentencePiece vocabulary, the first --sentences test
sentences of each model), the model built as a job builds it (seeded init, untrained: an untrained model rarely ends
a sentence, so hypotheses run to the cap, the worst case); for each of --runs, a finished translation run's trained
model, vocabulary and the first --run-sentences of its test.src.txt (sentences end where the model ends them, as in
use, and BLEU means something). Each model is exported with the project's own writers (`--format hf`, `--format
ctranslate2`, float32 and int8). Every engine gets the same sentences in the same batches (sorted by length,
eval.batch_sentences each) and the same cap: at most --max-len tokens per hypothesis, end of sentence included
(eval.max_len_a=0; `generate`'s max_length and `max_decoding_length` = --max-len − 1), and the same rule to end a
sentence's beam search: `beam` finished hypotheses (`generate`'s early_stopping=True; its default heuristic searches
on, slower, other translations). Then, at each thread count (torch.set_num_threads; CTranslate2's intra_threads, one
translator) and beam 1 and 4: sentences/s by the wall clock and the CPU seconds of the process (time.process_time:
fairer on a shared machine; CTranslate2's pool threads count too), the median of --repeats rounds (default 1), after
a warm-up batch of 2 sentences, the engines in one process on the same batches, BLEU against the references (≈0:
untrained), how many translations equal ours, and the output's mean length in subwords (the work each engine did: an
untrained model's beam searches end at different lengths).

Target: ours ≥ 1.5× `generate` sentences/s at every setting; CTranslate2 / ours stated.
"""

import statistics
import tempfile
import time
from pathlib import Path

import common
import sacrebleu
import torch
from omegaconf import OmegaConf

from frozen_sweep import load_run
from frozen_sweep.data import load_task
from frozen_sweep.data.prepared import text_file
from frozen_sweep.data.specials import EOS
from frozen_sweep.evaluate.decode import length_batches, translate
from frozen_sweep.weights.build import build_model
from frozen_sweep.weights.ctranslate2_model import write_ctranslate2
from frozen_sweep.weights.marian import write_marian

ENGINES = ("ours", "generate", "ct2", "ct2 int8")


def engines(model, vocab, cfg, directory: Path, cap: int) -> dict:
    """engine → translate(batches of source ids, beam, threads) → detokenised strings, in batch order."""
    from transformers import MarianMTModel
    import ctranslate2

    write_marian(directory / "hf", cfg, model, vocab)
    marian = MarianMTModel.from_pretrained(directory / "hf").eval()
    marian.generation_config.max_length = cap  # the decoder start token and cap - 1 more
    for q in ("float32", "int8"):
        write_ctranslate2(directory / q, cfg, model, vocab, q)
    search = OmegaConf.merge(cfg.eval, {"max_len_a": 0, "max_len_b": cap})
    translators = {}

    def ours(batches, beam, threads):
        return translate(model, [s for b in batches for s in b], vocab, torch.device("cpu"), search, beam=beam)

    @torch.no_grad()
    def generate(batches, beam, threads):
        out = []
        for batch in batches:
            ids = [s + [EOS] for s in batch]
            width = max(map(len, ids))
            input_ids = torch.tensor([s + [marian.config.pad_token_id] * (width - len(s)) for s in ids])
            stop = {"early_stopping": True} if beam > 1 else {}  # ours' (fairseq's) rule: done at `beam` finished
            hyps = marian.generate(input_ids=input_ids, attention_mask=input_ids != marian.config.pad_token_id,
                                   num_beams=beam, **stop)  # fmt: skip
            out += [vocab.decode(h[1:]) for h in hyps]
        return out

    def ct2(quantization):
        def run(batches, beam, threads):
            key = quantization, threads
            if key not in translators:
                translators[key] = ctranslate2.Translator(str(directory / quantization), device="cpu",
                                                          inter_threads=1, intra_threads=threads)  # fmt: skip
            pieces = [[vocab.sp.id_to_piece(i) for i in s] for b in batches for s in b]
            results = translators[key].translate_batch(pieces, beam_size=beam, max_decoding_length=cap - 1,
                                                       max_batch_size=max(map(len, batches)))  # fmt: skip
            return [vocab.sp.decode_pieces(r.hypotheses[0]) for r in results]

        return run

    return {"ours": ours, "generate": generate, "ct2": ct2("float32"), "ct2 int8": ct2("int8")}


def untrained(args, model_name: str, sentences: int) -> tuple:
    """(label, model, vocab, config, test sources, references) of an untrained `model_name` on the embedded corpus."""
    cfg = common.compose_config(f"model={model_name}", *common.task_overrides(args.quick, args.tmp))
    data = load_task(cfg.task)
    src_lang, tgt_lang = data.stats["langs"]
    prepared = Path(data.stats["prepared_dir"])
    refs = (prepared / text_file("test", tgt_lang)).read_text().splitlines()[:sentences]
    sources = (prepared / text_file("test", src_lang)).read_text().splitlines()[:sentences]
    return f"model={model_name}, untrained", build_model(cfg, len(data.vocab)).eval(), data.vocab, cfg, sources, refs


def trained(run_dir: str, sentences: int) -> tuple:
    """The same of a finished translation run, on its own test sentences."""
    run = load_run(run_dir, device="cpu")
    lines = {kind: (Path(run_dir) / f"test.{kind}.txt").read_text().splitlines()[:sentences] for kind in ("src", "ref")}
    label = f"model={run.config.model.name}, trained ({run_dir})"
    return label, run.model.eval(), run.vocab, run.config, lines["src"], lines["ref"]


def measure(args, label: str, model, vocab, cfg, lines: list[str], refs: list[str]) -> bool:
    sentences = len(lines)
    sources = vocab.encode_batch(lines)
    order = length_batches([len(s) + 1 for s in sources], cfg.eval.batch_sentences)
    batches = [[sources[i] for i in b] for b in order]
    refs = [refs[i] for b in order for i in b]
    m = cfg.model
    print(f"\n{label} ({m.encoder_layers}+{m.decoder_layers} layers, d {m.d_model}, FFN {m.ffn_dim}, vocab "
          f"{len(vocab)}); {sentences} test sentences in batches of ≤ {cfg.eval.batch_sentences}, ≤ {args.max_len} "
          "tokens a hypothesis")  # fmt: skip
    met, rows = True, []
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        translate_with = engines(model, vocab, cfg, Path(tmp), args.max_len)
        sizes = {q: (Path(tmp) / q / "model.bin").stat().st_size / 1e6 for q in ("float32", "int8")}
        print(f"  CTranslate2 model.bin: float32 {sizes['float32']:.1f} MB, int8 {sizes['int8']:.1f} MB")
        for threads in args.thread_counts:
            torch.set_num_threads(threads)
            for beam in (1, 4):
                walls, cpus, outputs = {name: [] for name in ENGINES}, {name: [] for name in ENGINES}, {}
                for name in ENGINES:
                    translate_with[name]([batches[0][:2]], beam, threads)  # warm-up
                for r in range(args.repeats or 1):  # rounds, the engines' order rotated each round; medians
                    for name in ENGINES[r % len(ENGINES) :] + ENGINES[: r % len(ENGINES)]:
                        started, cpu_started = time.perf_counter(), time.process_time()
                        outputs[name] = translate_with[name](batches, beam, threads)
                        walls[name].append(time.perf_counter() - started)
                        cpus[name].append(time.process_time() - cpu_started)
                rates = {name: sentences / statistics.median(walls[name]) for name in ENGINES}
                cpu = {name: statistics.median(cpus[name]) for name in ENGINES}
                for name in ENGINES:
                    bleu = sacrebleu.corpus_bleu(outputs[name], [refs]).score
                    same = sum(a == b for a, b in zip(outputs[name], outputs["ours"]))
                    pieces = sum(map(len, vocab.encode_batch(outputs[name]))) / sentences
                    rows.append([threads, beam, name, f"{rates[name]:.3g}", f"{rates[name] / rates['ours']:.2f}",
                                 f"{cpu[name]:.3g}", f"{cpu['ours'] / cpu[name]:.2f}", f"{bleu:.1f}",
                                 f"{same}/{sentences}", f"{pieces:.1f}"])  # fmt: skip
                met &= common.verdict(f"{label} {threads} thread(s) beam {beam}: ours / generate sentences/s",
                                      rates["ours"] / rates["generate"], 1.5)  # fmt: skip
                print(f"  {threads} thread(s) beam {beam}: ours / generate in CPU time "
                      f"{cpu['generate'] / cpu['ours']:.2f}; CTranslate2 / ours sentences/s "
                      f"{rates['ct2'] / rates['ours']:.2f} (int8 {rates['ct2 int8'] / rates['ours']:.2f})")
    common.table(["threads", "beam", "engine", "sent/s", "÷ ours", "CPU s", "÷ ours, CPU", "BLEU", "= ours",
                  "subwords/sentence"], rows)  # fmt: skip
    return met


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--models", nargs="*", default=["demo", "big"], help="untrained models (none: --runs only)")
    p.add_argument("--sentences", type=int, nargs="+", default=[100, 16], help="test sentences, one per model")
    p.add_argument("--thread-counts", type=int, nargs="+", default=[1, 2])
    p.add_argument("--runs", nargs="*", default=[], help="finished translation runs (directories) to measure too")
    p.add_argument("--run-sentences", type=int, default=100, help="test sentences of each run")
    p.add_argument("--max-len", type=int, default=32, help="tokens per hypothesis at most, end of sentence included")
    args = p.parse_args()
    if args.quick:
        args.models, args.sentences, args.thread_counts, args.max_len = ["micro"], [6], [1], 8
    common.setup(args)
    met = True
    with tempfile.TemporaryDirectory() as tmp:
        args.tmp = tmp
        for model_name, sentences in zip(args.models, args.sentences):
            met &= measure(args, *untrained(args, model_name, sentences))
        for run_dir in args.runs:
            met &= measure(args, *trained(run_dir, args.run_sentences))
    print("all targets met" if met else "some targets NOT met")


if __name__ == "__main__":
    main()
