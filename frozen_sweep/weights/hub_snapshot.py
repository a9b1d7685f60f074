"""A model on the Hugging Face hub as a local directory at one commit, as the task data's hub names are
(frozen_sweep.data.hub): a branch or tag is resolved to its commit once per process and that commit is read from then
on; the answer is kept where `huggingface_hub` keeps it, its cache (HF_HOME: `refs/<branch>` → `snapshots/<commit>/`),
so that offline (HF_HUB_OFFLINE=1, as the launchers run their jobs, or no network) the commit resolved last is read
from the cache and the hub is never reached. Only what an import reads is downloaded: the config, the safetensors
weights and the tokenizer's files (never a pickle checkpoint, never code).
"""

from pathlib import Path

from frozen_sweep.data.hub import offline_variable
from frozen_sweep.weights.hf_tables import PretrainedError

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
