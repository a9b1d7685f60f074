"""Data at scale: preparing a corpus of millions of pairs once, and what a job pays to open it.

    python benchmarks/data_scale.py [--pairs 100000 1000000 4000000] [--dir /tmp/frozen_sweep_data_scale]
                                    [--job-pairs 20000 400000] [--job-memory-only] [--repeats 3]

Corpora: pair i is training pair i mod 27,964 of the embedded corpus with the words of each side shuffled by one
seeded generator (so that lines are not copies), valid/test the embedded sets' first 300 pairs (20 with --quick,
whose sweep runs on Hydra's basic launcher, in one process); written once under --dir/<pairs>/ and reused
(deterministic). For each size, side by side in one run:
- preparation: `python -m frozen_sweep.prepare` (task.vocab_size=8000, a cold cache) in a child process: seconds,
  lines/s (both sides), its phases (check + sample, vocabulary, encode) and peak RSS;
- the limit: SentencePiece's own encode of the same training lines, in memory, on every core (`encode(lines,
  num_threads=cores)` in chunks of 1M lines, the prepared vocabulary): lines/s;
- a 2-step model=micro job (`python -m frozen_sweep`, greedy test decoding) on the prepared data: its data start-up
  (the record's data.load_s) and peak RSS (ru_maxrss, of a child started by a small interpreter), with the peaks of
  RssAnon and RssFile (/proc/<pid>/status sampled every 10 ms: touched pages of memory-mapped files count in RssFile).
Job memory (--job-pairs, 20k and 400k pairs by default; --job-memory-only runs this alone): the same 2-step job on
each size, prepared beforehand, `--repeats` rounds (3) interleaved, median peak RSS, RssAnon and RssFile per size, and
the largest size's peak over the smallest's. `job_memory(task_overrides, ...)` takes any task's overrides: a
hub-layout corpus (task=hf) is measured by passing its own (`compare_job_memory`).
Then a 4-job local_gpus sweep (seed=1..4, 2 steps each) of the smallest size on a cold cache: how many preparations
ran (data/preparation.py logs one line per build), in the plan and in the jobs.
Targets: at the largest size peak job RSS ≤ the smallest's + 200 MB; job memory at 400k pairs ≤ 20k's + 50 MB; data
start-up ≤ 5 s; preparation ≥ 0.7× the limit; exactly one preparation per sweep. Disk: ≈0.4 GB of text and ≈0.2 GB
prepared per million pairs.
"""

import json
import os
import random
import re
import shutil
import statistics
import sys
import time
from itertools import islice
from pathlib import Path

import common
import sentencepiece as spm
from child_memory import Memory, run_child
from omegaconf import OmegaConf

from frozen_sweep.config import TaskConfig
from frozen_sweep.data.preparation import encode_threads
from frozen_sweep.data.sources import source_dir
from frozen_sweep.data.prepared import MANIFEST
from frozen_sweep.data.vocab import Vocab

BUILT = re.compile(r"prepared [0-9a-f]{32}: train/valid/test")  # data/preparation.py's line, once per build


def write_corpus(root: Path, pairs: int, embedded: Path, held_out_lines: int) -> Path:
    out = root / str(pairs)
    if (out / "done-typed").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    sides = {lang: (embedded / f"train.{lang}").read_text(encoding="utf-8").split("\n")[:-1] for lang in ("es", "en")}
    rng = random.Random(f"data_scale/{pairs}")
    for lang, lines in sides.items():
        with open(out / f"train.{lang}", "w", encoding="utf-8") as f:
            for start in range(0, pairs, 100_000):
                chunk = []
                for i in range(start, min(pairs, start + 100_000)):
                    words = lines[i % len(lines)].split()
                    rng.shuffle(words)
                    chunk.append(" ".join(words))
                f.write("\n".join(chunk) + "\n")
        for split in ("valid", "test"):
            held_out = (embedded / f"{split}.{lang}").read_text(encoding="utf-8").split("\n")[:held_out_lines]
            (out / f"{split}.{lang}").write_text("\n".join(held_out) + "\n", encoding="utf-8")
    (out / "done-typed").touch()
    return out


JOB = ["model=micro", "trainer=quick", "trainer.max_steps=2", "trainer.valid_bleu_sentences=0", "eval.beam=1"]


SPLITS = {"train": "train", "valid": "validation", "test": "test"}  # text file name → hub split
README = "---\nconfigs:\n- config_name: tr-en\n  data_files:\n" + "".join(
    f"  - split: {split}\n    path: tr-en/{split}-*\n" for split in SPLITS.values()) + "---\n"  # fmt: skip


def write_hub_layout(corpus: Path) -> Path:
    """The text corpus's pairs as parquet in the hub's layout, WMT's column typed as the hub types it (a
    `datasets.Translation`), 100,000 rows a row group."""
    import pyarrow as pa  # only for the hub layout
    import pyarrow.parquet as pq

    out = corpus / "hub"
    if (out / "done-typed").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    (out / "tr-en").mkdir(parents=True)
    from datasets import Features, Translation  # the hub's typing: its features in the parquet's metadata

    schema = Features({"translation": Translation(languages=["es", "en"])}).arrow_schema
    for name, split in SPLITS.items():
        with open(corpus / f"{name}.es", encoding="utf-8") as es, open(corpus / f"{name}.en", encoding="utf-8") as en, \
                pq.ParquetWriter(out / "tr-en" / f"{split}-00000-of-00001.parquet", schema) as writer:  # fmt: skip
            chunk = []
            for s, t in zip(es, en):
                chunk.append({"es": s.rstrip("\n"), "en": t.rstrip("\n")})
                if len(chunk) == 100_000:
                    writer.write_table(pa.table({"translation": chunk}, schema=schema))
                    chunk = []
            if chunk:
                writer.write_table(pa.table({"translation": chunk}, schema=schema))
    (out / "README.md").write_text(README)
    (out / "done-typed").touch()
    return out


def job_memory(task_overrides: list[str], run_dir: Path, log: Path) -> tuple[Memory, float]:
    """Peak memory and data start-up (s) of a 2-step model=micro job (JOB) on the task `task_overrides` name, whose
    data is prepared beforehand (`python -m frozen_sweep.prepare` with the same overrides), so that the figure is the
    job's: start-up, two steps, the test. Any task: a hub-layout corpus (task=hf …) passes its own overrides."""
    shutil.rmtree(run_dir, ignore_errors=True)
    command = [sys.executable, "-m", "frozen_sweep", *task_overrides, *JOB, f"hydra.run.dir={run_dir}"]
    _, memory, _ = run_child(command, log)
    load_s = json.loads((run_dir / "result.json").read_text())["data"]["load_s"]
    shutil.rmtree(run_dir, ignore_errors=True)
    return memory, load_s


def compare_job_memory(label: str, tasks: dict[int, list[str]], work: Path, rounds: int, target_mb: float) -> bool:
    """The same 2-step job on each size's task (prepared once first, not measured), `rounds` rounds interleaved: the
    median peak RSS, RssAnon and RssFile per size, and the largest size's peak over the smallest's against
    `target_mb`. `tasks`: pairs → task overrides (a text corpus's, or a hub-layout corpus's)."""
    for overrides in tasks.values():
        run_child([sys.executable, "-m", "frozen_sweep.prepare", *overrides], work / "prepare.log")
    samples: dict[int, list[Memory]] = {pairs: [] for pairs in tasks}
    for _ in range(rounds):
        for pairs, overrides in tasks.items():
            memory, _ = job_memory(overrides, work / f"run-{label}-{pairs}", work / "job.log")
            samples[pairs].append(memory)
    median = {pairs: Memory(*(statistics.median(getattr(m, k) for m in ms) for k in ("peak", "anon", "file")))
              for pairs, ms in samples.items()}  # fmt: skip
    common.table(["corpus", "pairs", "job peak RSS", "RssAnon", "RssFile", f"peak RSS, {rounds} rounds", "load"],
                 [[label, f"{pairs:,}", f"{m.peak:.0f} MB", f"{m.anon:.0f} MB", f"{m.file:.0f} MB",
                   " ".join(f"{s.peak:.0f}" for s in samples[pairs]), f"{os.getloadavg()[0]:.1f}"]
                  for pairs, m in median.items()])  # fmt: skip
    small, large = median[min(median)], median[max(median)]
    sizes = f"{max(median):,} pairs over {min(median):,} pairs'"
    print(f"{label} job at {sizes}: RssAnon {large.anon - small.anon:+.0f} MB, "
          f"RssFile {large.file - small.file:+.0f} MB")  # fmt: skip
    return common.verdict(f"{label} job peak RSS at {sizes} (MB)", large.peak - small.peak, target_mb, unit=" MB",
                          at_most=True)  # fmt: skip


def limit_lines_per_s(corpus: Path, model: Path) -> float:
    """SentencePiece's own parallel encode of the training lines (read beforehand, not timed), every core."""
    sp, threads, seconds, lines = spm.SentencePieceProcessor(model_file=str(model)), encode_threads(), 0.0, 0
    for lang in ("es", "en"):
        with open(corpus / f"train.{lang}", encoding="utf-8") as f:
            while chunk := [line.rstrip("\n") for line in islice(f, 1_000_000)]:
                started = time.perf_counter()
                sp.encode(chunk, num_threads=threads)
                seconds += time.perf_counter() - started
                lines += len(chunk)
    return lines / seconds


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--pairs", type=int, nargs="+", default=[100_000, 1_000_000, 4_000_000])
    p.add_argument("--dir", type=Path, default=Path("/tmp/frozen_sweep_data_scale"))
    p.add_argument("--job-pairs", type=int, nargs="+", default=[20_000, 400_000], help="job memory's sizes")
    p.add_argument("--job-memory-only", action="store_true", help="job memory alone (no preparation table, sweep)")
    p.add_argument("--sweep-jobs", type=int, default=4)
    args = p.parse_args()
    common.setup(args)
    if args.quick:
        args.pairs, args.dir, args.sweep_jobs = [2000], args.dir.with_name(args.dir.name + "_quick"), 2
        args.job_pairs, args.repeats = [1000, 2000], 1
    held_out, launcher = (20, "basic") if args.quick else (300, "local_gpus")  # quick: one process runs the sweep
    vocab = 500 if args.quick else 8000
    embedded = source_dir(OmegaConf.structured(TaskConfig(name="bible", cache_dir=str(args.dir / "embedded"))))
    task = ["task=text_files", "task.src_lang=es", "task.tgt_lang=en", f"task.vocab_size={vocab}"]
    job, python = JOB, [sys.executable, "-m"]

    cache = args.dir / "cache-job-memory"  # one cache for the sizes: each prepared once, before its jobs
    shutil.rmtree(cache, ignore_errors=True)
    corpora = {pairs: write_corpus(args.dir, pairs, embedded, held_out) for pairs in sorted(args.job_pairs)}
    text_tasks = {pairs: [*task, f"task.path={corpus}", f"task.cache_dir={cache}"] for pairs, corpus in corpora.items()}
    compare_job_memory("text_files", text_tasks, args.dir, args.repeats or 3, 50)
    shutil.rmtree(cache, ignore_errors=True)
    hub_tasks = {pairs: ["task=hf", f"task.dataset={write_hub_layout(corpus)}", "task.dataset_config=tr-en",
                         *task[1:], f"task.cache_dir={cache}"] for pairs, corpus in corpora.items()}  # fmt: skip
    compare_job_memory("hub layout", hub_tasks, args.dir, args.repeats or 3, 50)
    shutil.rmtree(cache, ignore_errors=True)
    if args.job_memory_only:
        return
    rows, results = [], {}
    for pairs in sorted(args.pairs):
        corpus, cache = write_corpus(args.dir, pairs, embedded, held_out), args.dir / f"cache-{pairs}"
        shutil.rmtree(cache, ignore_errors=True)
        overrides = [*task, f"task.path={corpus}", f"task.cache_dir={cache}"]
        prep_s, prep_rss, out = run_child([*python, "frozen_sweep.prepare", *overrides], args.dir / "prepare.log")
        prepared = Path(next(line for line in out.splitlines() if line.startswith(str(cache))))
        manifest = json.loads((prepared / MANIFEST).read_text())
        lines = 2 * sum(c["examples"] for c in manifest["splits"].values())
        limit = limit_lines_per_s(corpus, prepared / Vocab.FILE)
        run_dir = args.dir / f"run-{pairs}"
        job_rss, load_s = job_memory(overrides, run_dir, args.dir / "job.log")
        phases = manifest["seconds"]
        encode_rate = 2 * manifest["splits"]["train"]["examples"] / phases["encode"]
        results[pairs] = {"prep_rate": lines / prep_s, "limit": limit, "job_rss": job_rss.peak, "load_s": load_s}
        split_s = "/".join(f"{phases[phase]:.1f}" for phase in ("check", "vocab", "encode"))
        rows.append([f"{pairs:,}", f"{prep_s:.1f} s", split_s,
                     f"{lines / prep_s:,.0f}", f"{encode_rate:,.0f}", f"{limit:,.0f}", f"{prep_rss.peak:.0f} MB",
                     f"{load_s:.2f} s", str(job_rss), f"{os.getloadavg()[0]:.1f}"])  # fmt: skip
        shutil.rmtree(cache, ignore_errors=True)
    common.table(["pairs", "prepare", "check/vocab/encode", "lines/s", "encode lines/s", "limit lines/s",
                  "prepare RSS", "job data start", "job peak RSS (RssAnon + RssFile peaks)", "load"], rows)  # fmt: skip

    smallest, largest = min(results), max(results)
    sweep, cache = args.dir / "sweep", args.dir / "cache-sweep"
    for stale in (sweep, cache):
        shutil.rmtree(stale, ignore_errors=True)
    corpus = write_corpus(args.dir, smallest, embedded, held_out)
    seeds = ",".join(str(s) for s in range(1, args.sweep_jobs + 1))
    _, _, out = run_child([*python, "frozen_sweep", "-m", f"hydra.sweep.dir={sweep}", f"hydra/launcher={launcher}",
                           *task, f"task.path={corpus}", f"task.cache_dir={cache}", *job, f"seed={seeds}"],
                          args.dir / "sweep.log")  # fmt: skip
    # the basic launcher runs its jobs in its own process: their lines are in its output already
    in_jobs = 0 if launcher == "basic" else sum(len(BUILT.findall(log.read_text())) for log in sweep.glob("*/*.log"))
    print(f"{args.sweep_jobs}-job sweep on a cold cache: {len(BUILT.findall(out))} preparation(s) in the plan, "
          f"{in_jobs} in the jobs")  # fmt: skip
    for stale in (sweep, cache):
        shutil.rmtree(stale, ignore_errors=True)

    big = results[largest]
    common.verdict(f"peak job RSS at {largest:,} pairs over {smallest:,} pairs' (MB)",
                   big["job_rss"] - results[smallest]["job_rss"], 200, unit=" MB", at_most=True)  # fmt: skip
    common.verdict("data start-up once prepared (slowest)", max(r["load_s"] for r in results.values()), 5,
                   unit=" s", at_most=True)  # fmt: skip
    common.verdict(f"preparation at {largest:,} pairs / SentencePiece's parallel encode",
                   big["prep_rate"] / big["limit"], 0.7)  # fmt: skip
    builds = len(BUILT.findall(out)) + in_jobs
    print(f"TARGET preparations per {args.sweep_jobs}-job sweep: {builds} (target exactly 1): "
          f"{'met' if builds == 1 else 'NOT MET'}")  # fmt: skip


if __name__ == "__main__":
    main()
