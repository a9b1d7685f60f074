"""trainer.compile=true (torch.compile, dynamic shapes; meant for CUDA), on the CPU: a compiled job learns as eager
does, each layer compiles once for its whole stack, and validation and decoding never compile."""

import pytest
import torch
from torch._dynamo.utils import counters

from frozen_sweep.config import ConfigError
from frozen_sweep.job.runner import run_job
from tests.conftest import compose_config
from tests.test_train import make_trainer

SCALAR_KERNELS = torch.backends.cpu.get_cpu_capability() == "DEFAULT"


def compiled_graphs() -> int:
    return counters["stats"]["unique_graphs"]


def fresh_compiler() -> None:
    torch._dynamo.reset()
    counters.clear()


@pytest.mark.slow
def test_a_compiled_jobs_curve_matches_eagers_in_either_scope(tmp_path, micro_overrides):
    """Per layer (the default; in one process, and on 2 data-parallel ranks, whose DDP wraps the compiled layers) and
    as one graph of the whole step: a real job's validation curve and test score are eager's, within float
    reassociation (fp32, no dropout: the same computation). Per layer, three graphs serve the whole
    job (the encoder's layer, the decoder's, the loss head): its validations and test decoding ran eager. With torch's
    scalar CPU kernels forced, whose C++ its compiler cannot build, compiling is refused with an error that says so."""
    if SCALAR_KERNELS:
        with pytest.raises(ConfigError, match="trainer.compile=true: .* ATEN_CPU_CAPABILITY=default .* allowed here"):
            make_trainer(tmp_path, micro_overrides, "trainer.compile=true")
        return
    curves, tests, graphs = {}, {}, {}
    # every job's update: 2 batches, accumulated in one process or one each on 2 data-parallel ranks (the same sums)
    for scope, batches in [("eager", "trainer.update_freq=2"), ("layers", "trainer.update_freq=2"),
                           ("step", "trainer.update_freq=2"), ("layers, 2 ranks", "trainer.devices=2")]:  # fmt: skip
        fresh_compiler()
        compiling = ["trainer.compile=true", f"trainer.compile_scope={scope.split(',')[0]}"] if scope != "eager" else []
        overrides = [*compiling, batches, "trainer.amp=false", "model.dropout=0", "trainer.max_steps=12",
                     "trainer.validate_every_steps=4", "trainer.valid_bleu_sentences=4", "eval.beam=2"]  # fmt: skip
        result = run_job(compose_config(*micro_overrides, *overrides), tmp_path / scope, overrides)
        curves[scope] = [entry["valid_loss"] for entry in result.history]
        tests[scope] = result.test_loss
        graphs[scope] = compiled_graphs()
    assert len(curves["layers"]) == 3 and curves["layers"][-1] < curves["layers"][0]  # it learnt
    for scope in ("layers", "step", "layers, 2 ranks"):
        assert curves[scope] == pytest.approx(curves["eager"], rel=1e-4), scope
        assert tests[scope] == pytest.approx(tests["eager"], rel=1e-4), scope
    # the ranks compiled in their own processes
    assert graphs == {"eager": 0, "layers": 3, "step": graphs["step"], "layers, 2 ranks": 0} and graphs["step"] >= 1


@pytest.mark.slow
@pytest.mark.skipif(SCALAR_KERNELS, reason="the compiler cannot build CPU code with scalar kernels")
def test_per_layer_compiles_as_many_graphs_for_a_deep_model_as_for_a_shallow_one(tmp_path, micro_overrides):
    """One graph per kind of layer, not per layer: 1 or 3 layers a stack, 3 graphs; a frozen reservoir among the
    encoder's trainable layers (a transformer layer without trainable parameters) adds one recompile. A validation
    (its loss, and greedy decoding for BLEU) compiles nothing."""
    graphs = {}
    for name, extra in [("1 layer", ["model.encoder_layers=1", "model.decoder_layers=1"]),
                        ("3 layers", ["model.encoder_layers=3", "model.decoder_layers=3"]),
                        ("3 layers, a reservoir", ["model.encoder_layers=3", "model.decoder_layers=3",
                                                   "reservoir=transformer", "reservoir.count=1"])]:  # fmt: skip
        fresh_compiler()
        (tmp_path / name).mkdir()
        trainer = make_trainer(tmp_path / name, micro_overrides, "trainer.compile=true", *extra)
        trainer._train_step(trainer._collate(trainer._plan(1)[0]))
        graphs[name] = compiled_graphs()
        trainer.validation.scores(trainer.model)  # loss and greedy decoding: eager, no graph compiled
        assert compiled_graphs() == graphs[name], name
    assert graphs == {"1 layer": 3, "3 layers": 3, "3 layers, a reservoir": 4}
