"""Fine-tuning a finished masked LM on the embedded classification task, end to end through the CLI: it beats the
majority class, the base's frozen parameters come out bit-identical (finetune.frozen=keep) or trained (train), bad
bases stop the command before anything is written, and `python -m frozen_sweep.classify` labels lines with it, from
the run or from its model file."""

import re
import subprocess
import sys

import pytest
import torch

from frozen_sweep import classify as classify_command
from frozen_sweep import export
from frozen_sweep.data.bible import extract_bible
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.model import component_of_parameters
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.use.command_line import run_command
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.model_file import read_model_file
from tests.conftest import ROOT, compose_config, fake_run_dir
from tests.helpers.jobs import result, run_cli
from tests.helpers.model_files import replace_frozen_hash

# slow; and on one test worker, so that the module's runs (a base and its fine-tunings, about a minute) are trained
# once, not once by each worker that takes one of its tests
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("finetune")]
QUICK = ["trainer=quick", "trainer.label_smoothing=0", "trainer.max_epochs=null"]
# the base's encoder LLaMA-style (RMSNorm, SwiGLU, rotary positions, grouped-query attention), its biases kept
LLAMA_OPTIONS = ["model.norm=rms", "model.ffn=swiglu", "model.positions=rope", "model.kv_heads=1"]
UP = "encoder.layers.0.ffn.up"  # one of the SwiGLU's three matrices


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cache_dir):
    """A micro LLaMA-style masked LM with frozen random embeddings (the base), and three fine-tunings of it: keep,
    train, and its feed-forward layers re-drawn at random and frozen (freeze=ffn finetune.freeze_from=seed)."""
    root = tmp_path_factory.mktemp("finetune")
    cache = f"task.cache_dir={cache_dir}"
    base = run_cli("task=mlm_bible_en", "model=mlm_micro", *LLAMA_OPTIONS, "freeze=emb", cache, *QUICK,
                   "trainer.max_steps=100", "trainer.validate_every_steps=50",
                   f"hydra.run.dir={root / 'base'}", timeout=600)  # fmt: skip
    assert base.returncode == 0, base.stdout[-2000:]
    arms = {"keep": ["finetune.frozen=keep"], "train": ["finetune.frozen=train"],
            "redrawn": ["freeze=ffn", "finetune.freeze_from=seed"]}  # fmt: skip
    for mode, arm in arms.items():
        tuned = run_cli("study=finetune", f"finetune.base_checkpoint={root / 'base'}", *arm,
                        "task=cls_bible_en", cache, *QUICK, "trainer.max_steps=300", "trainer.validate_every_steps=100",
                        "trainer.stop_metric=accuracy", f"hydra.run.dir={root / mode}", timeout=600)  # fmt: skip
        assert tuned.returncode == 0, tuned.stdout[-2000:]
    return root


def test_a_fine_tuned_encoder_beats_the_majority_class(runs):
    record = result(runs / "keep")
    assert record["metric_name"] == "accuracy" and record["study"] == "finetune"
    assert record["test_metric"] > record["data"]["majority"]["test"] + 0.03
    assert 0 < record["test_f1"] <= 1 and record["finetune"]["base_run"] == str(runs / "base")


def test_frozen_base_parameters_stay_bit_identical_unless_trained(runs):
    base = dict(load_run(runs / "base").model.named_parameters())  # regenerated from the base's seed, verified
    frozen = [name for name, p in base.items() if not p.requires_grad]
    assert frozen == ["src_embed.tokens.weight"]  # freeze=emb
    for mode, same in (("keep", True), ("train", False)):
        tuned = dict(load_run(runs / mode).model.named_parameters())  # rebuilt from the base, checkpoint verified
        assert torch.equal(tuned[frozen[0]], base[frozen[0]]) is same
        assert tuned[frozen[0]].requires_grad is not same
        assert not torch.equal(tuned[f"{UP}.weight"], base[f"{UP}.weight"])
    assert result(runs / "keep")["trainable_ratio"] < result(runs / "train")["trainable_ratio"] == 1.0
    redrawn = dict(load_run(runs / "redrawn").model.named_parameters())
    up = f"{UP}.weight"
    assert not redrawn[up].requires_grad and not torch.equal(redrawn[up], base[up])  # re-drawn, frozen
    assert torch.equal(redrawn[frozen[0]], base[frozen[0]])  # the base's frozen embeddings: kept


def test_the_fine_tuning_table_puts_the_arms_side_by_side(runs):
    tables = [t for t in build_tables(load_runs([str(runs)]), claims=True) if t.metric_name == "accuracy"]
    assert len(tables) == 1
    rows = tables[0].rows
    arms = list(zip(rows[("", "Pre-training")], rows[("", "Fine-tuned")]))
    base = "regular, emb frozen"
    expected = [(base, "all trainable"), (base, "base's frozen layers frozen"), (base, "ffn frozen (re-drawn)")]
    assert sorted(arms) == expected
    test = rows[("Accuracy %", "test")].tolist()
    assert f"{100 * result(runs / 'keep')['test_metric']:.1f}" in test
    assert "majority class: history" in tables[0].footnotes[0]
    assert [c.key for c in tables[0].checks] == ["FT1", "FT2", "RE1", "RE2"]  # no scratch row here: not enough runs


def test_a_changed_base_is_another_job(runs, cache_dir):
    cfg = compose_config("study=finetune", f"finetune.base_checkpoint={runs / 'base'}", "task=cls_bible_en",
                         f"task.cache_dir={cache_dir}")  # fmt: skip
    before = fingerprint(job_config(cfg, []))
    checkpoint = runs / "base" / "checkpoint_best.pt"
    state = torch.load(checkpoint, weights_only=False)
    state["trainable"][f"{UP}.bias"] += 1.0
    torch.save(state, checkpoint.with_suffix(".tmp"))
    checkpoint.with_suffix(".tmp").replace(checkpoint)  # a new file: its hash is taken again
    assert fingerprint(job_config(cfg, []))["sha256"] != before["sha256"]


@pytest.mark.parametrize(
    "base, extra, message",
    [
        ("translation", [], r"finetune.base_checkpoint=.*: a task.kind=translation run \(task=bible_es_en\); "
                            r"fine-tuning starts from a masked LM's encoder"),
        ("missing", [], r"finetune.base_checkpoint=.*missing: no such directory"),
        ("mlm", ["model=mlm_demo"], r"model=mlm_demo: a fine-tuning job takes model and reservoir from its base run"),
        (None, [], r"study=finetune needs finetune.base_checkpoint=<a completed masked-LM run's directory>"),
    ],
)
def test_a_bad_base_stops_the_command_before_anything_is_written(tmp_path, runs, base, extra, message):
    bases = {"translation": fake_run_dir(tmp_path / "translation"), "missing": tmp_path / "missing",
             "mlm": runs / "base"}  # fmt: skip
    given = [] if base is None else [f"finetune.base_checkpoint={bases[base]}"]
    proc = run_cli("study=finetune", *given, "task=cls_bible_en", *extra, f"hydra.run.dir={tmp_path / 'job'}")
    assert proc.returncode != 0 and "Traceback" not in proc.stdout
    assert re.search(message, proc.stdout), proc.stdout[-1500:]
    assert not (tmp_path / "job").exists()


def test_a_regression_fine_tunes_from_the_masked_lm_as_a_classifier_does(runs, tmp_path, cache_dir):
    """study=finetune on task.kind=regression: the base's encoder (its frozen embeddings kept) under a scalar head,
    on a number the embedded text determines (5 × the share of a verse's words that are "the", "and" or "of")."""
    verses = extract_bible(compose_config("task=mlm_bible_en", f"task.cache_dir={cache_dir}").task)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        rows = [(line, line.lower().split()) for line in (verses / f"{split}.en").read_text().splitlines()]
        share = (5 * sum(w in ("the", "and", "of") for w in words) / len(words) for _, words in rows)
        (corpus / f"{split}.tsv").write_text("".join(f"{line}\t{x:.3f}\n" for (line, _), x in zip(rows, share)))
    tuned = run_cli("study=finetune", f"finetune.base_checkpoint={runs / 'base'}", "task=text_files",
                    "task.kind=regression", "task.src_lang=null", "task.tgt_lang=en", f"task.path={corpus}",
                    "task.header=false", f"task.cache_dir={cache_dir}", *QUICK, "trainer.max_steps=100",
                    "trainer.validate_every_steps=50", "trainer.stop_metric=pearson",
                    f"hydra.run.dir={tmp_path / 'run'}")  # fmt: skip
    assert tuned.returncode == 0, tuned.stdout[-2000:]
    record = result(tmp_path / "run")
    assert record["metric_name"] == "pearson" and record["finetune"]["base_run"] == str(runs / "base")
    assert record["test_mse"] < record["data"]["mean_predictor"]["test"]  # it learnt something
    model = load_run(tmp_path / "run").model  # rebuilt on its base, checkpoint verified
    base = dict(load_run(runs / "base").model.named_parameters())
    assert torch.equal(model.src_embed.tokens.weight, base["src_embed.tokens.weight"])
    assert model.head.out_proj.weight.shape == (1, model.head.dense.weight.shape[0])


def classify(*args: str, stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "frozen_sweep.classify", *args], cwd=ROOT, input=stdin,
                          capture_output=True, timeout=120)  # fmt: skip


def test_the_classify_command_labels_lines_and_names_bad_ones(runs, tmp_path):
    lines = "In the beginning God created the heaven and the earth.\nJesus wept.\n"
    out = tmp_path / "labels.tsv"
    done = classify(str(runs / "keep"), "--output", str(out), stdin=lines.encode())
    assert done.returncode == 0, done.stderr
    labels = [line.split("\t") for line in out.read_text().splitlines()]
    assert len(labels) == 2 and all(label in result(runs / "keep")["data"]["labels"] for label, _ in labels)
    assert all(0 < float(p) <= 1 for _, p in labels)
    bad = {b"Jesus wept.\nbad \xff\n": b"standard input line 2 is not valid UTF-8",
           b"one\ttwo\n": b"standard input line 1 has 2 TAB-separated columns; expected one text"}  # fmt: skip
    for stdin, message in bad.items():
        failed = classify(str(runs / "keep"), stdin=stdin)
        assert failed.returncode == 2 and message in failed.stderr and not failed.stdout
    not_classifier = classify(str(runs / "base"), stdin=b"x\n")
    expected = b"is a task.kind=mlm run; classify takes task.kind=classify or task.kind=regression runs: use python -m "
    assert expected + b"frozen_sweep.score" in not_classifier.stderr


@pytest.fixture(scope="module")
def mixed(runs, tmp_path_factory, cache_dir):
    """A short fine-tuning whose frozen tensors come from all three places: attention its base trained (freeze=att,
    copied), the base's frozen embeddings (drawn from the base's seed, 1, and kept), its own frozen head (its seed's
    draw: seed 2)."""
    path = tmp_path_factory.mktemp("finetune_mixed") / "run"
    tuned = run_cli("study=finetune", f"finetune.base_checkpoint={runs / 'base'}", "freeze=att",
                    "freeze.head.frozen=true", "seed=2", "task=cls_bible_en", f"task.cache_dir={cache_dir}", *QUICK,
                    "trainer.max_steps=20", "trainer.validate_every_steps=10", f"hydra.run.dir={path}")  # fmt: skip
    assert tuned.returncode == 0, tuned.stdout[-2000:]
    return path


def test_a_fine_tuned_runs_model_file_stores_what_its_base_trained_and_labels_as_the_run_does(runs, mixed, tmp_path,
                                                                                               capsys):  # fmt: skip
    """In the file: the attention the base trained as tensors; the base's frozen embeddings and the run's frozen head
    as hashes, drawn again from the base's seed and the run's; no base run is read to use it."""
    model_file = tmp_path / "mixed.safetensors"
    run_command(export.main, [str(mixed), str(model_file)])
    saved, run = read_model_file(model_file), load_run(mixed)
    attention = {name for name, component in component_of_parameters(run.model).items() if component == "att"}
    assert attention and set(saved.frozen_stored) == attention
    assert saved.base_draws == {"src_embed.tokens.weight": [result(runs / "base")["seed"], "random"]}
    head = [name for name in saved.frozen_sha256 if name.startswith("head.")]
    assert head and set(saved.frozen_sha256) == {*head, "src_embed.tokens.weight"}
    lines = tmp_path / "lines.txt"
    lines.write_text("In the beginning God created the heaven and the earth.\nJesus wept.\nThe LORD is my shepherd; "
                     "I shall not want.\nPaul, an apostle of Jesus Christ.\nThe burden of Nineveh.\n")  # fmt: skip
    labelled = {}
    run_command(classify_command.main, [str(mixed), "--input", str(lines), "--output", str(tmp_path / "d")])
    labelled["run"] = (tmp_path / "d").read_text()
    resident = dict(run.model.named_parameters())
    hidden = runs.parent / "base_elsewhere"
    (runs / "base").rename(hidden)  # the model file needs no base run
    try:
        for frozen in ("resident", "on-the-fly"):
            out = tmp_path / frozen
            run_command(classify_command.main, [str(model_file), "--input", str(lines), "--output", str(out),
                                                "--frozen", frozen])  # fmt: skip
            labelled[frozen] = out.read_text()
        drawn = load_run(model_file, frozen="on-the-fly")
        replace_frozen_hash(model_file, "src_embed.tokens.weight")  # as if the base's seed drew other numbers
        capsys.readouterr()
        with pytest.raises(SystemExit):
            run_command(classify_command.main, [str(model_file), "--input", str(lines)])
    finally:
        hidden.rename(runs / "base")
    assert "frozen tensor src_embed.tokens.weight regenerated from the seed does not match" in capsys.readouterr().err
    assert labelled["run"] == labelled["resident"] == labelled["on-the-fly"] and len(labelled["run"].splitlines()) == 5
    for name, param in drawn.model.named_parameters():  # held at rest: all but the frozen tensors drawn from a seed
        assert (param.numel() == 0) == (name in saved.frozen_sha256)
        assert param.numel() == 0 or torch.equal(param, resident[name])
