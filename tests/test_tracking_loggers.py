"""trainer.loggers=[wandb] (offline) and [mlflow] (a local file store) on real micro training, read back from what
they wrote; a logger whose package is missing is refused before anything runs, naming the extra to install."""

import json
import struct
import sys
import time

import pytest
from google.protobuf.message import DecodeError

from frozen_sweep.config import ConfigError
from frozen_sweep.job.job_config import job_config
from frozen_sweep.metrics.sinks import read_metrics
from frozen_sweep.run.directory import METRICS_FILE, TRACKING_RUNS_FILE, WANDB_DIR
from tests.conftest import compose_config
from tests.helpers.training import Killed, fit, one_thread  # noqa: F401 — the fixture is autouse

STEPS = ["trainer.max_steps=8"]


def train_losses(run_dir) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in read_metrics(run_dir / METRICS_FILE) if r["event"] == "train"}


def wandb_records(path):
    """The protobuf records of a .wandb file: a 7-byte header, then LevelDB-log blocks of 32 KiB whose records each
    have a 7-byte header (crc32, length, type: 1 full, 2 first, 3 middle, 4 last)."""
    from wandb.proto import wandb_internal_pb2

    data, pos, payload = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0:
            break
        payload += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            yield wandb_internal_pb2.Record.FromString(payload)
            payload = b""


def finished_wandb_records(path, timeout_s: float = 60) -> list:
    """The records once wandb's own process has written the run's exit record: `finish()` can return before that
    process has written the last of the file (seen under pytest-xdist)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            records = list(wandb_records(path))
        except DecodeError:  # a record still being written
            records = []
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.2)


def test_wandb_offline_run_holds_the_metrics(tmp_path, micro_overrides, monkeypatch):
    pytest.importorskip("wandb", reason="wandb is not installed: pip install 'frozen_sweep[wandb]'")
    monkeypatch.setenv("WANDB_DISABLE_GIT", "true")
    fit(tmp_path, micro_overrides, *STEPS, "trainer.loggers=[jsonl,wandb]", "trainer.wandb.mode=offline", "seed=3")
    run_id = json.loads((tmp_path / TRACKING_RUNS_FILE).read_text())["wandb"]
    (run_file,) = (tmp_path / WANDB_DIR).glob(f"offline-run-*-{run_id}/run-{run_id}.wandb")
    records = finished_wandb_records(run_file)
    history, run = {}, None
    for record in records:
        if record.WhichOneof("record_type") == "history":
            items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            history.setdefault(items["_step"], {}).update(items)
        elif record.WhichOneof("record_type") == "run":
            run = record.run
    assert {step: h["train/loss"] for step, h in history.items() if "train/loss" in h} == pytest.approx(
        train_losses(tmp_path), rel=1e-6
    )
    assert "valid/bleu" in history[8] and run.project == "frozen_sweep" and run.run_group == "runs"
    assert {item.key: json.loads(item.value_json) for item in run.config.update}["seed"] == 3


def test_mlflow_file_store_holds_the_metrics_and_a_resumed_job_continues_its_run(tmp_path, micro_overrides):
    pytest.importorskip("mlflow", reason="mlflow is not installed: pip install 'frozen_sweep[mlflow]'")
    from mlflow.tracking import MlflowClient

    store = (tmp_path / "mlruns").as_uri()
    run_dir = tmp_path / "job"
    logging = ["trainer.loggers=[jsonl,mlflow]", f"trainer.mlflow.tracking_uri={store}", "name=study"]

    def kill_after_step_4(state):  # called after the checkpoint
        if state.step == 4:
            raise Killed

    with pytest.raises(Killed):
        fit(run_dir, micro_overrides, *STEPS, *logging, on_validation=kill_after_step_4)
    fit(run_dir, micro_overrides, *STEPS, *logging)
    client = MlflowClient(tracking_uri=store)
    (run,) = client.search_runs([client.get_experiment_by_name("study").experiment_id])
    assert run.info.run_name == "job" and run.data.params["model.name"] == "micro"
    logged = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "train/loss")}
    assert logged == pytest.approx(train_losses(run_dir), rel=1e-6)
    assert [m.step for m in client.get_metric_history(run.info.run_id, "valid/loss")] == [4, 8]


@pytest.mark.parametrize("logger", ["wandb", "mlflow"])
def test_a_logger_without_its_package_is_refused_naming_the_extra(micro_overrides, monkeypatch, logger):
    monkeypatch.setitem(sys.modules, logger, None)  # as if not installed: find_spec and import both fail
    cfg = compose_config(*micro_overrides, f"trainer.loggers=[jsonl,{logger}]")
    with pytest.raises(ConfigError, match=rf"trainer.loggers: {logger} needs .* pip install 'frozen_sweep\[{logger}\]'"):
        job_config(cfg, [])
