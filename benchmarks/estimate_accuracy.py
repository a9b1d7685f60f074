"""Estimated job cost against measured time: a finished 20-job CPU sweep, each job estimated before it ran.

    python benchmarks/estimate_accuracy.py [--quick] [--model micro] [override ...]

A `local_gpus` sweep of `--model` jobs on the tests' small corpus (written to a temporary directory; trainer=quick,
beam 2): freeze none/emb/att/ffn/emb_att × trainer.max_epochs 4/8/12/16, two jobs at a time, one thread each.
1. Its dry run (`dry_run=true`: each job's probe measured and cached, the estimates printed); its wall time is the
   probes' cost.
2. The sweep runs.
3. Each job's estimate (frozen_sweep.job.cost, from the cached probes, with no completed run to learn from, as
   before the sweep) against what it measured: the estimate's training and validations against the record's
   wall_time_s (training, validation included), and the whole estimate (with its start: imports, data, model)
   against the job's attempt wall time (its process from start to end). Printed: each job's figures, the median and worst
   relative error of both, and the sweep's estimated wall time against its measured one.
`--quick`: four jobs (freeze none/emb × max_epochs 2/4); figures meaningless.
Targets: the median error of the training estimate ≤ 25%, of the whole job ≤ 50% (submitit's wrapper process and
the result's writing are not estimated).
Extra arguments are config overrides for every job.
"""

import json
import statistics
import tempfile
from pathlib import Path

import common
from cpu_bf16 import local_sweep

from frozen_sweep.job.cost import job_estimate, job_probe
from frozen_sweep.job.estimate import wall_s
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.run.directory import RESULT_FILE

PARALLEL = 2


def estimated(overrides: list[str]):
    """The job's estimate from the cached probe, with nothing completed beside it (as its dry run had it)."""
    checked = job_config(common.compose_config(*overrides), overrides)
    job_fingerprint = fingerprint(checked)
    return job_estimate(checked.trainer, job_probe(checked, job_fingerprint), job_fingerprint, None, {})


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="micro")
    p.add_argument("overrides", nargs="*", help="config overrides for every job")
    args = p.parse_args()
    common.setup(args)
    freezes, epochs = ["none", "emb", "att", "ffn", "emb_att"], [4, 8, 12, 16]
    if args.quick:
        freezes, epochs = freezes[:2], [2, 4]
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [*common.task_overrides(True, tmp), f"model={args.model}", "trainer=quick", "eval.beam=2",
                "trainer.threads=1", *args.overrides]  # fmt: skip
        axes = [f"freeze={','.join(freezes)}", f"trainer.max_epochs={','.join(map(str, epochs))}",
                f"hydra.launcher.max_parallel={PARALLEL}"]  # fmt: skip
        sweep = Path(tmp) / "sweep"
        probes_s = local_sweep(sweep, [*jobs, *axes, "dry_run=true"])
        wall = local_sweep(sweep, [*jobs, *axes])
        rows, train_errors, job_errors, estimates = [], [], [], []
        for path in sorted(sweep.rglob(RESULT_FILE)):
            record = json.loads(path.read_text())
            attempt = json.loads((path.parent / "attempts.json").read_text())[-1]
            measured_job = attempt["ended"] - attempt["started"]
            cost = estimated(record["overrides"])
            train = cost.train_s + cost.validation_s + cost.compile_s
            train_errors.append(abs(train / record["wall_time_s"] - 1))
            job_errors.append(abs(cost.total_s / measured_job - 1))
            estimates.append(cost.total_s)
            label = " ".join(o for o in record["overrides"] if o.startswith(("freeze=", "trainer.max_epochs=")))
            rows.append([label, record["steps"], cost.updates, f"{train:.1f} s", f"{record['wall_time_s']:.1f} s",
                         f"{cost.total_s:.1f} s", f"{measured_job:.1f} s"])  # fmt: skip
    assert len(rows) == len(freezes) * len(epochs), f"{len(rows)} results"
    common.table(["job", "updates", "estimated", "train+valid est.", "measured", "job est.", "job measured"], rows)
    print(f"{len(rows)} jobs; probes (the dry run) {probes_s:.1f} s; sweep {wall:.1f} s measured, "
          f"{wall_s(estimates, PARALLEL):.1f} s estimated at {PARALLEL} at a time")
    for name, errors in (("training + validation", train_errors), ("whole job", job_errors)):
        print(f"{name}: median error {statistics.median(errors):.0%}, worst {max(errors):.0%}")
    common.verdict("median error of training + validation estimates", statistics.median(train_errors), 0.25,
                   unit="", at_most=True)  # fmt: skip
    common.verdict("median error of whole-job estimates", statistics.median(job_errors), 0.5, unit="", at_most=True)


if __name__ == "__main__":
    main()
