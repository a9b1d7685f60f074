"""Shared fixtures: composed real configs and a small synthetic parallel corpus in the text_files layout."""

import atexit
import os
import random
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from frozen_sweep.config import register_configs
from frozen_sweep.run.directory import write_result
from frozen_sweep.run.record import RunResult

ROOT = Path(__file__).resolve().parents[1]
# the one SLURM test cluster of the session, a fixture every test module shares (imported into each module, it would
# be one fixture per module, each waiting on the same machine-wide lock)
pytest_plugins = ["tests.slurm_cluster"]
# tests interrupt the launchers and jobs they start with SIGINT; a suite started in the background of a non-interactive
# shell (CI) has SIGINT ignored, and every process it starts would inherit that: restore Python's handler (a handler,
# unlike SIG_IGN, resets to the default when a child execs)
signal.signal(signal.SIGINT, signal.default_int_handler)
# no network at test time: the hub is never asked (tests that resolve a revision serve its API themselves), and the
# `datasets` cache of the hub-layout datasets the tests build is their own, not the user's
os.environ.setdefault("HF_HUB_OFFLINE", "1")
if "HF_DATASETS_CACHE" not in os.environ:
    os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="frozen_sweep_tests_hf_")
    atexit.register(shutil.rmtree, os.environ["HF_DATASETS_CACHE"], ignore_errors=True)
# torch.compile's generated kernels in a cache of this process's own (each xdist worker's, and the jobs it starts), not
# /tmp/torchinductor_<user>, which every process of the machine shares: a kernel library rewritten there while another
# process has it loaded kills that process with SIGBUS (seen: an xdist worker lost in a compiled-training test)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="frozen_sweep_tests_inductor_")
atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)
CONF = ROOT / "frozen_sweep" / "conf"

register_configs()

# A toy language pair: word-for-word "translation" with a fixed dictionary, so a micro model can learn it quickly.
LEXICON = {
    "the": "el", "dog": "perro", "cat": "gato", "sees": "ve", "eats": "come", "bread": "pan", "water": "agua",
    "house": "casa", "big": "grande", "small": "pequeño", "and": "y", "man": "hombre", "woman": "mujer",
    "drinks": "bebe", "has": "tiene", "red": "rojo", "book": "libro", "reads": "lee", "good": "bueno", "old": "viejo",
}


def toy_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    words = list(LEXICON)
    pairs = []
    for _ in range(n):
        en = [rng.choice(words) for _ in range(rng.randint(3, 9))]
        pairs.append((" ".join(LEXICON[w] for w in en), " ".join(en)))
    return pairs


def write_corpus(directory: Path, sizes=(600, 60, 60), src="es", tgt="en") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for seed, (split, n) in enumerate(zip(("train", "valid", "test"), sizes)):
        pairs = toy_pairs(n, seed)
        (directory / f"{split}.{src}").write_text("".join(s + "\n" for s, _ in pairs))
        (directory / f"{split}.{tgt}").write_text("".join(t + "\n" for _, t in pairs))
    return directory


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("toy_corpus"))


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


def compose_config(*overrides: str, with_hydra: bool = False):
    """The real config tree, composed as `python -m frozen_sweep` would (with its `hydra` node: `with_hydra`)."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=with_hydra)


def fake_run_dir(directory: Path, *overrides: str, config=None) -> Path:
    """A directory that looks like a completed run of `overrides` (or of a composed `config`: config.yaml,
    result.json, an empty checkpoint_best.pt): enough for the config checks of a relearn job, not to load its model."""
    directory.mkdir(parents=True, exist_ok=True)
    config = compose_config(*overrides) if config is None else config
    (directory / "config.yaml").write_text(OmegaConf.to_yaml({k: v for k, v in config.items() if k != "hydra"}))
    write_result(directory, RunResult(status="completed"))
    (directory / "checkpoint_best.pt").touch()
    return directory


@pytest.fixture
def micro_overrides(toy_corpus, cache_dir) -> list[str]:
    """A micro translation job on the toy corpus, small enough to train in seconds."""
    return [
        "task=text_files",
        f"task.path={toy_corpus}",
        "task.src_lang=es",
        "task.tgt_lang=en",
        "task.vocab_size=60",
        f"task.cache_dir={cache_dir}",
        "model=micro",
        "trainer=quick",
        "eval.beam=2",
    ]


@pytest.fixture(scope="session")
def finished_runs(toy_corpus, cache_dir, tmp_path_factory) -> dict:
    """A translation run with frozen FFNs (its last 3 validations' checkpoints kept) and a language model with frozen
    embeddings, trained for a few seconds."""
    from tests.helpers.jobs import run_cli  # the helper imports this module's ROOT

    base = tmp_path_factory.mktemp("runs")
    common = ["task=text_files", f"task.path={toy_corpus}", "task.tgt_lang=en", "task.vocab_size=60",
              f"task.cache_dir={cache_dir}", "trainer=quick"]  # fmt: skip
    jobs = {
        "mt": [*common, "task.src_lang=es", "model=micro", "eval.beam=2", "freeze=ffn", "trainer.max_epochs=12",
               "trainer.keep_checkpoints=3"],
        "lm": [*common, "task.kind=lm", "task.src_lang=null", "model=lm_micro", "freeze=emb", "trainer.max_epochs=4"],
    }
    for name, overrides in jobs.items():
        proc = run_cli(*overrides, f"hydra.run.dir={base / name}")
        assert proc.returncode == 0, proc.stdout
    return {name: base / name for name in jobs} | {"corpus": toy_corpus}
