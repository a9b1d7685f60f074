"""Reservoir layers: placement, frozen orthogonal parameters, gradient flow and backskipping, AUCC, a run end to end."""

import json
import math

import pytest
import torch

from frozen_sweep.config import ConfigError
from frozen_sweep.config.checks import validate
from frozen_sweep.config.stack_layout import reservoir_pattern
from frozen_sweep.data import load_task
from frozen_sweep.metrics.efficiency import aucc, time_to_target
from frozen_sweep.model.reservoir import Reservoir
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.plots import plot_tables, pyplot
from frozen_sweep.tables.render import markdown
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.build import build_model
from tests.conftest import compose_config
from tests.helpers.jobs import run_cli
from tests.helpers.records import write_reservoir_run


def pattern(layers, *overrides):
    return reservoir_pattern(layers, compose_config("reservoir=transformer", *overrides).reservoir)


@pytest.mark.parametrize(
    "layers, overrides, expected",
    [
        (7, ["reservoir.count=3"], "LRLRLRL"),
        (7, ["reservoir.count=2"], "LLRLRLL"),
        (6, ["reservoir.count=2"], "LRLRLL"),
        (4, ["reservoir.count=1"], "LRLL"),  # odd space left over: the extra L goes on top
        (5, ["reservoir.count=0"], "LLLLL"),
        (6, ["reservoir.count=2", "reservoir.placement=bottom"], "RRLLLL"),
        (6, ["reservoir.count=2", "reservoir.placement=top"], "LLLLRR"),
        (5, ["reservoir.placement=pattern", "reservoir.pattern=RLLRL"], "RLLRL"),
    ],
)
def test_placement_rules(layers, overrides, expected):
    assert pattern(layers, *overrides) == expected


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["model.encoder_layers=4", "reservoir.count=3"], "cannot alternate"),
        (["model.encoder_layers=4", "reservoir.count=5", "reservoir.placement=bottom"], "must be in [0, 4]"),
        (["reservoir.placement=pattern", "reservoir.pattern=LRX"], "each L (trainable) or R"),
        (["reservoir=bigru", "reservoir.stack=decoder", "model.decoder_layers=3"], "cannot sit in a decoder"),
        (["reservoir.conv_kernel=4"], "must be odd"),
        (["task=lm_bible_en", "model=lm_micro", "model.encoder_layers=0"], "allowed: decoder"),
    ],
)
def test_bad_placements_name_the_key(overrides, message):
    cfg = compose_config("model=micro", "model.encoder_layers=3", "reservoir=transformer", "reservoir.count=1",
                         *overrides)  # fmt: skip
    with pytest.raises(ConfigError, match="reservoir") as error:
        validate(cfg)
    assert message in str(error.value)


@pytest.fixture
def reservoir_trainer(tmp_path, micro_overrides):
    def make(*overrides):
        cfg = compose_config(*micro_overrides, "model.encoder_layers=3", "reservoir=ffn", "reservoir.count=1",
                             *overrides)  # fmt: skip
        data = load_task(cfg.task)
        return Trainer(cfg, data, build_model(cfg, len(data.vocab)), torch.device("cpu"), tmp_path)

    return make


@pytest.mark.parametrize("kind", ["transformer", "ffn", "bigru", "conv"])
def test_reservoirs_are_frozen_orthogonal_and_never_change(reservoir_trainer, kind):
    trainer = reservoir_trainer(f"reservoir.type={kind}", "trainer.max_epochs=1")
    model = trainer.model
    assert model.encoder.pattern == "LRL" and isinstance(model.encoder.layers[1], Reservoir)
    reservoir = dict(model.encoder.layers[1].named_parameters())
    before = {name: p.detach().clone() for name, p in reservoir.items()}
    assert not any(p.requires_grad for p in reservoir.values())
    weights = {name: p for name, p in reservoir.items() if p.dim() > 1}
    assert weights and all(is_orthogonal(p) for p in weights.values()), kind
    trainer.fit()
    assert all(torch.equal(before[name], p) for name, p in reservoir.items())
    initial = build_model(trainer.cfg, len(trainer.data.vocab))
    assert not torch.equal(trainer.model.encoder.layers[0].ffn.fc1.weight,
                           initial.encoder.layers[0].ffn.fc1.weight)  # fmt: skip  # the trainable layers did train


def is_orthogonal(weight: torch.Tensor) -> bool:
    """As nn.init.orthogonal_ draws it: trailing dimensions flattened, the rows (or the columns, when there are fewer)
    orthonormal. Rectangular and 3-d weights too: ffn, bigru and conv reservoirs have no square one."""
    w = weight.flatten(1)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    return torch.allclose(gram, torch.eye(len(gram)), atol=1e-5)


def gradients_around_reservoir(trainer):
    """Gradient at the reservoir's output and input, and the trainable layer below's weight gradient."""
    model, batch = trainer.model.train(), trainer.validation.batches[0]
    seen = {}

    def record_gradient(key):  # a forward pre-hook: keep the gradient that arrives at the layer's input
        def hook(module, args):
            args[0].register_hook(lambda grad: seen.setdefault(key, grad))

        return hook

    model.encoder.layers[1].register_forward_pre_hook(record_gradient("in"))  # the reservoir's input
    model.encoder.layers[2].register_forward_pre_hook(record_gradient("out"))  # the reservoir's output
    torch.manual_seed(0)
    model(batch.src, batch.tgt_in).sum().backward()
    return seen, model.encoder.layers[0].self_attn.q_proj.weight.grad


def test_gradients_flow_through_reservoirs_or_skip_them(reservoir_trainer):
    exact, below = gradients_around_reservoir(reservoir_trainer("model.dropout=0"))
    assert below is not None and below.abs().sum() > 0  # the layer beneath learns through the reservoir
    assert not torch.allclose(exact["in"], exact["out"])  # the reservoir's Jacobian is not the identity

    skipped, below_skipped = gradients_around_reservoir(reservoir_trainer("model.dropout=0", "reservoir.backskip=true"))
    assert torch.equal(skipped["in"], skipped["out"])  # backskipping: the gradient passes unchanged
    assert below_skipped is not None and not torch.allclose(below, below_skipped)
    assert torch.equal(exact["out"], skipped["out"])  # everything above the reservoir is unaffected


def test_reservoirs_with_nothing_trainable_below_record_no_graph(reservoir_trainer):
    trainer = reservoir_trainer("freeze=emb", "reservoir.placement=bottom")
    assert trainer.model.encoder.pattern == "RLL"
    batch = trainer.validation.batches[0]
    outputs = []
    trainer.model.encoder.layers[0].register_forward_hook(lambda m, args, out: outputs.append(out))
    trainer.model.train()(batch.src, batch.tgt_in).sum().backward()
    assert outputs[0].grad_fn is None  # no backward pass will ever run through it
    assert trainer.model.encoder.layers[1].ffn.fc1.weight.grad is not None


def history(*points):
    return [{"wall_time_s": t, "valid_metric": m} for t, m in points]


def test_aucc_on_hand_made_curves():
    constant = history((10, 5.0), (20, 5.0))
    assert aucc(constant, cutoff_s=20, initial=5.0) == pytest.approx(5.0)
    step = history((10, 0.0), (10, 10.0), (30, 10.0))  # nothing for 10 s, then 10
    assert aucc(step, cutoff_s=20, initial=0.0) == pytest.approx(5.0)
    ramp = history((10, 10.0))  # 0 → 10 over 10 s, then the run ended
    assert aucc(ramp, cutoff_s=5, initial=0.0) == pytest.approx(2.5)  # cut inside the curve
    assert aucc(ramp, cutoff_s=20, initial=0.0) == pytest.approx((50 + 100) / 20)  # ended before T̂: holds 10
    with pytest.raises(ValueError, match="cut-off"):
        aucc(ramp, cutoff_s=0, initial=0.0)


def test_time_to_target():
    points = history((10, 3.0), (20, 8.0), (30, 9.0))
    assert time_to_target(points, 8.0, higher_is_better=True) == 20
    assert time_to_target(points, 9.5, higher_is_better=True) is None
    assert time_to_target(history((10, 90.0), (20, 40.0)), 50.0, higher_is_better=False) == 20


def test_micro_reservoir_run_end_to_end(tmp_path, micro_overrides):
    run_dir = tmp_path / "run"
    proc = run_cli(*micro_overrides, "model.encoder_layers=3", "reservoir=conv", "reservoir.count=1",
                   "reservoir.backskip=true", "trainer.aucc_cutoff_s=1000", f"hydra.run.dir={run_dir}")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    r = json.loads((run_dir / "result.json").read_text())
    assert r["study"] == "reservoir" and r["status"] == "completed"
    assert r["reservoir"] | {"params": 0} == {
        "type": "conv", "stack": "encoder", "pattern": "LRL", "reservoir_layers": 1, "updatable_layers": 2,
        "backskip": True, "init": "orthogonal", "params": 0,
    }  # fmt: skip
    assert r["reservoir"]["params"] == r["params_total"] - r["params_trainable"] > 0
    assert r["aucc_cutoff_s"] == 1000 and 0 <= r["aucc"] <= max(h["valid_metric"] for h in r["history"])
    checkpoint = torch.load(run_dir / "checkpoint_best.pt", weights_only=False)
    assert not any(".layers.1." in name for name in checkpoint["trainable"] if name.startswith("encoder"))
    assert math.isfinite(r["test_metric"])


def test_reservoir_table_and_aucc_plot(tmp_path):
    root = tmp_path / "reservoir_mt"
    write_reservoir_run(root, "base", "LLLL", "none", best=20, reach_s=80)
    write_reservoir_run(root, "base2", "LLLL", "none", best=22, reach_s=80, seed=2)
    write_reservoir_run(root, "transformer", "LRLR", "transformer", best=21, reach_s=40)
    write_reservoir_run(root, "ffn", "LRLR", "ffn", best=16, reach_s=40, backskip=True)  # never reaches 90% of 22
    write_reservoir_run(root, "deep", "LRLRLL", "ffn", best=30, reach_s=40, updates=80)  # no all-trainable depth 6
    runs = load_runs([str(root)])
    (table,) = build_tables(runs)
    at_40 = "BLEU @ 40 updates"  # the last update all runs validated at: the deep run's second validation
    rows = table.rows.droplevel(0, axis=1).set_index("Pattern")[["BLEU", at_40, "AUCC", "Time to 90%"]]
    # AUCC over T̂ = 100 s of a line from 0 to `best` at `reach_s`, then flat: best · (1 - reach_s / 200)
    assert rows.to_dict("index") == {
        "LLLL": {"BLEU": "20.0 ± 1.4", at_40: "21.0", "AUCC": "12.6", "Time to 90%": "1.3 min"},
        "LRLR": {"BLEU": "20.0", at_40: "21.0", "AUCC": "16.8", "Time to 90%": "0.7 min"},
        "LRLR (backskip)": {"BLEU": "15.0", at_40: "16.0", "AUCC": "12.8", "Time to 90%": "–"},
        "LRLRLL": {"BLEU": "29.0", at_40: "15.0", "AUCC": "24.0", "Time to 90%": "–"},
    }
    text = markdown([table], runs)
    assert "T̂ = 100 s" in text and "| Updatable | Reservoir | Type |" in text and f"{at_40}: validation BLEU" in text
    plot_tables([table], tmp_path / "aucc.png")
    assert (tmp_path / "aucc.png").stat().st_size > 10_000


def test_the_aucc_plot_draws_the_calibrated_clock_when_every_run_counted_on_it(tmp_path, monkeypatch):
    """Runs on the calibrated clock are drawn at updates × their step time, whatever their wall time; one run on the
    wall clock puts the whole figure back on it."""
    root = tmp_path / "reservoir_mt"
    write_reservoir_run(root, "base", "LLLL", "none", best=20, reach_s=80, step_time_s=0.5)
    write_reservoir_run(root, "ffn", "LRLR", "ffn", best=21, reach_s=40, step_time_s=0.25)
    plt = pyplot()
    monkeypatch.setattr(plt, "close", lambda fig: None)  # keep the figure to look at it

    def drawn(root) -> tuple[str, list[list[float]]]:
        (table,) = build_tables(load_runs([str(root)]))
        plot_tables([table], tmp_path / "aucc.png")
        ax = plt.gcf().axes[0]
        runs = [list(line.get_xdata() * 60) for line in ax.lines if not line.get_label().startswith("_")]
        plt.close(plt.gcf())
        return ax.get_xlabel(), runs

    label, runs = drawn(root)
    assert label.startswith("calibrated time (min)")
    assert sorted(runs) == [[2.5, 5.0, 7.5, 10.0], [5.0, 10.0, 15.0, 20.0]]  # updates 10..40 × 0.25 s and × 0.5 s
    write_reservoir_run(root, "wall", "LRLR", "transformer", best=21, reach_s=40)
    label, runs = drawn(root)
    assert label.startswith("wall-clock time (min)") and [10.0, 20.0, 30.0, 40.0] in runs
