"""Data-parallel jobs on the CPU: 2 gloo ranks that the job spawns (real configs, micro model; the LLaMA-style
options on here, the 2017 block in the SLURM job). One scenario, to start few processes: a 2-rank job whose rank 1 is
killed with kill -9 fails, naming it; run again, it resumes and ends with the parameters of an uninterrupted 2-rank
job, of one process accumulating 2 batches per update, and of one process stepping on the union of the 2 ranks'
batches."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from frozen_sweep.data import load_task
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.job.runner import run_job
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.train.updates import TooFewBatches, rank_share, update_batches, updates_in_epoch
from frozen_sweep.weights.build import build_model
from tests.conftest import ROOT, compose_config
from tests.helpers.jobs import result
from tests.helpers.sweeps import attempts, job_dirs, record, run_sweep, wait_for

# fp32: 2 ranks, update_freq 2 and a resumed 2-rank job sum the same per-batch gradients alike: equal parameters (0.0
# measured). One padded union batch sums them in another order: after 8 Adam updates its parameters differ by ≤6e-8
# (measured; the rounding grows later: 1e-5 after 14 updates, 7e-4 after 40), so it is compared at the first
# checkpoint; a wrong split or normalisation moves them ≫1e-4. Not the keys' biases: softmax ignores them, their true
# gradient is 0, and Adam scales its rounding noise up to ±lr.
ATOL = 1e-6
ZERO_GRADIENT = "k_proj.bias"
UPDATES = 40
VALIDATE_EVERY = 8
KILL_BOUND_S = 30  # a killed rank ends the job within this (STOP_GRACE_S, plus start-up on a loaded machine)
# the LLaMA-style options on the micro translation model: RMSNorm, SwiGLU, rotary positions, grouped-query attention
LLAMA_OPTIONS = ["model.norm=rms", "model.ffn=swiglu", "model.positions=rope", "model.kv_heads=1", "model.bias=false"]


@pytest.fixture
def dp_overrides(micro_overrides) -> list[str]:
    """fp32 (no bf16 autocast), no dropout (a rank's masks differ from one process's), validation loss only."""
    return [*micro_overrides, "trainer.amp=false", "model.dropout=0", "trainer.valid_bleu_sentences=0", "eval.beam=1",
            f"trainer.max_steps={UPDATES}", f"trainer.validate_every_steps={VALIDATE_EVERY}"]  # fmt: skip


def trainable(run_dir: Path, name: str = "checkpoint_last.pt") -> dict[str, torch.Tensor]:
    return torch.load(run_dir / name, weights_only=False)["trainable"]


def max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a if not k.endswith(ZERO_GRADIENT))


def union_updates(tmp_path, overrides, updates: int) -> dict[str, torch.Tensor]:
    """One process, one batch per update: the union of the update's 2 batches (padded to the longer), its loss over
    all their target tokens; the trainer's pieces, not its update loop. An epoch's odd batch out is dropped."""
    cfg = compose_config(*overrides)
    data = load_task(cfg.task)
    torch.manual_seed(cfg.seed)
    trainer = Trainer(cfg, data, build_model(cfg, len(data.vocab)), torch.device("cpu"), tmp_path)
    trainer.model.train()
    done, epoch = 0, 0
    while done < updates:
        plan = trainer._plan(epoch)
        for first, second in zip(plan[0::2], plan[1::2]):
            length = max(first.length, second.length)
            batch = data.train.collate(np.concatenate([first.indices, second.indices]), length)
            trainer.optimizer.zero_grad()
            (trainer.loss(batch.src, batch.tgt_in, batch.tgt_out) / batch.n_tokens).backward()
            trainer.optimizer.step()
            trainer.scheduler.step()
            done += 1
            if done == updates:
                break
        epoch += 1
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}


def start_job(run_dir: Path, overrides: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "frozen_sweep", *overrides, f"hydra.run.dir={run_dir}"],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip


def rank_pid(log: Path, rank: int) -> int | None:
    found = re.search(rf"rank {rank} of 2: pid (\d+)", log.read_text())
    return int(found[1]) if found else None


def test_two_ranks_killed_resumed_equal_uninterrupted_ranks_update_freq_2_and_one_process_on_their_union(
    tmp_path, dp_overrides
):
    dp_overrides = [*dp_overrides, *LLAMA_OPTIONS]  # the 2017 block trains as 2 ranks in the SLURM test below
    ranks = [*dp_overrides, "trainer.devices=2"]
    killed, log = tmp_path / "killed", tmp_path / "killed.out"
    job = start_job(killed, ranks, log)
    pid = wait_for(lambda: (killed / "checkpoint_last.pt").exists() and rank_pid(log, 1), "a checkpoint of 2 ranks")
    shutil.copy(killed / "checkpoint_last.pt", tmp_path / "first.pt")  # the next one comes VALIDATE_EVERY steps later
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    job.wait(timeout=KILL_BOUND_S)
    print(f"the job ended {time.monotonic() - killed_at:.1f} s after its rank 1 was killed")
    record = result(killed)
    assert job.returncode != 0 and record["status"] == "failed", log.read_text()
    assert record["error"].startswith("RankFailed: rank 1 of 2 died: killed by SIGKILL"), record["error"]
    assert record["history"] and record["history"][-1]["step"] < UPDATES, "killed mid-training; rank 0's curve kept"

    resumed = run_job(compose_config(*ranks), killed, ranks)  # the same job run again
    assert resumed.status == "completed" and resumed.steps == UPDATES and resumed.device == "cpu × 2"
    assert resumed.history[0] == record["history"][0], "resumed: the curve up to the checkpoint (its wall times too)"
    assert (killed / "test.hyp.txt").exists()

    runs = {"whole": ranks, "accumulated": [*dp_overrides, "trainer.update_freq=2"]}
    for name, overrides in runs.items():
        assert run_job(compose_config(*overrides), tmp_path / name, overrides).status == "completed"
    # the same global batch, the same fingerprint; one batch per update is another job
    assert result(tmp_path / "whole")["fingerprint"] == result(tmp_path / "accumulated")["fingerprint"]
    assert fingerprint(job_config(compose_config(*dp_overrides), dp_overrides)) != resumed.fingerprint

    params = {name: trainable(tmp_path / name) for name in ("killed", "whole", "accumulated")}
    differences = {name: max_difference(params["whole"], params[name]) for name in ("killed", "accumulated")}
    assert torch.load(tmp_path / "first.pt", weights_only=False)["train_state"]["step"] == VALIDATE_EVERY
    union = union_updates(tmp_path / "union", dp_overrides, VALIDATE_EVERY)
    differences["union, first checkpoint"] = max_difference(trainable(tmp_path, "first.pt"), union)
    print("max |Δ| of the 2-rank job's parameters:", differences)
    assert all(difference <= ATOL for difference in differences.values()), differences


@pytest.mark.slurm
def test_a_two_task_slurm_job_trains_as_two_ranks_and_writes_one_record(slurm_cluster, tmp_path, dp_overrides):
    sweep = tmp_path / "sweep"
    proc = run_sweep(sweep, *dp_overrides, "trainer.devices=2", "trainer.max_steps=8", "hydra/launcher=slurm",
                     "hydra.launcher.tasks_per_node=2", "hydra.launcher.cpus_per_task=1",
                     "hydra.launcher.poll_interval_s=1", "seed=1")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    assert "ntasks_per_node=2" in proc.stdout and "1 completed" in proc.stdout
    (run_dir,) = job_dirs(sweep)
    r = record(sweep)
    assert r["status"] == "completed" and r["device"] == "cpu × 2" and r["steps"] == 8
    assert len(attempts(sweep)) == 1  # rank 0's: the job's one runner
    job_id = attempts(sweep)[0]["job_id"]
    assert {p.name for p in (sweep / ".submitit" / job_id).glob("*_result.pkl")} == {f"{job_id}_0_result.pkl",
                                                                                    f"{job_id}_1_result.pkl"}


def test_an_update_is_devices_x_update_freq_consecutive_batches_and_rank_r_takes_its_share():
    plan = list(range(11))  # batches of an epoch
    assert updates_in_epoch(len(plan), 4) == 2  # 2 devices × update_freq 2: batches 8-10 are dropped
    assert update_batches(plan, 1, 4) == [4, 5, 6, 7]
    assert [rank_share([4, 5, 6, 7], rank, 2) for rank in (0, 1)] == [[4, 5], [6, 7]]
    with pytest.raises(TooFewBatches, match=r"3 batches, fewer than one update takes \(trainer.devices × trainer"):
        updates_in_epoch(3, 4)
