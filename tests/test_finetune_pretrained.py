"""Fine-tuning from a pretrained encoder (finetune.base_checkpoint=a save_pretrained directory): the job adopts the
checkpoint's model and tokenizer, freezes the layers finetune.frozen_layers marks at their pretrained values,
re-draws the top finetune.reinit_top layers, keeps the freeze pattern's components pretrained or re-draws them
(finetune.freeze_from), holds the checkpoint's files in its identity, refuses what cannot be a base in one line; and
experiment=finetune_pretrained_glue_tiny sweeps layer patterns × GLUE tasks in one command into the fine-tuning
tables."""

import re

import pytest
import torch
from safetensors.torch import load_file, save_file

from frozen_sweep.config import ConfigError
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.render import markdown
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.weights.build import build_model
from frozen_sweep.weights.fine_tuned import embedding_rows, fine_tuned_model
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.pretrained import load_pretrained
from tests.conftest import compose_config
from tests.helpers.checkpoints import bpe_tokenizer, save_checkpoint
from tests.helpers.hub_layout import cards, example_columns, write_hub_dataset
from tests.helpers.jobs import result as read_result
from tests.helpers.jobs import run_cli
from tests.helpers.sweeps import run_sweep

pytest.importorskip("transformers")

GLUE = ("sst2", "rte")


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict:
    """A tiny BERT (two layers) and a tiny GPT-NeoX, each with its own tokenizer, and GLUE's SST-2 and RTE in the
    hub's layout."""
    root = tmp_path_factory.mktemp("bases")
    save_checkpoint(root / "bert", bpe_tokenizer("bert"), "Bert")
    save_checkpoint(root / "neox", bpe_tokenizer("gpt_neox"), "GPTNeoX")
    features = {config: cards()["nyu-mll/glue", config] for config in GLUE}
    splits = {config: {"train": example_columns(features[config], 200, 1),
                       "validation": example_columns(features[config], 40, 2),
                       "test": example_columns(features[config], 40, 3, withheld=True)} for config in GLUE}  # fmt: skip
    write_hub_dataset(root / "glue", splits, features)
    return {"bert": root / "bert", "neox": root / "neox", "glue": root / "glue"}


def finetune_config(base, bases, cache_dir, *extra: str):
    overrides = ["study=finetune", f"finetune.base_checkpoint={base}", "task=glue_sst2",
                 f"task.dataset={bases['glue']}", "task.valid_from_train=20", f"task.cache_dir={cache_dir}", *extra]
    return job_config(compose_config(*overrides), overrides)


def fine_tuned(bases, cache_dir, *extra):
    """(the job's model, the checkpoint's model as imported, the job's model drawn from its seed alone)."""
    cfg = finetune_config(bases["bert"], bases, cache_dir, *extra)
    base, _, _ = load_pretrained(bases["bert"])
    drawn = dict(build_model(cfg, embedding_rows(base), 2).named_parameters())
    return fine_tuned_model(cfg, base, embedding_rows(base), 2), dict(base.named_parameters()), drawn


def test_frozen_layers_keep_their_pretrained_values_and_the_top_layers_are_re_drawn(bases, cache_dir):
    model, base, drawn = fine_tuned(bases, cache_dir, "finetune.frozen_layers=FT", "finetune.reinit_top=1")
    for name, p in model.named_parameters():
        if name.startswith("encoder.layers.0."):  # frozen at the checkpoint's values
            assert not p.requires_grad and torch.equal(p, base[name]), name
        elif name.startswith("encoder.layers.1."):  # re-drawn from the job's seed, trained
            assert p.requires_grad and torch.equal(p, drawn[name]) and (p.dim() == 1 or not torch.equal(p, base[name]))
        elif name.startswith("head."):
            assert p.requires_grad and torch.equal(p, drawn[name]), name
        else:  # the embeddings and their norm: the checkpoint's, trained
            assert p.requires_grad and torch.equal(p, base[name]), name


@pytest.mark.parametrize("freeze_from, pretrained", [("base", True), ("seed", False)])
def test_a_frozen_component_is_kept_pretrained_or_re_drawn_at_random(freeze_from, pretrained, bases, cache_dir):
    model, base, drawn = fine_tuned(bases, cache_dir, "freeze=emb", f"finetune.freeze_from={freeze_from}")
    embeddings = [name for name in base if name.startswith("src_embed.") and base[name].dim() == 2]
    for name, p in model.named_parameters():
        assert p.requires_grad == (name not in embeddings), name
        if name in embeddings:
            assert torch.equal(p, base[name]) == pretrained and torch.equal(p, drawn[name]) != pretrained, name


def test_the_job_adopts_the_checkpoints_model_and_tokenizer_and_its_files_are_its_identity(bases, cache_dir,
                                                                                          tmp_path):  # fmt: skip
    cfg = finetune_config(bases["bert"], bases, cache_dir)
    assert (cfg.model.name, cfg.model.encoder_layers, cfg.model.d_model) == ("BertForMaskedLM", 2, 32)
    assert cfg.task.vocab == str(bases["bert"])
    changed = tmp_path / "copy"
    changed.mkdir()
    for f in bases["bert"].iterdir():
        (changed / f.name).write_bytes(f.read_bytes())
    before = fingerprint(finetune_config(changed, bases, cache_dir))
    tensors = load_file(changed / "model.safetensors")
    tensors["bert.embeddings.LayerNorm.bias"] += 1  # the same config and tokenizer, other weights: another job
    save_file(tensors, changed / "model.safetensors", metadata={"format": "pt"})
    after = fingerprint(finetune_config(changed, bases, cache_dir))
    assert (after["config"], after["data"]) == (before["config"], before["data"])
    assert after["sha256"] != before["sha256"]


@pytest.mark.parametrize("case, extra, message", [
    ("neox", [], "GPTNeoXForCausalLM is a decoder; a classification or regression task fine-tunes an encoder"),
    ("bert", ["task=lm_bible_en"], r"task.kind=lm: BertForMaskedLM is fine-tuned on a classification or regression"),
    ("bert", ["model=mlm_micro"], "model=mlm_micro: a fine-tuning job from a pretrained checkpoint takes its model"),
    ("bert", ["finetune.frozen_layers=FTF"], r"finetune.frozen_layers=FTF: one letter per layer of the base's 2 "),
    ("bert", ["finetune.frozen_layers=FX"], r"finetune.frozen_layers=FX: .* F frozen or T trained"),
    ("bert", ["finetune.reinit_top=3"], r"finetune.reinit_top=3: the base has 2 layers; allowed: 0 … 2"),
])  # fmt: skip
def test_what_cannot_be_a_pretrained_fine_tuning_base_is_refused_in_one_line(case, extra, message, bases, cache_dir):
    with pytest.raises(ConfigError, match=message):
        finetune_config(bases[case], bases, cache_dir, *extra)


@pytest.mark.slow
def test_finetune_pretrained_glue_tiny_sweeps_layer_patterns_and_tasks_in_one_command_into_tables(bases, cache_dir,
                                                                                                 tmp_path):  # fmt: skip
    sweep_dir = tmp_path / "sweep"
    proc = run_sweep(sweep_dir, "experiment=finetune_pretrained_glue_tiny", f"finetune.base_checkpoint={bases['bert']}",
                     f"task.dataset={bases['glue']}", f"task.cache_dir={cache_dir}", "finetune.max_unk_rate=0.1",
                     "trainer.max_steps=4", "trainer.validate_every_steps=2", timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = {d.parent.name: read_result(d.parent) for d in sweep_dir.glob("*/result.json")}
    assert len(results) == 8 and all(r["status"] == "completed" for r in results.values())  # 2 tasks × 2 × 2
    for r in results.values():
        ft = r["finetune"]
        assert ft["base_checkpoint"]["architecture"] == "BertForMaskedLM" and ft["frozen_values"] == "pretrained"
        assert (ft["frozen_params"] > 0) == (ft["frozen_layers"] == "FT")  # TT: none frozen
    frozen_dir = next(sweep_dir / name for name in results if "frozen_layers=FT" in name)
    run, base = load_run(frozen_dir), dict(load_pretrained(bases["bert"])[0].named_parameters())
    layer0 = {n: p for n, p in run.model.named_parameters() if n.startswith("encoder.layers.0.")}
    assert all(not p.requires_grad and torch.equal(p, base[n]) for n, p in layer0.items())  # verified as loaded

    runs = load_runs([str(sweep_dir)])
    tables = [t for t in build_tables(runs) if "fine-tuning" in t.title]
    assert sorted(t.title.split(" · ")[0] for t in tables) == ["glue_rte", "glue_sst2"]
    text = markdown(tables[:1], runs)
    for arm in ("all trainable", "layers FT frozen", "top 1 re-initialised", "layers FT frozen, top 1 re-initialised"):
        assert f"| bert (BertForMaskedLM) | {arm} |" in text, text


def test_a_base_vocabulary_that_does_not_cover_the_task_is_refused_before_any_job_starts(bases, cache_dir, tmp_path):
    given = ["study=finetune", f"finetune.base_checkpoint={bases['bert']}", "task=glue_sst2",
             f"task.dataset={bases['glue']}", "task.valid_from_train=20", f"task.cache_dir={cache_dir}",
             "finetune.max_unk_rate=0.001"]  # fmt: skip
    refusal = (r"finetune.max_unk_rate=0.001: \d+\.\d\d% of the train split's pieces of task=glue_sst2 are <unk> under "
               "the vocabulary of finetune.base_checkpoint=")  # fmt: skip
    for dry_run in ("true", "false"):
        single = run_cli(*given, f"hydra.run.dir={tmp_path / 'job'}", f"dry_run={dry_run}")
        assert single.returncode == 1 and re.search(refusal, single.stdout), single.stdout[-3000:]
        assert "Traceback" not in single.stdout and not (tmp_path / "job").exists()
        sweep = run_sweep(tmp_path / "sweep", *given, "seed=1,2", f"dry_run={dry_run}")
        assert sweep.returncode == 1 and re.search(refusal, sweep.stdout), sweep.stdout[-3000:]
        assert "No job was started" in sweep.stdout and "Traceback" not in sweep.stdout
        assert not list(tmp_path.glob("sweep/*/result.json"))
