"""Metrics as they happen: metrics.jsonl and TensorBoard event files from real micro training, resume without
duplicates, and the collector's finer curves from the JSONL."""

import json
import shutil
import struct

import pandas as pd
import pytest
from tensorboardX.proto.event_pb2 import Event

from frozen_sweep.metrics.sinks import read_metrics
from frozen_sweep.run.directory import METRICS_FILE, TENSORBOARD_DIR
from frozen_sweep.tables.plots import plot_convergence, train_curves
from frozen_sweep.tables.render import Table
from tests.conftest import compose_config
from tests.helpers.training import Killed, fit, one_thread  # noqa: F401 — the fixture is autouse

SAME_RUN_KEYS = ("event", "step", "epoch", "loss", "lr", "grad_norm", "ppl", "bleu")  # not timings


def tb_events(directory) -> list[tuple[str, Event]]:
    """(file name, event) of every TFRecord in the event files (length, crc, payload, crc each)."""
    events = []
    for path in sorted(directory.glob("events.out.tfevents.*")):
        data, i = path.read_bytes(), 0
        while i < len(data):
            (n,) = struct.unpack_from("<Q", data, i)
            events.append((path.name, Event.FromString(data[i + 12 : i + 12 + n])))
            i += 12 + n + 4
    return events


def comparable(records: list[dict]) -> list[tuple]:
    return [tuple(r.get(k) for k in SAME_RUN_KEYS) for r in records]


def test_records_every_n_steps_and_at_each_validation(tmp_path, micro_overrides):
    trainer = fit(tmp_path, micro_overrides, "trainer.max_steps=10")
    records = read_metrics(tmp_path / METRICS_FILE)
    train = [r for r in records if r["event"] == "train"]
    valid = [r for r in records if r["event"] == "valid"]
    assert [r["step"] for r in train] == [2, 4, 6, 8, 10]
    assert set(train[0]) == {"event", "step", "epoch", "wall_time_s", "loss", "lr", "tokens_per_s", "grad_norm"}
    assert all(r["loss"] > 0 and r["lr"] > 0 and r["tokens_per_s"] > 0 and r["grad_norm"] > 0 for r in train)
    assert train[0]["lr"] < train[-1]["lr"]  # warmup
    history = trainer.state.history
    assert [(r["step"], r["epoch"], r["wall_time_s"], r["loss"], r["ppl"], r["bleu"]) for r in valid] == [
        (h["step"], h["epoch"], h["wall_time_s"], h["valid_loss"], h["valid_ppl"], h["valid_bleu"]) for h in history
    ]
    assert all(a["wall_time_s"] <= b["wall_time_s"] for a, b in zip(records, records[1:]))

    events = [e for _, e in tb_events(tmp_path / TENSORBOARD_DIR) if e.HasField("summary")]
    scalars = {(v.tag, e.step): v.simple_value for e in events for v in e.summary.value}
    for r in train:
        assert scalars["train/loss", r["step"]] == pytest.approx(r["loss"], rel=1e-6)
        assert scalars["train/grad_norm", r["step"]] == pytest.approx(r["grad_norm"], rel=1e-6)
    assert scalars["valid/bleu", 8] == pytest.approx(history[1]["valid_bleu"], rel=1e-6)


def test_resumed_run_appends_without_duplicates(tmp_path, micro_overrides):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    fit(straight, micro_overrides, "trainer.max_steps=12")

    def kill_after_step_8(state):  # called after the checkpoint
        if state.step == 8:
            raise Killed

    with pytest.raises(Killed):
        fit(resumed, micro_overrides, "trainer.max_steps=12", on_validation=kill_after_step_8)
    with (resumed / METRICS_FILE).open("a") as f:  # what the lost steps logged after the checkpoint, and a torn line
        f.write(json.dumps({"event": "train", "step": 10, "loss": 99.0}) + "\n" + '{"event": "tr')
    fit(resumed, micro_overrides, "trainer.max_steps=12")
    records = read_metrics(resumed / METRICS_FILE)
    assert comparable(records) == comparable(read_metrics(straight / METRICS_FILE))  # CPU resume is exact
    assert [r["step"] for r in records if r["event"] == "train"] == [2, 4, 6, 8, 10, 12]
    starts = [(name, e.step) for name, e in tb_events(resumed / TENSORBOARD_DIR) if e.HasField("session_log")]
    assert sorted(step for _, step in starts) == [1, 9]  # TensorBoard hides what the first file holds from step 9


def test_no_loggers_write_nothing(tmp_path, micro_overrides):
    fit(tmp_path, micro_overrides, "trainer.max_steps=4", "trainer.loggers=[]")
    assert not (tmp_path / METRICS_FILE).exists() and not (tmp_path / TENSORBOARD_DIR).exists()


def test_unknown_logger_is_rejected(micro_overrides):
    with pytest.raises(Exception, match=r"trainer.loggers=\[comet\]") as error:
        compose_config(*micro_overrides, "trainer.loggers=[comet]")
    assert "Invalid value 'comet', expected one of [jsonl, tensorboard, wandb, mlflow]" in str(error.value.__cause__)


def test_plots_use_the_jsonl_train_curve(tmp_path, micro_overrides):
    history = fit(tmp_path / "run", micro_overrides, "trainer.max_steps=6").state.history
    shutil.copytree(tmp_path / "run", tmp_path / "copy")
    curves = train_curves([tmp_path / "run", tmp_path / "copy", tmp_path / "absent"])
    assert sorted(curves) == [tmp_path / "copy", tmp_path / "run"]
    assert list(curves[tmp_path / "run"].step) == [2, 4, 6]

    runs = pd.DataFrame({"path": [str(tmp_path / "run" / "result.json")], "label": ["(0)"], "history": [history],
                         "record": [{}]})
    plot_convergence(Table("micro", "bleu", [], runs, []), tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 10_000
