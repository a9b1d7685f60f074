"""A job's identity: directory names, fingerprints, budgets, unknown keys, data checks and the one-runner lock."""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest
import torch
from omegaconf import OmegaConf

from frozen_sweep.config import ConfigError
from frozen_sweep.job.fingerprint import FINGERPRINT_RECIPE, digest, fingerprint, fingerprint_recipe
from frozen_sweep.job.job_config import job_config
from frozen_sweep.run.directory import (
    RESULT_FILE,
    FingerprintMismatch,
    dirname,
    is_completed,
    previous_record,
    read_record,
    result_of,
    write_result,
)
from frozen_sweep.run.lock import JobAlreadyRunning, exclusive_run, live_runner
from frozen_sweep.run.record import RunResult
from frozen_sweep.system.files import write_atomic, write_json_atomic  # fmt: skip
from frozen_sweep.system.kernels import machine
from tests.conftest import ROOT, compose_config


def checked(*overrides: str):
    return job_config(compose_config(*overrides), list(overrides))


def test_directory_names_are_injective_and_readable():
    a, b = dirname("task.path=/data/x_y/z"), dirname("task.path=/data/x/y_z")
    assert a != b and "/" not in a + b
    assert a == "task.path=%2Fdata%2Fx_y%2Fz"
    assert dirname("task.path=/a%2Fb") != dirname("task.path=/a/b")  # a literal %2F stays distinct
    long = [dirname(f"model.d_model=64,task.path=/{'x' * 300}{i}") for i in range(2)]
    assert long[0] != long[1] and all(len(n) <= 200 for n in long)
    assert dirname("") == "default"


def test_a_bases_override_list_is_named_by_its_key_and_a_hash_of_the_list():
    """A fine-tuning job's directory stays readable: its base's overrides are named by the base's key."""
    base = 'bases.regular=["experiment=finetune_bases","reservoir=none","model=mlm_micro","task.path=/d/x,y"]'
    name = dirname(f"{base},freeze=emb,seed=1")
    assert re.fullmatch(r"bases\.regular=\[…[0-9a-f]{12}\],freeze=emb,seed=1", name), name
    assert dirname(f"{base.replace('none', 'ffn')},freeze=emb,seed=1") != name  # another base, another directory
    assert dirname(f"+{base},seed=1").startswith("+bases.regular=[…")
    assert dirname("freeze=[emb,ffn],seed=1") == "freeze=[emb,ffn],seed=1"  # other lists as they are


def test_fingerprint_covers_what_changes_the_result_and_nothing_else(micro_overrides, toy_corpus, tmp_path):
    base = fingerprint(checked(*micro_overrides, "trainer.threads=1"))
    neutral = fingerprint(checked(*micro_overrides, "trainer.threads=1", "name=elsewhere", "trainer.progress=true"))
    assert neutral["sha256"] == base["sha256"]
    micro_overrides = [*micro_overrides, "trainer.threads=1"]
    moved = tmp_path / "moved"
    shutil.copytree(toy_corpus, moved)
    at_new_path = [o if not o.startswith("task.path=") else f"task.path={moved}" for o in micro_overrides]
    assert fingerprint(checked(*at_new_path))["sha256"] == base["sha256"]  # same content elsewhere: same data
    (moved / "train.en").write_text((moved / "train.en").read_text().replace("dog", "cat"))
    edited = fingerprint(checked(*at_new_path))
    assert edited["sha256"] != base["sha256"] and edited["data"]["train.en"] != base["data"]["train.en"]
    assert fingerprint(checked(*micro_overrides, "trainer.lr=0.01"))["config"]["trainer.lr"] == 0.01


def test_the_thread_count_the_cpu_kernels_and_the_precision_are_part_of_the_fingerprint(micro_overrides, monkeypatch):
    """1 and 2 threads (trainer.threads, or OMP_NUM_THREADS where it is not set), other CPU kernels and bf16 give other
    numbers, so other fingerprints; the kernels are torch's, the precision what the job trains in (trainer.amp_cpu=null
    on this CPU and what it resolves to here are one run)."""
    one, two = (fingerprint(checked(*micro_overrides, f"trainer.threads={n}")) for n in (1, 2))
    assert one["sha256"] != two["sha256"] and (one["config"]["cpu.threads"], two["config"]["cpu.threads"]) == (1, 2)
    assert one["config"]["cpu.kernels"] == torch.backends.cpu.get_cpu_capability()  # as torch runs in this process
    assert one["config"]["cpu.precision"] == "fp32" and "trainer.amp_cpu" not in one["config"]
    bf16 = fingerprint(checked(*micro_overrides, "trainer.threads=1", "trainer.amp_cpu=true"))
    assert bf16["sha256"] != one["sha256"] and bf16["config"]["cpu.precision"] == "bf16 autocast"
    native = torch.ops.mkldnn._is_mkldnn_bf16_supported()  # what oneDNN says of this CPU
    auto = fingerprint(checked(*micro_overrides, "trainer.threads=1", "trainer.amp_cpu=null"))
    assert auto["sha256"] == (bf16 if native else one)["sha256"]
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert fingerprint(checked(*micro_overrides, "trainer.threads=null"))["sha256"] == two["sha256"]
    forced_level = "avx2" if two["config"]["cpu.kernels"] != "AVX2" else "default"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", forced_level)
    forced = fingerprint(checked(*micro_overrides, "trainer.threads=2"))
    assert forced["sha256"] != two["sha256"] and forced["config"]["cpu.kernels"] == forced_level.upper()


def then_record(recipe: dict, amp_cpu, machine_text: str, cpu: dict = None, **held) -> RunResult:
    """A completed record as the code before cpu.kernels and cpu.precision wrote it: trainer.amp_cpu hashed in, its
    CPU part the threads and ATEN_CPU_CAPABILITY where set (None: from before the CPU part), made on `machine_text`."""
    kernels = os.environ.get("ATEN_CPU_CAPABILITY")
    forced = {"cpu.aten_cpu_capability": kernels} if kernels and cpu is not None else {}
    config = {**recipe["config"], "trainer.amp_cpu": amp_cpu, **(cpu or {}), **forced, **held}
    threads = (cpu or {}).get("cpu.threads", 1)
    return RunResult(status="completed", threads=threads, machine=machine_text,
                     fingerprint={"config": config, "sha256": digest({**recipe, "config": config})})  # fmt: skip


@pytest.mark.parametrize("amp_cpu", [None, False, True])
def test_records_from_before_the_kernels_and_the_precision_are_the_jobs_runs_only_on_this_cpu_in_its_precision(
    micro_overrides, tmp_path, amp_cpu
):
    """A record of the code that hashed trainer.amp_cpu (its default then null: bf16 where the CPU has it) is the
    default fp32 job's run when it was made on this CPU model and trained in fp32 here; a bf16 run never is, nor is a
    run made on another CPU (other kernels): the job stops naming what the record lacks."""
    overrides = [*micro_overrides, "trainer.threads=1"]
    job = fingerprint(checked(*overrides))
    recipe, cpu = fingerprint_recipe(checked(*overrides))
    fp32_here = amp_cpu is False or (amp_cpu is None and not torch.ops.mkldnn._is_mkldnn_bf16_supported())
    threads = {"cpu.threads": 1}
    for machine_text, cpu_part in [(machine(), threads), (machine(), None), ("Other CPU, 2 cores", threads)]:
        write_result(tmp_path, then_record(recipe, amp_cpu, machine_text, cpu_part))
        if fp32_here and machine_text == machine():
            assert previous_record(tmp_path, job, force=False)["status"] == "completed"
        else:
            with pytest.raises(FingerprintMismatch, match=r"cpu.kernels: \(absent\) → .*cpu.precision: \(absent\)"):
                previous_record(tmp_path, job, force=False)
    write_result(tmp_path, then_record(recipe, amp_cpu, machine(), None))  # from before the CPU part
    two_threads = fingerprint(checked(*micro_overrides, "trainer.threads=2"))
    with pytest.raises(FingerprintMismatch, match="cpu.threads: \\(absent\\) → 2"):
        previous_record(tmp_path, two_threads, force=False)


def test_how_a_job_compiles_is_part_of_its_fingerprint_only_when_it_compiles(micro_overrides):
    """Compiled per layer and as one step: two jobs (their floats differ in the last bits); not compiled, the scope
    changes nothing. A compiled record from before the key compiled the whole step: that job hashes without it."""
    sha = {(compiled, scope): fingerprint(checked(*micro_overrides, "trainer.threads=1", f"trainer.compile={compiled}",
                                                  f"trainer.compile_scope={scope}"))["sha256"]
           for compiled in (False, True) for scope in ("layers", "step")}  # fmt: skip
    assert sha[False, "layers"] == sha[False, "step"] and sha[True, "layers"] != sha[True, "step"]
    step = fingerprint(checked(*micro_overrides, "trainer.threads=1", "trainer.compile=true",
                               "trainer.compile_scope=step"))["config"]  # fmt: skip
    assert "trainer.compile_scope" not in step and step["trainer.compile"] is True


def test_keys_added_to_the_schema_leave_the_fingerprints_of_earlier_records_as_they_were():
    """A key added with a default that changes nothing must not change the fingerprint of a job that records of this
    recipe hold: their directories would stop the rerun of their own command as "a different config"."""
    lines = (ROOT / "tests" / "data" / "fingerprint_keys_recipe3.txt").read_text().splitlines()
    recorded = [line for line in lines if line and not line.startswith("#")]
    config = fingerprint(checked("trainer.threads=1"))["config"]
    keys = sorted(key for key in config if not key.startswith("cpu."))  # the CPU's part has a compatibility hash
    assert FINGERPRINT_RECIPE == 3, "a new recipe: list its default job's keys in tests/data/ for the next change"
    assert keys == recorded, (
        f"keys not in recipe-3 records: {sorted(set(keys) - set(recorded))}, gone: {sorted(set(recorded) - set(keys))}"
        ": give a new key's default in LATER_DEFAULTS (frozen_sweep/job/fingerprint.py) or bump FINGERPRINT_RECIPE")


def test_records_from_while_the_fingerprint_held_a_later_default_are_still_the_jobs_runs(micro_overrides, tmp_path):
    overrides = [*micro_overrides, "trainer.threads=1"]
    job = fingerprint(checked(*overrides))
    recipe, cpu = fingerprint_recipe(checked(*overrides))
    write_result(tmp_path, then_record(recipe, False, machine(), {"cpu.threads": 1}, **{"trainer.step_time_s": None}))
    assert previous_record(tmp_path, job, force=False)["status"] == "completed"
    with pytest.raises(FingerprintMismatch, match="seed: 1 → 2"):
        previous_record(tmp_path, fingerprint(checked(*overrides, "seed=2")), force=False)


def test_a_record_of_another_config_is_never_reused(micro_overrides, tmp_path):
    old = fingerprint(checked(*micro_overrides))
    write_result(tmp_path, RunResult(status="completed", fingerprint=old))
    assert previous_record(tmp_path, old, force=False)["status"] == "completed"
    new = fingerprint(checked(*micro_overrides, "trainer.lr=0.01", "model.heads=4"))
    with pytest.raises(FingerprintMismatch) as error:
        previous_record(tmp_path, new, force=False)
    message = str(error.value)
    assert "completed run of a different config" in message and "trainer.lr: 0.003 → 0.01" in message
    assert "model.heads: 2 → 4" in message and "force=true" in message and "name=" in message
    assert previous_record(tmp_path, new, force=True)["status"] == "completed"  # force: the job replaces it
    write_result(tmp_path, RunResult(status="completed"))  # a record from before fingerprints: reused as before
    assert previous_record(tmp_path, new, force=False)["status"] == "completed"
    # ... unless the config.yaml it ran with says otherwise, on the keys both versions know
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(checked(*micro_overrides)))
    with pytest.raises(FingerprintMismatch, match="trainer.lr: 0.003 → 0.01"):
        previous_record(tmp_path, new, force=False)
    saved = OmegaConf.to_container(checked(*micro_overrides, "trainer.lr=0.01", "model.heads=4"))
    del saved["trainer"]["loggers"]  # a key this version added: it cannot be compared
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(saved))
    assert previous_record(tmp_path, new, force=False)["status"] == "completed"


def test_budgets_given_on_the_command_line_replace_the_configured_ones():
    default = checked().trainer
    assert (default.max_epochs, default.max_steps, default.max_time_s) == (100, None, 420)
    steps = checked("trainer.max_steps=400").trainer
    assert (steps.max_epochs, steps.max_steps, steps.max_time_s) == (None, 400, None)
    both = checked("trainer.max_epochs=3", "trainer.max_time_s=60").trainer
    assert (both.max_epochs, both.max_steps, both.max_time_s) == (3, None, 60)
    experiment = checked("experiment=reservoir_mt").trainer  # an experiment's budgets stay as it sets them
    assert (experiment.max_epochs, experiment.max_time_s) == (100, 240)
    with pytest.raises(ConfigError, match="trainer.max_steps=0: must be > 0"):
        checked("trainer.max_steps=0")


@pytest.mark.parametrize(
    "override, words",
    [("+trainer.lrr=0.1", ["trainer.lrr", "no such key", "lr,"]), ("+seeed=2", ["seeed", "seed"]),
     ("+freeze.att.frozn=true", ["freeze.att.frozn", "frozen"])],
)  # fmt: skip
def test_keys_the_schema_does_not_know_are_rejected_even_with_a_plus(override, words):
    with pytest.raises(ConfigError) as error:
        checked(override)
    assert all(word in str(error.value) for word in words)
    checked("+task.modules.de=germanModule")  # a free-form mapping takes new keys


def test_missing_data_files_are_config_errors(micro_overrides, tmp_path):
    (tmp_path / "train.es").write_text("hola\n")
    overrides = [o if not o.startswith("task.path=") else f"task.path={tmp_path}" for o in micro_overrides]
    with pytest.raises(ConfigError) as error:
        fingerprint(checked(*overrides))
    assert f"task.path={tmp_path}" in str(error.value) and str(tmp_path / "train.en") in str(error.value)
    fingerprint(checked("task.sword_dir=/nonexistent/sword"))  # the embedded corpus ships in the package
    with pytest.raises(ConfigError, match="task.sword_dir"):  # any other module is read from task.sword_dir
        fingerprint(checked("task.sword_dir=/nonexistent/sword", "task.modules.en=engWEB"))


HOLD_LOCK = """
import sys, time
from frozen_sweep.run.lock import exclusive_run
with exclusive_run(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(60)
"""


def test_one_runner_per_directory_until_it_dies(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert live_runner(tmp_path)["pid"] == holder.pid
        with pytest.raises(JobAlreadyRunning, match=f"already being run by pid {holder.pid} on .*kill -INT {holder.pid}"):
            with exclusive_run(tmp_path):
                pass
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    deadline = time.time() + 10
    while live_runner(tmp_path) and time.time() < deadline:  # the kernel drops a dead process's lock
        time.sleep(0.05)
    assert live_runner(tmp_path) is None
    with exclusive_run(tmp_path), exclusive_run(tmp_path):  # re-entrant: a launcher's task, then its job
        assert live_runner(tmp_path)["pid"] == os.getpid()
    assert live_runner(tmp_path) is None


def test_files_are_replaced_whole_or_not_at_all(tmp_path):
    path = tmp_path / "record.json"
    write_json_atomic(path, {"status": "running"})

    def dies_half_way(f):
        f.write(b'{"status": "compl')
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):  # the old file stays, and no temporary one is left behind
        write_atomic(path, dies_half_way)
    assert json.loads(path.read_text()) == {"status": "running"}
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # readable by the other users of a shared outputs/ folder


def test_a_record_becomes_a_result_of_this_version(tmp_path):
    assert read_record(tmp_path) is None and not is_completed(None)
    (tmp_path / RESULT_FILE).write_text('{"status": "completed", "tas')  # torn: no record
    assert read_record(tmp_path) is None
    write_result(tmp_path, RunResult(status="completed", test_metric=12.5))
    record = {**read_record(tmp_path), "field_of_a_later_version": 1}
    assert is_completed(record) and not is_completed({**record, "status": "failed"})
    assert result_of(record).test_metric == 12.5 and result_of(record).updated_at == record["updated_at"]
