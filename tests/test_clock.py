"""The calibrated clock (frozen_sweep.metrics.clock): time-budgeted reservoir sweeps that compare models, not loads."""

import subprocess
import sys

import pytest

from frozen_sweep.collect import main as collect
from frozen_sweep.config import ConfigError
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from tests.conftest import compose_config
from tests.helpers.sweeps import LOCAL, record, run_sweep

# experiment=reservoir_lm at micro size on the toy corpus: two rows, a 3 s budget on a 0.5 s-per-update clock
TINY_LM = ["task=text_files", "task.kind=lm", "task.src_lang=null", "task.tgt_lang=en", "task.vocab_size=60",
           "model=lm_micro", "model.decoder_layers=3", "reservoir=none,ffn", "trainer.max_tokens=512",
           "trainer.warmup_steps=10", "trainer.validate_every_steps=2"]  # fmt: skip
BUDGET = ["trainer.max_time_s=3", "trainer.aucc_cutoff_s=3", "trainer.step_time_s=0.5"]


def reservoir_table(sweep_dir, capsys) -> str:
    assert collect([str(sweep_dir), "--claims"]) == 0
    return capsys.readouterr().out.replace(str(sweep_dir), "SWEEP")


@pytest.mark.slow
def test_time_budgeted_sweeps_give_the_same_table_quiet_and_beside_a_busy_cpu(tmp_path, toy_corpus, cache_dir, capsys):
    """Two sweeps of the same time-budgeted reservoir rows, one beside a process that keeps a core busy: on the
    calibrated clock every run makes ⌈max_time_s / step_time_s⌉ updates, so the tables (rows, AUCC, verdicts) are
    the same; the wall clock is recorded beside it."""
    data = [f"task.path={toy_corpus}", f"task.cache_dir={cache_dir}"]
    args = [LOCAL, "hydra.launcher.max_parallel=2", "experiment=reservoir_lm", *TINY_LM, *data, *BUDGET]
    quiet = run_sweep(tmp_path / "quiet", *args, timeout=600)
    assert quiet.returncode == 0, quiet.stdout
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = run_sweep(tmp_path / "busy", *args, timeout=600)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy.returncode == 0, busy.stdout
    for row in ("reservoir=none", "reservoir=ffn"):
        r = record(tmp_path / "busy", row)
        assert (r["clock"], r["steps"], r["step_time_s"], r["calibrated_time_s"]) == ("calibrated", 6, 0.5, 3.0)
        assert r["stopped_reason"] == "max_time" and r["wall_time_s"] > 0
        assert [e["calibrated_time_s"] for e in r["history"]] == [1.0, 2.0, 3.0]
    table = reservoir_table(tmp_path / "quiet", capsys)
    assert "Clock: calibrated" in table and "| LLL |" in table and "| RLR |" in table, table
    assert reservoir_table(tmp_path / "busy", capsys) == table


@pytest.mark.parametrize("experiment, rows", [
    ("reservoir_lm", {"reservoir=transformer": "transformer", "reservoir=none": "none"}),
    ("reservoir_mt", {"reservoir=conv model.encoder_layers=6": "conv_6",
                      "reservoir=ffn model.encoder_layers=4": "ffn_4"}),
])  # fmt: skip
def test_an_experiments_calibration_gives_each_row_its_own_step_time(experiment, rows):
    """The shipped calibrations: each row of the sweep picks its step time from the experiment's table; another
    row's entry is not part of a job's identity, its own is."""
    for row, key in rows.items():
        cfg = compose_config(f"experiment={experiment}", *row.split())
        assert cfg.trainer.step_time_s == cfg.trainer.step_times[key] > 0
    row, key = next(iter(rows.items()))
    other = next(k for k in compose_config(f"experiment={experiment}").trainer.step_times if k != key)

    def identity(*overrides: str) -> str:
        overrides = [f"experiment={experiment}", *row.split(), *overrides]
        return fingerprint(job_config(compose_config(*overrides), overrides))["sha256"]

    assert identity(f"trainer.step_times.{other}=9") == identity() != identity(f"trainer.step_times.{key}=9")


def test_a_row_the_calibration_lacks_is_refused_in_one_line_naming_it():
    """8 layers are not in reservoir_mt's calibration: the job is refused naming the row, the rows the table has and
    the way out, in one line (not OmegaConf's three-line interpolation error)."""
    overrides = ["experiment=reservoir_mt", "reservoir=ffn", "model.encoder_layers=8"]
    with pytest.raises(ConfigError) as refused:
        job_config(compose_config(*overrides), overrides)
    message = str(refused.value)
    assert "\n" not in message and message.startswith("trainer.step_time_s: ")
    assert "trainer.step_times.ffn_8" in message and "ffn_4, ffn_6" in message
    assert "trainer.step_time_s=null" in message
    wall = [*overrides, "trainer.step_time_s=null"]
    assert job_config(compose_config(*wall), wall).trainer.step_time_s is None
