"""Reset and relearn from a pretrained decoder (relearn.base_checkpoint=a save_pretrained directory): the job adopts
the checkpoint's model and tokenizer, its identity holds the checkpoint's files, what cannot be a base is refused in
one line, and experiment=relearn_pretrained_tiny sweeps two sizes × two layers in one command into the recovery
tables, against each checkpoint's own validation loss before the reset."""

import subprocess
import sys

import pytest
from safetensors.torch import load_file, save_file

from frozen_sweep.config import ConfigError
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.plots import plot_tables
from frozen_sweep.tables.render import markdown
from frozen_sweep.tables.runs import load_runs
from tests.conftest import ROOT, compose_config
from tests.helpers.checkpoints import bpe_tokenizer, save_checkpoint
from tests.helpers.jobs import result as read_result

pytest.importorskip("transformers")

WIDTHS = {"d32": 32, "d64": 64}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict:
    """Two tiny GPT-NeoX checkpoints of one family, two widths, with Pythia's kind of tokenizer (no bos)."""
    root, tokenizer = tmp_path_factory.mktemp("checkpoints"), bpe_tokenizer("gpt_neox")
    for name, width in WIDTHS.items():
        save_checkpoint(root / name, tokenizer, "GPTNeoX", hidden_size=width, intermediate_size=2 * width)
    save_checkpoint(root / "bert", bpe_tokenizer("bert"), "Bert")
    return {name: root / name for name in [*WIDTHS, "bert"]}


def relearn_config(base, cache_dir, *extra: str):
    overrides = ["experiment=relearn_pretrained_tiny", f"relearn.base_checkpoint={base}",
                 "relearn.reset_layer=decoder.-1", f"task.cache_dir={cache_dir}", *extra]  # fmt: skip
    return job_config(compose_config(*overrides), overrides)


def test_the_job_adopts_the_checkpoints_model_and_tokenizer_and_its_files_are_its_identity(checkpoints, cache_dir,
                                                                                          tmp_path):  # fmt: skip
    cfg = relearn_config(checkpoints["d32"], cache_dir)
    assert (cfg.model.name, cfg.model.d_model, cfg.model.decoder_layers, cfg.model.parallel) == (
        "GPTNeoXForCausalLM", 32, 2, True)  # fmt: skip
    assert cfg.task.vocab == str(checkpoints["d32"]) and cfg.relearn.reset_layer == "decoder.1"
    changed = tmp_path / "copy"
    changed.mkdir()
    for f in checkpoints["d32"].iterdir():
        (changed / f.name).write_bytes(f.read_bytes())
    before = fingerprint(relearn_config(changed, cache_dir))
    tensors = load_file(changed / "model.safetensors")
    tensors["gpt_neox.final_layer_norm.bias"] += 1  # the same config and tokenizer, other weights: another job
    save_file(tensors, changed / "model.safetensors", metadata={"format": "pt"})
    after = fingerprint(relearn_config(changed, cache_dir))
    assert (after["config"], after["data"]) == (before["config"], before["data"])
    assert after["sha256"] != before["sha256"]


@pytest.mark.parametrize("case, extra, message", [
    ("bert", [], "BertForMaskedLM is an encoder; a pretrained relearn base is a decoder"),
    ("d32", ["model=lm_micro"], "model=lm_micro: a relearn job from a pretrained checkpoint takes its model from it"),
    ("d32", ["relearn.reset_layer=decoder.2"], r"relearn.reset_layer=decoder.2: the base model .* allows decoder.0"),
    ("d32", ["task=mlm_bible_en"], "task.kind=mlm: a pretrained decoder re-trains as a language model"),
])  # fmt: skip
def test_what_cannot_be_a_pretrained_base_is_refused_in_one_line(checkpoints, cache_dir, case, extra, message):
    with pytest.raises(ConfigError, match=message):
        relearn_config(checkpoints[case], cache_dir, *extra)


@pytest.mark.slow
def test_relearn_pretrained_tiny_resets_two_sizes_in_one_command_into_the_recovery_tables(checkpoints, cache_dir,
                                                                                         tmp_path):  # fmt: skip
    sweep_dir = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "frozen_sweep", "-m", "experiment=relearn_pretrained_tiny",
         f"relearn.base_checkpoint={checkpoints['d32']},{checkpoints['d64']}", f"task.cache_dir={cache_dir}",
         "trainer.max_steps=6", "trainer.validate_every_steps=3", f"hydra.sweep.dir={sweep_dir}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = [read_result(d.parent) for d in sweep_dir.glob("*/result.json")]
    assert len(results) == 4 and all(r["status"] == "completed" for r in results)  # 2 sizes × the bottom and top layer
    pre = {}
    for r in results:
        rl = r["relearn"]
        assert (r["study"], r["task"], r["model"]) == ("relearn", "lm_bible_en", "GPTNeoXForCausalLM")
        assert rl["base_checkpoint"]["architecture"] == "GPTNeoXForCausalLM" and rl["base_examples_to_best"] is None
        assert rl["post_reset"]["valid_loss"] != rl["pre_reset"]["valid_loss"]
        assert [e["step"] for e in r["history"]] == [3, 6] and rl["final"]["train_sentences"] > 0
        assert all(e["fraction"] is None for e in rl["examples_to_recover"]) and rl["budget_fraction"] is None
        pre.setdefault(rl["base_run"], set()).add(rl["pre_reset"]["valid_loss"])
    assert all(len(losses) == 1 for losses in pre.values())  # the checkpoint's own, whichever layer is then reset

    runs = load_runs([str(sweep_dir)])
    tables = [t for t in build_tables(runs) if "relearn" in t.title]
    assert len(tables) == 3  # one per checkpoint, and one by size
    text = markdown(tables[:1], runs)
    assert "| Layer | Parts |" in text and "To recover, training sentences loss 1%" in text
    assert "the pretrained GPTNeoXForCausalLM" in text
    assert plot_tables(tables[:1], tmp_path / "recovery.png") == [tmp_path / "recovery.png"]
    by_size = tables[2]
    assert "relearn by base size" in by_size.title and by_size.rows[("Base", "D")].tolist() == ["32", "64"]
    assert by_size.rows[("", "Layers reset")].tolist() == ["0, 1", "0, 1"]
