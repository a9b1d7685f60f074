"""A job's directory: its name, whether the record in it may be reused, and who runs it now. No torch here.

- Names: the job's overrides (Hydra's override_dirname) with `%` and `/` percent-encoded, so that two different
  override lists never share a directory (`task.path=/a/b_c` and `task.path=/a_b/c` used to) and names stay readable.
- Reuse: a directory's result is skipped, and its checkpoint resumed, only by a job with the same fingerprint
  (frozen_sweep.job_config); any other job stops with what differs. Records written before fingerprints existed are
  reused as before.
- One runner: a job holds an exclusive lock (flock) on `job.lock` in its directory while it runs, and writes who it is
  (host, pid, SLURM job id) into it. The kernel drops the lock when the process ends, however it ends, so a held
  lock means a live runner, and a `running` record without one means a dead run.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Optional

from omegaconf import OmegaConf

from frozen_sweep.config import ConfigError
from frozen_sweep.results import RESULT_FILE, load_result

LOCK_FILE = "job.lock"
MAX_NAME = 200  # characters; longer names keep their start and end with a hash of the whole


def dirname(override_dirname: str) -> str:
    """A job's directory name from its overrides: injective, one path component, readable, not too long."""
    if not override_dirname:
        return "default"
    name = override_dirname.replace("%", "%25").replace("/", "%2F")
    if len(name) > MAX_NAME:
        name = f"{name[:MAX_NAME - 20]}…{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name


class FingerprintMismatch(ConfigError):
    """The directory holds a run of another config (or other data)."""


def differences(old: dict, new: dict) -> list[str]:
    """What differs between two fingerprints, one `key: old → new` per item (data files by name)."""
    out = []
    for part in ("config", "data"):
        a, b = old.get(part) or {}, new.get(part) or {}
        for key in sorted(set(a) | set(b)):
            if a.get(key, "(absent)") != b.get(key, "(absent)"):
                prefix = "" if part == "config" else "data file "
                show = (lambda v: str(v)[:12]) if part == "data" else str
                out.append(f"{prefix}{key}: {show(a.get(key, '(absent)'))} → {show(b.get(key, '(absent)'))}")
    return out


def flatten(tree: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} → {"a.b": 1}: configs compared key by key."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def legacy_differences(run_dir: Path, fingerprint: dict) -> list[str]:
    """For a record from before fingerprints: where the directory's config.yaml differs from this job's config, on
    the keys both versions know (keys added since then cannot be compared; unresolved interpolations are skipped)."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return []
    saved, new = flatten(OmegaConf.to_container(OmegaConf.load(path), resolve=False)), fingerprint["config"]
    shared = [key for key in sorted(set(saved) & set(new)) if not (isinstance(saved[key], str) and "${" in saved[key])]
    return [f"{key}: {saved[key]} → {new[key]}" for key in shared if saved[key] != new[key]]


def previous_record(run_dir: Path, fingerprint: dict, force: bool) -> Optional[dict]:
    """The record in `run_dir` (None when there is none), if it belongs to this job; FingerprintMismatch if it
    belongs to another one, unless `force` (the job then replaces it)."""
    try:
        record = load_result(Path(run_dir) / RESULT_FILE)
    except ValueError:
        return None
    old = record.get("fingerprint")
    if force or (old and old.get("sha256") == fingerprint["sha256"]):
        return record
    if old:
        changes = differences(old, fingerprint) or ["(the code's fingerprint recipe)"]
    else:  # a record from before fingerprints: reused unless its saved config says it belongs to another job
        changes = legacy_differences(run_dir, fingerprint)
        if not changes:
            return record
    raise FingerprintMismatch(
        f"{run_dir} holds a {record['status']} run of a different config: {'; '.join(changes[:8])}"
        f"{' …' if len(changes) > 8 else ''}. To replace it, rerun with force=true; to keep both, give this run "
        "another name=… (its own folder under outputs/)"
    )


class JobAlreadyRunning(RuntimeError):
    """Another process runs this job directory now."""


def describe_runner(runner: dict) -> str:
    where = f"pid {runner.get('pid')} on {runner.get('host')}"
    slurm = f", SLURM job {runner['slurm_job_id']}" if runner.get("slurm_job_id") else ""
    return f"{where}{slurm}, since {runner.get('started')}"


def this_runner() -> dict:
    slurm = os.environ.get("SLURM_JOB_ID")
    if os.environ.get("SLURM_ARRAY_JOB_ID"):
        slurm = f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ.get('SLURM_ARRAY_TASK_ID')}"
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "slurm_job_id": slurm,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


_held: dict[str, list] = {}  # lock path → [file descriptor, depth]: the launcher's task and the job share one lock


@contextlib.contextmanager
def exclusive_run(run_dir: Path) -> Iterator[None]:
    """Hold the directory's lock while the block runs; JobAlreadyRunning, naming the runner, if another holds it."""
    path = str(Path(run_dir).absolute() / LOCK_FILE)
    if path in _held:
        _held[path][1] += 1
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            runner = _read_runner(Path(path))
            raise JobAlreadyRunning(
                f"{run_dir} is already being run by {describe_runner(runner)}: one runner per job directory. "
                f"Wait for it, or stop it ({_how_to_stop(runner)}) and run again to resume from its checkpoint"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(this_runner()).encode(), 0)
        _held[path] = [fd, 1]
    try:
        yield
    finally:
        _held[path][1] -= 1
        if not _held[path][1]:
            os.close(_held.pop(path)[0])  # closing the descriptor drops the lock


def live_runner(run_dir: Path) -> Optional[dict]:
    """Who runs the job in `run_dir` now (host, pid, SLURM job id, started), or None when nobody holds its lock."""
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_runner(path)
    finally:
        os.close(fd)
    return None


def _read_runner(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # the runner has the lock but has not written its name yet
        return {}


def _how_to_stop(runner: dict) -> str:
    return f"scancel {runner['slurm_job_id']}" if runner.get("slurm_job_id") else f"kill {runner.get('pid')}"


def remove_if_unused(directory: Path, expected: set[str]) -> None:
    """Remove `directory` if it holds nothing but the `expected` names (what Hydra writes before a job starts), and
    the empty folders above it up to the working directory."""
    directory = Path(directory).absolute()
    if not directory.is_dir() or {p.name for p in directory.iterdir()} - expected:
        return
    shutil.rmtree(directory)
    cwd = Path.cwd().absolute()
    for parent in directory.parents:
        if cwd not in parent.parents or any(parent.iterdir()):
            break
        parent.rmdir()
