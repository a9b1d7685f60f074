"""Where a pretrained checkpoint's files are: a directory written by `save_pretrained`, or a model on the Hugging Face
hub as a local directory at one commit, as the task data's hub names are
(frozen_sweep.data.hub): a branch or tag is resolved to its commit once per process and that commit is read from then
on; the answer is kept where `huggingface_hub` keeps it, its cache (HF_HOME: `refs/<branch>` → `snapshots/<commit>/`),
so that offline (HF_HUB_OFFLINE=1, as the launchers run their jobs, or no network) the commit resolved last is read
from the cache and the hub is never reached. Only what an import reads is downloaded: the config, the safetensors
weights and the tokenizer's files (never a pickle checkpoint, never code).
"""

from pathlib import Path

from frozen_sweep.data.hub import offline_variable


class PretrainedError(ValueError):
    """A checkpoint that cannot be found or that our model cannot hold: one line naming what it is and what is read."""

FILES = ["config.json", "generation_config.json", "*.safetensors", "model.safetensors.index.json", "tokenizer*",
         "special_tokens_map.json", "vocab.*", "merges.txt"]  # fmt: skip

_commits: dict[tuple, str] = {}  # (name, revision asked, cache) → commit: resolved once per process


def snapshot(name: str, revision: str | None = None, cache_dir: str | Path | None = None) -> tuple[Path, str]:
    """The directory of hub model `name` at `revision` (a branch, tag or commit; None: main) and its commit;
    `cache_dir`: the hub cache (default HF_HOME's)."""
    from huggingface_hub import errors, snapshot_download

    asked = revision or "main"
    key = (name, asked, str(cache_dir))
    offline = offline_variable()
    try:
        path = snapshot_download(name, revision=_commits.get(key, asked), cache_dir=cache_dir,
                                 allow_patterns=FILES, local_files_only=offline is not None)  # fmt: skip
    except errors.LocalEntryNotFoundError:
        why = f"{offline} is set" if offline else "the hub cannot be reached"
        raise PretrainedError(f"{name} (revision {asked}) is not in the hub cache (HF_HOME) and {why}: where there is "
                             f"a network, run `python -m frozen_sweep.pretrained {name}` once with the same HF_HOME, "
                             "or give a directory saved by save_pretrained") from None  # fmt: skip
    except (errors.RepositoryNotFoundError, errors.GatedRepoError, errors.RevisionNotFoundError) as e:
        raise PretrainedError(f"{name} (revision {asked}): {type(e).__name__}: {str(e).splitlines()[0]}") from None
    commit = Path(path).name  # snapshots/<commit>
    _commits[key] = commit
    return Path(path), commit


def is_hub_name(text: str) -> bool:
    """owner/name that is no path here: a hub model's name."""
    path = Path(text).expanduser()
    return not path.exists() and text.count("/") == 1 and not text.startswith((".", "/", "~"))


def is_checkpoint_source(source) -> bool:
    """Whether a base key names a pretrained checkpoint: a directory with config.json that is not a run of ours (no
    config.yaml), or a hub name."""
    path = Path(str(source or "")).expanduser()
    if path.is_dir():
        return (path / "config.json").is_file() and not (path / "config.yaml").is_file()
    return bool(source) and is_hub_name(str(source))


def locate(source: str | Path, revision: str | None, cache_dir) -> tuple[Path, str | None]:
    """A local directory (no commit), or a hub name's snapshot and its commit."""
    path = Path(source).expanduser()
    if path.is_dir():
        if revision is not None:
            raise PretrainedError(f"{source} is a directory; a revision is for a hub name")
        return path, None
    if path.exists() or str(source).startswith((".", "/", "~")) or str(source).count("/") > 1:
        raise PretrainedError(f"{source}: no such directory (a checkpoint is a directory written by save_pretrained, "
                             "or a hub name such as Qwen/Qwen2.5-0.5B)")  # fmt: skip
    return snapshot(str(source), revision, cache_dir)
