"""A pre-train-then-fine-tune study as one command: `finetune.base_checkpoint=bases.NAME` makes the sweep train the base
(the run `python -m frozen_sweep -m <bases.NAME>` would make) before the jobs that start from it, and never twice."""

import hashlib
import re

import pytest

from tests.conftest import compose_config
from tests.helpers.jobs import result, run_cli
from tests.helpers.plans import plan
from tests.helpers.sweeps import LOCAL, job_dir, run_sweep


TINY_BASE = ["experiment=finetune_bases", "reservoir=none", "model=mlm_micro", "trainer=quick", "trainer.max_steps=30",
             "trainer.validate_every_steps=30"]  # fmt: skip


def tiny_base() -> str:
    """bases.regular of the fine-tuning experiments, shrunk to a micro encoder and 30 updates."""
    return "bases.regular=[" + ",".join(f'"{o}"' for o in TINY_BASE) + "]"


def earlier_name(name: str) -> str:
    """The name an earlier version gave a fine-tuning job's directory: its base's override list in full, the name
    then cut to its start and a hash of the whole beyond 200 characters."""
    full = re.sub(r"bases\.regular=\[…[0-9a-f]{12}\]", lambda _: tiny_base(), name)
    return full if len(full) <= 200 else f"{full[:180]}…{hashlib.sha256(full.encode()).hexdigest()[:12]}"


def test_a_dry_run_lists_the_bases_before_the_jobs_that_wait_for_them(tmp_path):
    done = run_sweep(tmp_path / "sweep", "experiment=finetune_reservoir", "dry_run=true", LOCAL)
    assert done.returncode == 0, done.stdout
    lines = [line.strip() for line in done.stdout.splitlines()]
    bases = [line.split()[1] for line in lines if line.startswith("run     bases.")]
    assert bases == ["bases.regular", "bases.transformer_reservoirs", "bases.ffn_reservoirs"]
    assert "sweep/reservoir=transformer: no run there yet" in done.stdout  # where experiment=finetune_bases puts it
    waits = "once its base bases.ffn_reservoirs has completed (checked in full then)"
    waiting = [line for line in lines if waits in line]
    assert len(waiting) == 2  # finetune.frozen=keep and train
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("extra, refusal", [
    (["model=mlm_micro"], "model=mlm_micro: a fine-tuning job takes model and reservoir from its base run "
                          "(finetune.base_checkpoint=bases.regular); drop these overrides"),
    (['bases.regular=["task=lm_bible_en","model=lm_demo"]'],
     "finetune.base_checkpoint=bases.regular: a task.kind=lm run (task=lm_bible_en); fine-tuning starts from a "
     "masked LM's encoder"),
])  # fmt: skip
def test_what_would_refuse_a_fine_tuning_job_once_its_base_ran_stops_the_sweep_before_the_base_trains(
    tmp_path, extra, refusal
):
    args = ["experiment=random_embeddings_first", "finetune.base_checkpoint=bases.regular", "freeze=none",
            "seed=1", *extra, LOCAL]  # fmt: skip
    dry = run_sweep(tmp_path / "sweep", *args, "dry_run=true")
    assert dry.returncode != 0 and "Traceback" not in dry.stdout, dry.stdout[-3000:]
    refused = [line.strip() for line in dry.stdout.splitlines() if line.strip().startswith("refuse")]
    assert len(refused) == 1 and "finetune.base_checkpoint=bases.regular" in refused[0], refused
    assert refusal in dry.stdout
    real = run_sweep(tmp_path / "sweep", *args)
    assert real.returncode != 0 and "Traceback" not in real.stdout and refusal in real.stdout, real.stdout[-3000:]
    assert "No job was started." in real.stdout and not (tmp_path / "sweep").exists()


def test_a_base_whose_vocabulary_does_not_cover_the_task_stops_the_sweep_before_it_trains(tmp_path, toy_corpus,
                                                                                         cache_dir):
    """finetune.max_unk_rate at plan time: the base's data (a masked LM on the toy corpus' 60 pieces) is prepared
    with the plan, and the task's (the Bible's verses) with that vocabulary tells the rate; the dry run refuses the
    job and the sweep stops in one line, before the base trains."""
    base = ["experiment=finetune_bases", "reservoir=none", "model=mlm_micro", "task=text_files", "task.kind=mlm",
            f"task.path={toy_corpus}", "task.tgt_lang=en", "task.vocab_size=60"]  # fmt: skip
    args = ["experiment=random_embeddings_first", "bases.regular=[" + ",".join(f'"{o}"' for o in base) + "]",
            "finetune.base_checkpoint=bases.regular", "freeze=none", "seed=1", f"task.cache_dir={cache_dir}", LOCAL]
    refusal = (r"finetune.max_unk_rate=0.01: \d+\.\d+% of the train split's pieces of task=cls_bible_en are <unk> "
               r"under the vocabulary of finetune.base_checkpoint=bases.regular, which does not cover the task")
    dry = run_sweep(tmp_path / "sweep", *args, "dry_run=true")
    refused = [line for line in dry.stdout.splitlines() if line.strip().startswith("refuse")]
    assert dry.returncode != 0 and len(refused) == 1 and re.search(refusal, dry.stdout), dry.stdout[-3000:]
    real = run_sweep(tmp_path / "sweep", *args)
    assert real.returncode != 0 and "Traceback" not in real.stdout, real.stdout[-3000:]
    assert re.search(rf"job #0 \(.*\): {refusal}.*No job was started.", real.stdout), real.stdout[-3000:]
    assert "bases to train first" not in real.stdout and not (tmp_path / "sweep").exists()


def test_the_scratch_row_has_the_bases_model_unless_its_config_sizes_it(tmp_path):
    """finetune.scratch_model=bases (the default): every seed of the scratch row gets the bases' model, own: its
    own; a model override of a row sized by the bases, bases of two models, and a single job are refused."""
    fixed = ["experiment=random_embeddings_first", tiny_base(), "finetune.base_checkpoint=scratch", "freeze=none"]
    _, jobs, _, _ = plan(str(tmp_path / "bases"), fixed, ["seed=1,2,3"], with_bases=True)
    base = compose_config(*TINY_BASE).model  # mlm_micro, with the bases' experiment's 5 layers
    assert [job.refused for job in jobs] == [None] * 3 and base.encoder_layers == 5
    assert all(job.config.model == base and job.config.finetune.scratch_model.value == "own" for job in jobs)
    _, own, _, _ = plan(str(tmp_path / "own"), [*fixed, "finetune.scratch_model=own"], ["seed=1"], with_bases=True)
    assert own[0].config.model.name == "mlm_demo" and own[0].config.model.encoder_layers == 5  # the experiment's
    _, refused, _, _ = plan(str(tmp_path / "o"), [*fixed, "model.d_model=64"], ["seed=1"], with_bases=True)
    assert refused[0].refused.startswith("model.d_model=64: finetune.base_checkpoint=scratch takes the model of the "
                                         "config's bases (finetune.scratch_model=bases)")  # fmt: skip
    two = ['+bases.b=["experiment=finetune_bases","reservoir=none"]']
    _, refused, _, _ = plan(str(tmp_path / "two"), [*fixed, *two], ["seed=1"], with_bases=True)
    assert "the bases' models differ (bases.regular: model=mlm_micro, bases.b: model=mlm_demo)" in refused[0].refused
    single = run_cli(*fixed, f"hydra.run.dir={tmp_path / 'job'}")
    assert single.returncode != 0 and "finetune.scratch_model=own for the job's own model" in single.stdout
    assert "Traceback" not in single.stdout and not (tmp_path / "job").exists()


def test_an_unknown_base_or_a_single_job_naming_one_is_refused(tmp_path):
    done = run_sweep(tmp_path / "sweep", "experiment=random_embeddings_first", "finetune.base_checkpoint=bases.regulr")
    assert done.returncode != 0 and "Traceback" not in done.stdout
    assert "finetune.base_checkpoint=bases.regulr: no bases.regulr in the config; allowed: bases.regular" in done.stdout
    assert not (tmp_path / "sweep").exists()
    single = run_cli("experiment=random_embeddings_first", "finetune.base_checkpoint=bases.regular",
                     f"hydra.run.dir={tmp_path / 'job'}")  # fmt: skip
    assert single.returncode != 0 and "a base that a sweep trains first" in single.stdout, single.stdout[-1500:]
    assert "run the command with -m" in single.stdout and not (tmp_path / "job").exists()


@pytest.mark.slow
def test_one_command_trains_the_base_then_fine_tunes_it_and_a_rerun_trains_nothing(tmp_path, cache_dir):
    sweep = tmp_path / "sweep"
    args = ["experiment=random_embeddings_first", tiny_base(), "finetune.base_checkpoint=bases.regular",
            "freeze=none", "seed=1", "trainer=quick", "trainer.max_steps=30", "trainer.validate_every_steps=30",
            f"task.cache_dir={cache_dir}", LOCAL]  # fmt: skip
    first = run_sweep(sweep, *args)
    assert first.returncode == 0, first.stdout[-3000:]
    assert "1 bases to train first: bases.regular" in first.stdout
    base = sweep / "model=mlm_micro,reservoir=none,trainer.max_steps=30,trainer.validate_every_steps=30,trainer=quick"
    assert result(base)["status"] == "completed" and result(base)["metric_name"] == "mlm_ppl"
    assert result(base)["data"]["vocab_path"].startswith(str(cache_dir))  # the sweep's task.cache_dir, passed on
    tuned_dir = job_dir(sweep, "finetune.base_checkpoint=bases.regular")
    tuned = result(tuned_dir)
    assert tuned["finetune"]["base_run"] == str(base) and tuned["metric_name"] == "accuracy"
    assert first.stdout.index("[1/1] bases.regular: test mlm_ppl") < first.stdout.index("test accuracy")
    assert re.match(r"bases\.regular=\[…[0-9a-f]{12}\],finetune", tuned_dir.name)  # the base by its key, readable
    earlier = tuned_dir.rename(sweep / earlier_name(tuned_dir.name))  # as a run of an earlier version is named

    again = run_sweep(sweep, *args, "finetune.frozen=train")  # the regular base has nothing frozen: the same job
    assert again.returncode == 0, again.stdout[-3000:]
    assert "bases to train first" not in again.stdout
    assert re.search(r"1 jobs: 0 to run .* 1 already completed", again.stdout), again.stdout[-2000:]
    assert f"as {earlier}, which holds its result" in again.stdout, again.stdout[-2000:]
