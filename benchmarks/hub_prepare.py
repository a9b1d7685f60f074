"""A hub dataset against the same pairs as text files: what preparing it costs, and what a job then holds.

    python benchmarks/hub_prepare.py [--pairs 205000 1000000 2000000] [--dir /tmp/frozen_sweep_hub_prepare]

For each size: data_scale.py's corpus (pair i: training pair i mod 27,964 of the embedded corpus, words shuffled by a
seeded generator), written once as text files and once in the hub's parquet layout (a `tr-en` config with WMT's
`translation` column, train/validation/test files named in the README's YAML, as the hub's wmt/wmt18 is), then side by
side: `python -m frozen_sweep.prepare` of each on a cold cache (the hub layout also on a cold `datasets` cache: its
Arrow conversion is part of the cost), seconds and peak RSS; a 2-step model=micro job on each prepared dataset, its
peak RSS. 205,000 pairs is WMT18 tr→en's size. Targets: hub preparation's wall time and peak RSS ≤ 1.2× the text
files' at every size; the hub job's peak RSS within 50 MB of the text-file job's.
"""

import os
import shutil
import sys
from pathlib import Path

import common
from child_memory import run_child
from data_scale import write_corpus, write_hub_layout
from omegaconf import OmegaConf

from frozen_sweep.config import TaskConfig
from frozen_sweep.data.sources import source_dir

def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--pairs", type=int, nargs="+", default=[205_000, 1_000_000, 2_000_000])
    p.add_argument("--dir", type=Path, default=Path("/tmp/frozen_sweep_hub_prepare"))
    args = p.parse_args()
    common.setup(args)
    if args.quick:
        args.pairs, args.dir = [2000], args.dir.with_name(args.dir.name + "_quick")
    held_out, vocab = (20, 500) if args.quick else (300, 8000)
    embedded = source_dir(OmegaConf.structured(TaskConfig(name="bible", cache_dir=str(args.dir / "embedded"))))
    job = ["model=micro", "trainer=quick", "trainer.max_steps=2", "trainer.valid_bleu_sentences=0", "eval.beam=1"]
    rows, verdicts = [], []
    for pairs in sorted(args.pairs):
        corpus = write_corpus(args.dir, pairs, embedded, held_out)
        hub = write_hub_layout(corpus)
        tasks = {
            "text files": ["task=text_files", f"task.path={corpus}", "task.src_lang=es", "task.tgt_lang=en"],
            "hub layout": ["task=hf", f"task.dataset={hub}", "task.dataset_config=tr-en", "task.src_lang=es",
                           "task.tgt_lang=en"],  # fmt: skip
        }
        measured = {}
        for name, task in tasks.items():
            cache, hf_home, run_dir = (args.dir / f"{what}-{pairs}" for what in ("cache", "hf_home", "run"))
            for stale in (cache, hf_home, run_dir):
                shutil.rmtree(stale, ignore_errors=True)
            overrides = [*task, f"task.vocab_size={vocab}", f"task.cache_dir={cache}"]
            os.environ["HF_HOME"] = str(hf_home)  # a cold `datasets` cache: its Arrow conversion counted
            prep_s, prep_memory, _ = run_child([sys.executable, "-m", "frozen_sweep.prepare", *overrides],
                                            args.dir / "prepare.log")  # fmt: skip
            _, job_memory, _ = run_child([sys.executable, "-m", "frozen_sweep", *overrides, *job,
                                       f"hydra.run.dir={run_dir}"], args.dir / "job.log")  # fmt: skip
            measured[name] = (prep_s, prep_memory, job_memory.peak)
            for stale in (cache, hf_home, run_dir):
                shutil.rmtree(stale, ignore_errors=True)
        (text_s, text_prep, text_job), (hub_s, hub_prep, hub_job) = measured.values()
        rows.append([f"{pairs:,}", f"{text_s:.1f} s ({text_prep.cpu_s:.1f} CPU)",
                     f"{hub_s:.1f} s ({hub_prep.cpu_s:.1f} CPU)",
                     f"{hub_s / text_s:.2f}×", str(text_prep), str(hub_prep), f"{hub_prep.peak / text_prep.peak:.2f}×",
                     f"{text_job:.0f} MB", f"{hub_job:.0f} MB", f"{os.getloadavg()[0]:.1f}"])  # fmt: skip
        verdicts.append((pairs, hub_s / text_s, hub_prep.peak / text_prep.peak, hub_job - text_job))
    common.table(["pairs", "prepare text", "prepare hub", "hub / text", "prepare RSS text", "prepare RSS hub",
                  "hub / text", "job RSS text", "job RSS hub", "load"], rows)  # fmt: skip
    for pairs, seconds, rss, extra in verdicts:
        common.verdict(f"hub preparation's wall time / text files' at {pairs:,} pairs", seconds, 1.2, at_most=True)
        common.verdict(f"hub preparation's peak RSS / text files' at {pairs:,} pairs", rss, 1.2, at_most=True)
        common.verdict(f"hub job's peak RSS over the text-file job's at {pairs:,} pairs", extra, 50, unit=" MB",
                       at_most=True)  # fmt: skip

if __name__ == "__main__":
    main()
