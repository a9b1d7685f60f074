"""Layer reset and relearn: the reset, what trains, checkpoints, thresholds, config checks, a micro sweep end to end."""

import shutil
import subprocess
import sys

import pytest
import torch

from frozen_sweep.config import ConfigError
from frozen_sweep.data import load_task
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.job.runner import run_job
from frozen_sweep.run.base_run import BaseRunError, examples_to_best
from frozen_sweep.run.directory import LAST_CHECKPOINT
from frozen_sweep.run.record import RunResult
from frozen_sweep.study import relearn
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.plots import plot_tables
from frozen_sweep.tables.render import markdown
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.build import build_model
from frozen_sweep.weights.checkpoint import CheckpointError, load_checkpoint
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.reset import reset
from tests.conftest import ROOT, compose_config
from tests.helpers.jobs import result as read_result


@pytest.fixture(scope="module")
def base_run(tmp_path_factory, toy_corpus, cache_dir):
    """A finished micro run with 2 encoder + 2 decoder layers on the toy corpus."""
    overrides = [
        "task=text_files", f"task.path={toy_corpus}", "task.src_lang=es", "task.tgt_lang=en", "task.vocab_size=60",
        f"task.cache_dir={cache_dir}", "model=micro", "model.encoder_layers=2", "model.decoder_layers=2",
        "trainer=quick", "trainer.valid_bleu_sentences=20", "eval.beam=1",
    ]  # fmt: skip
    run_dir = tmp_path_factory.mktemp("base")
    run_job(compose_config(*overrides), run_dir, overrides)
    return run_dir


def relearn_overrides(base_run, cache_dir, *extra: str) -> list[str]:
    return [
        "relearn=layer", f"relearn.base_checkpoint={base_run}", "relearn.reset_layer=decoder.1",
        f"task.cache_dir={cache_dir}", "trainer=quick", "trainer.valid_bleu_sentences=20", "eval.beam=1", *extra,
    ]  # fmt: skip


def relearn_config(base_run, cache_dir, *extra: str):
    overrides = relearn_overrides(base_run, cache_dir, *extra)
    return job_config(compose_config(*overrides), overrides)


def weights(model) -> dict:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_the_job_adopts_the_base_runs_task_and_model(base_run, cache_dir):
    cfg = relearn_config(base_run, cache_dir)
    assert (cfg.task.name, cfg.model.name, cfg.model.encoder_layers) == ("text_files", "micro", 2)
    assert cfg.task.cache_dir == str(cache_dir)
    with pytest.raises(ConfigError, match="model=tiny: a relearn job takes task, model, freeze and reservoir"):
        overrides = relearn_overrides(base_run, cache_dir, "model=tiny")
        job_config(compose_config(*overrides), overrides)


def test_reset_redraws_exactly_the_layer_reproducibly(base_run, cache_dir):
    cfg = relearn_config(base_run, cache_dir)
    data = load_task(cfg.task)
    trained, model = weights(load_run(base_run).model), relearn.RelearnStudy(cfg).make_model(data)
    reset = {n for n in trained if n.startswith("decoder.layers.1.")}
    assert len(reset) == 26  # self- and cross-attention (2 × 8), FFN (4), three layer norms (6)
    for name, p in model.named_parameters():
        assert p.requires_grad == (name in reset), name
        assert torch.equal(p, trained[name]) == (name not in reset), name  # trained biases and gains ≠ 0 and 1
    again = relearn.RelearnStudy(cfg).make_model(data)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters()))
    other_seed = relearn.RelearnStudy(relearn_config(base_run, cache_dir, "seed=2")).make_model(data)
    drawn = dict(other_seed.named_parameters())
    assert not torch.equal(drawn["decoder.layers.1.ffn.fc1.weight"], model.decoder.layers[1].ffn.fc1.weight)
    initial = build_model(cfg, len(data.vocab))  # the base's own init (same seed): a reset is a new draw, not a rewind
    assert not torch.equal(initial.decoder.layers[1].ffn.fc1.weight, model.decoder.layers[1].ffn.fc1.weight)


@pytest.mark.parametrize(
    "parts, prefixes",
    [("att", ("self_attn.",)), ("cross_att", ("cross_attn.",)), ("ffn", ("ffn.",)),
     ("norms", ("self_attn_res.norm.", "cross_attn_res.norm.", "ffn_res.norm."))],
)  # fmt: skip
def test_reset_parts(base_run, cache_dir, parts, prefixes):
    cfg = relearn_config(base_run, cache_dir, f"relearn.reset_parts={parts}")
    model = relearn.RelearnStudy(cfg).make_model(load_task(cfg.task))
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and trainable == {
        n for n, _ in model.named_parameters() if n.startswith(tuple(f"decoder.layers.1.{p}" for p in prefixes))
    }


def test_neighbours_train_without_a_reset(base_run, cache_dir):
    cfg = relearn_config(base_run, cache_dir, "relearn.train_neighbours=true", "relearn.reset_parts=ffn")
    data = load_task(cfg.task)
    trained, model = weights(load_run(base_run).model), relearn.RelearnStudy(cfg).make_model(data)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {n for n in trained if n.startswith(("decoder.layers.0.", "decoder.layers.1.ffn."))}
    assert all(torch.equal(p, trained[n]) for n, p in model.named_parameters() if n.startswith("decoder.layers.0."))


def test_only_the_reset_layer_trains_and_resume_is_exact(base_run, cache_dir, tmp_path):
    cfg = relearn_config(base_run, cache_dir, "trainer.max_steps=8", "trainer.validate_every_steps=4")
    data = load_task(cfg.task)
    device = torch.device("cpu")
    interrupted = tmp_path / "interrupted"
    interrupted.mkdir()

    def keep_first_checkpoint(state) -> None:  # as if the job were killed after its first validation
        if len(state.history) == 1:
            shutil.copy(tmp_path / "straight" / LAST_CHECKPOINT, interrupted / LAST_CHECKPOINT)

    (tmp_path / "straight").mkdir()
    model = relearn.RelearnStudy(cfg).make_model(data)
    before = weights(model)
    straight = Trainer(cfg, data, model, device, tmp_path / "straight", on_validation=keep_first_checkpoint).fit()
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed == {n for n, p in model.named_parameters() if p.requires_grad}
    assert all(n.startswith("decoder.layers.1.") for n in changed)

    resumed_model = relearn.RelearnStudy(cfg).make_model(data)
    trainer = Trainer(cfg, data, resumed_model, device, interrupted)
    assert trainer.resume_if_possible() and trainer.state.step == 4
    resumed = trainer.fit()
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), resumed_model.parameters()))
    strip = lambda h: [{k: v for k, v in e.items() if k != "wall_time_s"} for e in h]  # noqa: E731
    assert strip(straight.history) == strip(resumed.history)

    from_seed = build_model(cfg, len(data.vocab))  # the seed alone cannot rebuild a relearn model: the base is lost
    reset(from_seed, cfg.relearn, cfg.seed)
    with pytest.raises(CheckpointError, match="regenerated from the seed does not match"):
        load_checkpoint(interrupted / LAST_CHECKPOINT, from_seed)


def test_a_relearn_job_loads_its_base_once(base_run, cache_dir, tmp_path, monkeypatch):
    loads = []

    def counted_load_run(path, *args):  # the real loader, counted
        loads.append(path)
        return load_run(path, *args)

    monkeypatch.setattr(relearn, "load_run", counted_load_run)
    overrides = relearn_overrides(base_run, cache_dir, "trainer.max_steps=2", "trainer.validate_every_steps=1")
    result = run_job(compose_config(*overrides), tmp_path, overrides)
    assert result.status == "completed" and result.study == "relearn" and result.test_metric is not None
    assert loads == [str(base_run)]  # training model, pre-reset validation and test model all come from one load


def test_examples_to_recover_on_hand_made_curves():
    pre = {"valid_loss": 2.0, "valid_bleu": 20.0}
    curve = [
        {"train_sentences": 0, "train_tokens": 0, "valid_loss": 4.0, "valid_bleu": 2.0},  # right after the reset
        {"train_sentences": 100, "train_tokens": 900, "valid_loss": 2.5, "valid_bleu": 15.0},
        {"train_sentences": 200, "train_tokens": 1800, "valid_loss": 2.08, "valid_bleu": 19.2},
        {"train_sentences": 300, "train_tokens": 2700, "valid_loss": 2.015, "valid_bleu": 19.7},
        {"train_sentences": 400, "train_tokens": 3600, "valid_loss": 2.03, "valid_bleu": 20.5},
    ]
    found = {(e["metric"], e["threshold"]): e for e in relearn.examples_to_recover(curve, pre, [0.01, 0.05], 1000)}
    assert {k: e["sentences"] for k, e in found.items()} == {
        ("loss", 0.01): 300, ("loss", 0.05): 200, ("bleu", 0.01): 400, ("bleu", 0.05): 200
    }  # loss ≤ 2.02 and ≤ 2.1; BLEU ≥ 19.8 and ≥ 19
    assert found["loss", 0.05]["tokens"] == 1800 and found["loss", 0.05]["fraction"] == pytest.approx(0.2)
    assert found["loss", 0.01]["target"] == pytest.approx(2.02)

    never = relearn.examples_to_recover(curve[:3], pre, [0.01], 1000)
    assert [(e["metric"], e["sentences"], e["fraction"]) for e in never] == [("loss", None, None), ("bleu", None, None)]
    harmless = relearn.examples_to_recover(curve[:1], {"valid_loss": 4.0, "valid_bleu": None}, [0.01], 1000)
    assert [(e["metric"], e["sentences"], e["fraction"]) for e in harmless] == [("loss", 0, 0.0)]  # no BLEU: LM

    result = RunResult(history=[{**point, "valid_ppl": 8.0} for point in curve[1:]])
    result.relearn = {"post_reset": curve[0], "pre_reset": pre, "thresholds": [0.01, 0.05],
                      "base_examples_to_best": {"sentences": 1000}}  # fmt: skip
    relearn.finish(result)
    assert result.relearn["recovered"] and result.relearn["budget_fraction"] == 0.4
    assert result.relearn["final"]["valid_loss"] == 2.03
    result.history = result.history[:2]
    relearn.finish(result)
    assert not result.relearn["recovered"]


def test_examples_to_best_of_a_base_record():
    history = [{"epoch": 1.0, "train_sentences": 600, "train_tokens": 5000}, {"epoch": 2.0, "train_sentences": 1200,
               "train_tokens": 10000}]  # fmt: skip
    record = {"best_epoch": 1.0, "history": history, "data": {"sizes": {"train": 600}}}
    assert examples_to_best(record) == {"sentences": 600, "tokens": 5000, "estimated": False}
    old = {**record, "best_epoch": 1.5, "history": [{"epoch": 1.5}]}  # before history counted examples
    assert examples_to_best(old) == {"sentences": 900, "tokens": None, "estimated": True}
    with pytest.raises(BaseRunError, match="no validation at best_epoch=3"):
        examples_to_best({**record, "best_epoch": 3})


@pytest.mark.parametrize(
    "extra, message",
    [
        (["relearn.reset_layer=encoder.2"], "allows encoder.0 … encoder.1"),
        (["relearn.reset_layer=encoder.-3"], r"allows encoder.0 … encoder.1 \(or -1 … -2\)"),
        (["relearn.reset_layer=middle.0"], "must be encoder.<i> or decoder.<i>"),
        (["relearn.reset_layer=encoder.0", "relearn.reset_parts=cross_att"], "only decoder layers"),
        (["relearn.thresholds=[0.01,1.5]"], "must be fractions in \\(0, 1\\)"),
        (["relearn.base_checkpoint=/nonexistent/run"], "no such directory"),
    ],
)  # fmt: skip
def test_bad_relearn_configs_name_the_key(base_run, cache_dir, extra, message):
    with pytest.raises(ConfigError, match=message):
        job_config(compose_config(*relearn_overrides(base_run, cache_dir, *extra)), [])


def test_a_layer_counted_from_the_top_is_the_same_job(base_run, cache_dir):
    last, second = (relearn_config(base_run, cache_dir, f"relearn.reset_layer={spec}") for spec in ("decoder.-1", "decoder.1"))
    assert last.relearn.reset_layer == "decoder.1"
    assert fingerprint(last)["sha256"] == fingerprint(second)["sha256"]


def test_a_base_must_be_a_finished_run(base_run, tmp_path):
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    shutil.copy(base_run / "result.json", unfinished / "result.json")
    overrides = ["relearn=layer", f"relearn.base_checkpoint={unfinished}", "relearn.reset_layer=decoder.0"]
    with pytest.raises(ConfigError, match="holds no config.yaml, checkpoint_best.pt"):
        job_config(compose_config(*overrides), [])
    with pytest.raises(ConfigError, match="relearn=layer needs relearn.base_checkpoint"):
        job_config(compose_config("relearn=layer"), [])
    with pytest.raises(ConfigError, match="read only when relearn.name=layer.* write instead: relearn=layer"):
        job_config(compose_config(f"relearn.base_checkpoint={base_run}"), [])


@pytest.mark.slow
def test_relearn_size_trains_its_bases_then_resets_their_layers_end_to_end(toy_corpus, cache_dir, tmp_path):
    """experiment=relearn_size at toy sizes, two bases of two widths trained by the same command, the narrow one with
    the LLaMA-style options; layers named from both ends (encoder.-1)."""
    sweep_dir = tmp_path / "sweep"
    base = ["experiment=relearn_size_bases", "task=text_files", f"task.path={toy_corpus}", "task.src_lang=es",
            "task.tgt_lang=en", "task.vocab_size=60", f"task.cache_dir={cache_dir}", "model=micro",
            "model.encoder_layers=2", "model.decoder_layers=2", "trainer=quick", "trainer.max_tokens=512",
            "trainer.max_steps=40", "trainer.validate_every_steps=20", "trainer.valid_bleu_sentences=20", "eval.beam=1"]
    llama = ["model.norm=rms", "model.ffn=swiglu", "model.positions=rope", "model.kv_heads=1", "model.bias=false"]
    bases = {"d32": base, "d16": [*base, "model.d_model=16", "model.ffn_dim=32", *llama]}  # the narrow one LLaMA-style
    given = [f"+bases.{name}=[" + ",".join(f'"{o}"' for o in os) + "]" for name, os in bases.items()]
    proc = subprocess.run(
        [sys.executable, "-m", "frozen_sweep", "-m", "experiment=relearn_size", *given,
         "relearn.base_checkpoint=bases.d32,bases.d16", "relearn.reset_layer=encoder.0,decoder.-1",
         f"task.cache_dir={cache_dir}", "trainer.max_tokens=512", "trainer.max_steps=6", "trainer.warmup_steps=2",
         "trainer.validate_every_steps=3", "trainer.valid_bleu_sentences=20", "eval.beam=1",
         f"hydra.sweep.dir={sweep_dir}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "2 bases to train first: bases.d32, bases.d16" in proc.stdout
    results = [read_result(d.parent) for d in sweep_dir.glob("*/result.json")]
    assert len(results) == 6 and all(r["status"] == "completed" for r in results)  # 2 bases, 2 layers of each reset
    results = [r for r in results if r["study"] == "relearn" and "model.d_model=16" not in r["relearn"]["base_run"]]
    assert sorted(f"{r['relearn']['stack']}.{r['relearn']['layer']}" for r in results) == ["decoder.1", "encoder.0"]
    for r in results:
        rl = r["relearn"]
        assert (r["status"], r["study"], r["task"], r["model"]) == ("completed", "relearn", "text_files", "micro")
        assert rl["post_reset"]["train_sentences"] == 0
        assert rl["pre_reset"]["valid_loss"] < rl["post_reset"]["valid_loss"]
        assert [e["step"] for e in r["history"]] == [3, 6] and rl["final"]["train_sentences"] > 0
        assert len(rl["examples_to_recover"]) == 4 and isinstance(rl["recovered"], bool)
        assert r["test_metric"] is not None and 0 < r["trainable_ratio"] < 0.5

    runs = load_runs([str(sweep_dir)])
    tables = [t for t in build_tables(runs) if "relearn" in t.title]
    assert len(tables) == 3 and all(list(t.rows.index) == ["encoder", "decoder"] for t in tables[:2])
    text = markdown(tables[:1], runs)
    assert "| Layer | Parts |" in text and "To recover, % of base loss 1%" in text
    assert plot_tables(tables[:1], tmp_path / "recovery.png") == [tmp_path / "recovery.png"]
    assert (tmp_path / "recovery.png").stat().st_size > 0
    by_size = tables[2]  # one row per base and stack, the narrow base first
    assert "relearn by base size" in by_size.title and by_size.rows[("Base", "D")].tolist() == ["16", "16", "32", "32"]
    assert by_size.rows[("", "Layers reset")].tolist() == ["0", "1", "0", "1"]
