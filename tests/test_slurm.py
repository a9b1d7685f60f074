"""The slurm launcher against a real single-node cluster (tests/slurm_cluster.py): a sweep of micro jobs in which
one job is cancelled with scancel, one is requeued with `scontrol requeue` and one is preempted (the USR2 signal
submitit handles by checkpointing and requeueing), all mid-training; then the same sweep run again. And Hydra's job
settings (working directories, names, resolvers) in SLURM jobs."""

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.sweeps import attempts, job_dir, job_dirs, read_json, record, run_own_script, run_sweep
from tests.helpers.sweeps import start_sweep, wait_for

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SLURM = ["hydra/launcher=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.poll_interval_s=1"]


def slurm_job_id(sweep_dir: Path, freeze: str) -> str:
    """The SLURM id of a job once it has started, and its directory once it has a checkpoint to resume from."""
    (started,) = wait_for(lambda: job_dirs(sweep_dir, f"freeze={freeze}"), f"freeze={freeze} to start")
    return read_json(started / "attempts.json")[0]["job_id"]


def wait_for_checkpoint(sweep_dir: Path, freeze: str) -> None:
    wait_for(lambda: (job_dir(sweep_dir, f"freeze={freeze}") / "checkpoint_last.pt").exists(), "a checkpoint")


def release_when_requeued(job_id: str) -> None:
    """SLURM holds a requeued job for ~2 minutes (its BeginTime); start it as soon as it is pending again."""
    squeue = ["squeue", "-h", "-j", job_id, "-o", "%T"]
    wait_for(lambda: subprocess.run(squeue, capture_output=True, text=True).stdout.strip() == "PENDING", "requeue")
    subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], check=True)


def resumed_at_step(sweep_dir: Path, freeze: str) -> int:
    log = (job_dir(sweep_dir, f"freeze={freeze}") / "__main__.log").read_text()
    found = re.search(r"resumed from \S+ at step (\d+)", log)
    return int(found[1]) if found else 0


def test_a_slurm_sweep_survives_scancel_resumes_requeued_jobs_and_skips_completed_ones_when_run_again(
    slurm_cluster,
    tmp_path,
    micro_overrides,
):
    args = [*micro_overrides, *SLURM, "trainer.max_epochs=40", "trainer.valid_bleu_sentences=0"]
    args.append("freeze=none,emb,ffn,att")
    sweep, output = tmp_path / "sweep", tmp_path / "out.txt"
    proc = start_sweep(sweep, *args, output=output)

    # the node has 2 CPUs: none and emb start, and each job stopped lets the next one start
    cancelled_id = slurm_job_id(sweep, "emb")
    wait_for_checkpoint(sweep, "emb")
    subprocess.run(["scancel", cancelled_id], check=True)  # SIGTERM: the job stops as on Ctrl-C, within KillWait
    requeued = slurm_job_id(sweep, "ffn")
    wait_for_checkpoint(sweep, "ffn")
    subprocess.run(["scontrol", "requeue", requeued], check=True)
    preempted = slurm_job_id(sweep, "att")
    wait_for_checkpoint(sweep, "att")
    subprocess.run(["scancel", "--signal=USR2", preempted], check=True)
    release_when_requeued(requeued)
    release_when_requeued(preempted)

    assert proc.wait(timeout=300) != 0
    out = output.read_text()
    assert "4 jobs in" in out and "3 completed, 0 skipped (completed before), 1 failed" in out, out
    assert "FAILED freeze=emb: Interrupted: stopped by SIGTERM (kill, or scancel)" in out
    cancelled = record(sweep, "freeze=emb")
    assert cancelled["status"] == "failed" and cancelled["error"].startswith("Interrupted: stopped by SIGTERM")
    assert [a.get("status") for a in attempts(sweep, "freeze=emb")] == ["interrupted"]
    steps = record(sweep, "freeze=none")["steps"]
    # each ran twice, the second time from its checkpoint, to the same end; the requeued one was stopped by SLURM's
    # SIGTERM, the preempted one exited to be requeued
    assert [a.get("status") for a in attempts(sweep, "freeze=ffn")] == ["interrupted", "completed"]
    assert [a.get("status") for a in attempts(sweep, "freeze=att")] == ["interrupted", "completed"]
    for freeze in ("ffn", "att"):
        assert resumed_at_step(sweep, freeze) > 0 and record(sweep, f"freeze={freeze}")["steps"] == steps

    started = time.time()
    again = run_sweep(sweep, *args)
    assert again.returncode == 0, again.stdout
    assert re.search(r"4 jobs: 1 to run \(. resuming from a checkpoint\), 3 already completed", again.stdout)
    assert "1 completed, 3 skipped (completed before), 0 failed" in again.stdout
    assert [len(attempts(sweep, f"freeze={f}")) for f in ("none", "ffn", "att")] == [1, 2, 2]  # not submitted
    assert record(sweep, "freeze=emb")["status"] == "completed"
    assert attempts(sweep, "freeze=emb")[-1]["started"] > started


def test_hydras_job_settings_hold_for_frozen_sweep_jobs_on_slurm(slurm_cluster, tmp_path, micro_overrides, toy_corpus):
    """In a SLURM job of a user's own script (tests/helpers/sweeps.py), its time limit set from the jobs' estimates
    (timeout_min=null): get_original_cwd and to_absolute_path give the directory the command ran in, hydra.job.chdir=true runs the job in its own directory, hydra.job.name names its log,
    hydra.sweep.subdir names its directory, and a resolver registered by the launching script resolves in the job."""
    (tmp_path / "corpus").symlink_to(toy_corpus)
    overrides = [o for o in micro_overrides if not o.startswith("task.path=")] + ["task.path=corpus"]
    proc = run_own_script(tmp_path, tmp_path / "sweep", *overrides, *SLURM, "trainer.max_steps=2", "eval.beam=1",
                          "hydra.job.name=myjob", "hydra.job.chdir=true", "hydra.sweep.subdir=${freeze.name}_s${seed}",
                          "seed=${twice:3}", "freeze=none,emb", "hydra.launcher.timeout_min=null", "estimate=true")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    limit = re.search(r"slurm: time limit (\d+) min per job \(1.5 × the longest estimate", proc.stdout)
    scripts = [p.read_text() for p in (tmp_path / "sweep" / ".submitit").rglob("*submission.sh")]
    assert limit and scripts and all(f"#SBATCH --time={limit[1]}\n" in s for s in scripts), proc.stdout  # from the estimate
    for freeze in ("none", "emb"):
        run = tmp_path / "sweep" / f"{freeze}_s6"
        assert (run / "myjob.log").exists() and read_json(run / "result.json")["status"] == "completed"
        assert read_json(run / "result.json")["seed"] == 6
        assert read_json(run / "attempts.json")[0]["job_id"]  # it ran as a SLURM job
        seen = read_json(run / "hydra_seen.json")
        assert seen == {"cwd": str(run), "original_cwd": str(tmp_path), "corpus": str(tmp_path / "corpus")}
        assert f"\n  path: {tmp_path / 'corpus'}\n" in (run / "config.yaml").read_text()  # task.path, made absolute


def test_a_slurm_sweep_trains_the_base_its_jobs_start_from_first(slurm_cluster, tmp_path, micro_overrides):
    """relearn.base_checkpoint=bases.NAME on SLURM: the base runs as a SLURM job, then the job that resets its layer."""
    base = [*micro_overrides, "model.decoder_layers=2", "trainer.max_steps=4", "eval.beam=1"]
    given = "+bases.b=[" + ",".join(f'"{o}"' for o in base) + "]"
    proc = run_sweep(tmp_path / "sweep", given, *SLURM, "relearn=layer", "relearn.base_checkpoint=bases.b",
                     "relearn.reset_layer=decoder.-1", "trainer=quick", "trainer.max_steps=2", "eval.beam=1",
                     "trainer.valid_bleu_sentences=10")  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "1 bases to train first: bases.b" in proc.stdout
    records = [read_json(p) for p in (tmp_path / "sweep").glob("*/result.json")]
    (relearn,) = [r for r in records if r["study"] == "relearn"]
    base_run = Path(relearn["relearn"]["base_run"])
    assert (relearn["status"], relearn["relearn"]["layer"]) == ("completed", 1)
    assert read_json(base_run / "result.json")["status"] == "completed"
    assert read_json(base_run / "attempts.json")[0]["job_id"]  # it ran as a SLURM job


def test_a_job_counts_as_gone_only_when_slurm_says_so_twice_and_a_failing_squeue_never_counts(
    slurm_cluster,
    tmp_path,
    monkeypatch,
):
    import submitit
    from hydra_plugins.frozen_sweep_launchers.slurm import _gone, _listed

    executor = submitit.SlurmExecutor(folder=tmp_path / "submitit")
    executor.update_parameters(cpus_per_task=1, time=5)
    job = executor.submit(time.sleep, 10)
    gone_since = {}
    # a forced sacct each look: job.state asks SLURM at growing intervals and can miss a short RUNNING spell
    wait_for(lambda: job.watcher.get_state(job.job_id, mode="force") == "RUNNING", "the job to run")
    assert not _gone(job, gone_since, confirm_after_s=0.5) and not gone_since
    wait_for(lambda: job.watcher.is_done(job.job_id, mode="force") and not _listed(job.job_id), "the job to end")
    assert not _gone(job, gone_since, confirm_after_s=0.5)  # one look is not enough: a requeue looks like this
    time.sleep(0.6)
    assert _gone(job, gone_since, confirm_after_s=0.5)

    assert not _listed("999999")  # squeue: "Invalid job id specified"
    conf = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")).read_text()
    unreachable = re.sub(r"(?m)^SlurmctldHost=.*$", "SlurmctldHost=localhost\nSlurmctldPort=1", conf)
    (tmp_path / "slurm.conf").write_text(unreachable + "\nMessageTimeout=1\n")
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    assert _listed("999999")  # no answer from the controller says nothing about the job
