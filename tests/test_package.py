"""The project as a user gets it: a wheel built from this tree, installed into a fresh virtualenv and run from an
unrelated directory (configs, launcher plugins and the embedded corpus must all come from the wheel), a user's own
config directory, and a job run by an unprivileged user on a machine without the SWORD modules."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, write_corpus

pytestmark = pytest.mark.slow

NOT_SHIPPED = shutil.ignore_patterns(".git", ".venv", "outputs", "build", "dist", "*.egg-info", "__pycache__",
                                     ".*cache")
IN_WHEEL = [
    "frozen_sweep/conf/config.yaml",
    "frozen_sweep/job/runner.py",  # every stage subpackage ships (each has its __init__.py)
    "frozen_sweep/tables/build.py",
    "frozen_sweep/conf/__init__.py",
    "frozen_sweep/conf/experiment/demo_table.yaml",
    "frozen_sweep/conf/hydra/help/frozen_sweep.yaml",  # --help's template
    "frozen_sweep/data/verses/spaRV1909eb.txt.gz",
    "frozen_sweep/data/verses/engKJV2006eb.txt.gz",
    "hydra_plugins/frozen_sweep_launchers/config.py",  # the launchers' settings (hydra/launcher=local_gpus|slurm)
    "hydra_plugins/frozen_sweep_launchers/local_gpus.py",
]
MICRO = ["model=micro", "trainer=quick", "trainer.max_steps=4", "trainer.valid_bleu_sentences=0", "eval.beam=1"]


def run(*args, cwd: Path, env: dict, user: str | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    command = [str(a) for a in args]
    if user:
        command = ["runuser", "-u", user, "--", *command]
    return subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)  # fmt: skip


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc.stdout


def make_venv(interpreter: str, directory: Path, wheel: Path, env: dict) -> Path:
    """A fresh venv holding only the wheel; its dependencies come from the environment running the tests (a .pth
    line: offline and fast). Returns its python."""
    ok(run(interpreter, "-m", "venv", "--without-pip", directory, cwd=directory.parent, env=env))
    python = directory / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", "--python", python]
    ok(run(*pip, "install", "--no-deps", "--no-index", wheel, cwd=directory.parent, env=env))
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(ok(run(python, "-c", purelib, cwd=directory.parent, env=env)).strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(scope="module")
def install():
    """(the wheel, the python of a fresh venv holding it, an environment without this checkout, a scratch directory
    that an unprivileged user can read)."""
    base = Path(tempfile.mkdtemp(prefix="frozen_sweep_wheel_"))
    base.chmod(0o755)
    try:
        shutil.copytree(ROOT, base / "src", ignore=NOT_SHIPPED)
        copied = {p.name for p in (base / "src").iterdir()}
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["FROZEN_SWEEP_CACHE"] = str(base / "cache")
        pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
        wheel_dir = base / "dist"
        ok(run(*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheel_dir, base / "src", cwd=base, env=env))
        (wheel,) = wheel_dir.glob("frozen_sweep-*.whl")
        left = {p.name for p in (base / "src").iterdir()} - copied - {"frozen_sweep.egg-info"}  # (git-ignored)
        assert not left, f"the build left {left} in the source tree (setup.py builds out of tree)"
        missing = set(IN_WHEEL) - set(zipfile.ZipFile(wheel).namelist())
        assert not missing, f"not in the wheel: {missing}"
        python = make_venv(sys.executable, base / "venv", wheel, env)
        (base / "work").mkdir()
        yield wheel, python, env, base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def runnable_by(user: str, env: dict) -> str | None:
    """An interpreter of this Python version that `user` may execute (this one may live under /root), or None."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (os.path.realpath(sys.executable), f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        runs = Path(candidate).is_file() and run(candidate, "-c", "pass", cwd=Path("/"), env=env, user=user)
        if runs and runs.returncode == 0:
            return candidate
    return None


def test_the_wheel_runs_from_anywhere(install):
    _, python, env, base = install
    work = base / "work"
    where = ok(run(python, "-c", "import frozen_sweep.conf as c, hydra_plugins.frozen_sweep_launchers as l;"
                   "print(c.__file__, l.__file__)", cwd=work, env=env))  # fmt: skip
    assert all(str(base / "venv") in path for path in where.split()), where

    assert "name: bible_es_en" in ok(run(python, "-m", "frozen_sweep", "--cfg", "job", cwd=work, env=env))
    assert "*demo, llama_demo" in ok(run(python, "-m", "frozen_sweep", "--help", cwd=work, env=env))  # its own template
    missing = run(python, "-m", "frozen_sweep", "--cfg", "job", "model=nope", cwd=work, env=env)
    assert missing.returncode != 0 and "pkg://frozen_sweep.conf" in missing.stdout  # names the search path

    corpus = write_corpus(work / "corpus")
    toy = ["task=text_files", f"task.path={corpus}", "task.src_lang=es", "task.tgt_lang=en", "task.vocab_size=60"]
    ok(run(python, "-m", "frozen_sweep", "-m", "hydra/launcher=local_gpus", "name=sweep", "freeze=none,emb", *toy,
           *MICRO, cwd=work, env=env))  # fmt: skip
    results = sorted((work / "outputs" / "sweep").glob("*/result.json"))
    assert [json.loads(p.read_text())["status"] for p in results] == ["completed", "completed"]
    assert all((p.parent / "metrics.jsonl").is_file() for p in results)


def test_a_users_config_directory_adds_presets(install):
    _, python, env, base = install
    mine = base / "myconf"
    (mine / "model").mkdir(parents=True)
    (mine / "experiment").mkdir()
    (mine / "model" / "wide_micro.yaml").write_text("defaults:\n  - micro\n\nname: wide_micro\nd_model: 48\n")
    (mine / "experiment" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /model: wide_micro\n\nname: mine\n"
    )
    for where in ([f"--config-dir={mine}"], [f"hydra.searchpath=[file://{mine}]"]):
        cfg = ok(run(python, "-m", "frozen_sweep", *where, "experiment=mine", "--cfg", "job", cwd=base / "work",
                     env=env))  # fmt: skip
        assert "name: wide_micro" in cfg and "d_model: 48" in cfg and "name: mine" in cfg


def test_an_unprivileged_user_runs_the_embedded_corpus_without_sword_modules(install):
    """As `nobody` when the tests run as root (as themselves otherwise: then they are unprivileged already)."""
    wheel, python, env, base = install
    user = "nobody" if os.geteuid() == 0 else None
    if user:
        if not shutil.which("runuser"):
            pytest.skip("running as root without runuser: cannot switch to an unprivileged user")
        interpreter = runnable_by(user, env)
        if interpreter is None:
            pytest.skip(f"no python{sys.version_info.major}.{sys.version_info.minor} that {user} may execute")
        python = make_venv(interpreter, base / "venv_nobody", wheel, env)
    work = base / "nobody"
    work.mkdir()
    env = {**env, "FROZEN_SWEEP_CACHE": str(work / "cache"), "HOME": str(work)}
    if user:
        shutil.chown(work, user)
    ok(run(python, "-m", "frozen_sweep", "task.sword_dir=/nonexistent", "task.vocab_size=500", *MICRO,
           "hydra.run.dir=run", cwd=work, env=env, user=user))  # fmt: skip
    result = json.loads((work / "run" / "result.json").read_text())
    assert result["status"] == "completed" and result["data"]["sizes"]["test"] == 1086
    assert result["data"]["corpus"]["sources"]["es"].endswith("spaRV1909eb.txt.gz")
    if user:
        assert (work / "run" / "result.json").stat().st_uid != 0
