"""Every `python -m frozen_sweep …` command in README.md and docs/*.md composes, and every job it makes passes the
checks a job runs before it starts (keys, values, cross-field rules, budgets, the relearn base): the documentation
cannot drift."""

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict

from frozen_sweep.job.job_config import base_reference, job_config, sized_by_bases
from frozen_sweep.run.directory import dirname, write_result
from frozen_sweep.run.record import RunResult
from tests.conftest import CONF, ROOT, fake_run_dir
from tests.helpers.checkpoints import bpe_tokenizer, in_hub_cache, save_checkpoint

OmegaConf.register_new_resolver("job_dirname", dirname, replace=True)  # as python -m frozen_sweep: directory names
ENTRY = re.compile(r"^(?:\.venv/bin/)?python -m frozen_sweep(?=\s|$)")


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def readme_commands() -> list[str]:
    """The `python -m frozen_sweep` commands (not .collect) of the README and docs/, continuation lines joined,
    comments cut."""
    text = "\n".join(re.sub(r"\\\n\s*", " ", path.read_text()) for path in DOCUMENTS)
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if ENTRY.match(line.strip())]


def arguments(command: str) -> tuple[bool, list[str]]:
    """(multirun?, overrides) of a command; `…` (an elided rest), `--help` and `--cfg job` are dropped."""
    words = [w for w in shlex.split(ENTRY.sub("", command), comments=True) if w not in ("…", "--help")]
    if "--cfg" in words:
        del words[words.index("--cfg") : words.index("--cfg") + 2]
    multirun = "-m" in words
    return multirun, [w for w in words if w != "-m"]


def jobs(overrides: list[str], multirun: bool) -> list[tuple[list[str], object]]:
    """Each job's overrides and composed config, as Hydra's basic sweeper splits a -m command (the experiment's
    sweeper params included)."""
    loader = GlobalHydra.instance().config_loader()
    mode = RunMode.MULTIRUN if multirun else RunMode.RUN
    config = loader.load_configuration("config", overrides, run_mode=mode)
    if not multirun:
        return [(overrides, config)]
    params = [f"{key}={value}" for key, value in (config.hydra.sweeper.params or {}).items()]
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(params + overrides)
    (batch,) = BasicSweeper.split_arguments(parsed, None)
    return [(job, loader.load_sweep_config(config, job)) for job in batch]


def with_base_run(config, vocab: Path) -> None:
    """A job naming one of its config's bases (bases.NAME) as the launcher gives it: the base's directory, here a
    stand-in completed run of the base's config (with a vocabulary, as a fine-tuning job checks); a scratch job sized
    by the bases, with their model."""
    key, name = base_reference(config)
    load = GlobalHydra.instance().config_loader().load_sweep_config
    if key is None:
        if sized_by_bases(config):  # a scratch row: the launcher gives it its bases' model (one, checked there)
            model = load(config, list(next(iter(config.bases.values())))).model
            with open_dict(config):
                config.model.merge_with(model)
                config.finetune.scratch_model = "own"
        return
    overrides = list(config.bases[name])
    base = load(config, overrides)
    run_dir = Path(str(base.hydra.sweep.dir), str(base.hydra.sweep.subdir))
    if not run_dir.exists():
        fake_run_dir(run_dir, config=base)
        vocab.touch()
        write_result(run_dir, RunResult(status="completed", data={"vocab_path": str(vocab)}))
    OmegaConf.update(config, key, str(run_dir.absolute()))


COMMANDS = readme_commands()


def test_the_readme_has_commands_to_check():
    assert len(COMMANDS) >= 12 and any("-m" in c for c in COMMANDS) and any("--cfg job" in c for c in COMMANDS)


def pretrained_stand_ins(tmp_path, monkeypatch) -> Path:
    """experiment=relearn_pretrained's checkpoints as a tiny GPT-NeoX: its hub names in an offline hub cache, and the
    directory that stands for the documented local ones (DIR_SMALL, ...)."""
    from huggingface_hub import constants

    directory = tmp_path / "tiny"
    save_checkpoint(directory, bpe_tokenizer("gpt_neox"), "GPTNeoX")
    params = OmegaConf.load(CONF / "experiment" / "relearn_pretrained.yaml").hydra.sweeper.params
    for name in params["relearn.base_checkpoint"].split(","):
        in_hub_cache(tmp_path / "hub", name, directory)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return directory


@pytest.mark.parametrize("command", COMMANDS)
def test_a_readme_command_composes_and_passes_every_check(command, tmp_path, monkeypatch):
    if "--config-dir" in command:
        pytest.skip("a user's own config directory: tests/test_package.py runs this example for real")
    multirun, overrides = arguments(command)
    if "relearn_pretrained" in command:
        local = pretrained_stand_ins(tmp_path, monkeypatch)
        overrides = [re.sub(r"DIR_\w+", str(local), o) for o in overrides]
    # a relearn job's base run must exist: the README's (a default run; a big-model run at /runs/tren_big) stand-ins
    monkeypatch.chdir(tmp_path)
    fake_run_dir(tmp_path / "outputs" / "runs" / "default")
    overrides = [
        f"relearn.base_checkpoint={fake_run_dir(tmp_path / 'tren_big', 'model=big')}"
        if o == "relearn.base_checkpoint=/runs/tren_big" else o
        for o in overrides
    ]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        planned = jobs(overrides, multirun)
        for job, config in planned:
            with_base_run(config, tmp_path / "spm.model")
            job_config(config, job)  # raises ConfigError naming the key
    assert planned


README_LIMIT = 10 * 1024  # bytes: a researcher's five minutes; detail and measurement diaries live in docs/
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# a repository path named in `backticks`: a top-level folder of the project, or a config under conf/
NAMED_PATH = re.compile(r"`((?:frozen_sweep|launchers|benchmarks|scripts|tests|docs|conf)/[\w./*-]*[\w*])[`:]")


def heading_anchors(path) -> set[str]:
    """GitHub's anchors for a Markdown file's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_bytes()) <= README_LIMIT


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_links_and_named_files_exist(document):
    text = document.read_text()
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://")):
            continue
        file, _, anchor = target.partition("#")
        linked = (document.parent / file).resolve() if file else document
        assert linked.exists() and ROOT in linked.parents, f"{document.name}: link to missing {target}"
        if anchor:
            assert anchor in heading_anchors(linked), f"{document.name}: no heading #{anchor} in {linked.name}"
    for named in NAMED_PATH.findall(text):
        root = ROOT / "frozen_sweep" if named.startswith("conf/") else ROOT
        assert list(root.glob(named)), f"{document.name} names {named}, which the repository does not hold"


def test_the_project_speaks_only_of_itself():
    """No file refers to an issue tracker's numbers or to files outside the repository (a sibling checkout, a
    machine's own set-up script)."""
    outside = re.compile(r"\b[Ii]ssue #?\d+|\.\./" + "shared|\\." + "device/")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = [
        f"{name}:{n}" for name in files if not name.endswith((".gz", ".png"))
        for n, line in enumerate((ROOT / name).read_text(errors="replace").splitlines(), 1) if outside.search(line)
    ]  # fmt: skip
    assert not found, found
