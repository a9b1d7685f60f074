"""A job's directory: the files in it, its record, its name, and whether the record in it may be reused. No torch
here: the launchers and the collector read run directories too. Who runs it now: frozen_sweep.run.lock.

- Files: every name a run directory holds is below; files are written atomically (frozen_sweep.system.files), so
  that a reader sees the old file or the new one, never a torn one.
- Names: the job's overrides (Hydra's override_dirname) with `%` and `/` percent-encoded, so that two different
  override lists never share a directory (`task.path=/a/b_c` and `task.path=/a_b/c` used to) and names stay readable;
  a base's override list by the base's key and a hash of the list.
- Reuse: a directory's result is skipped, and its checkpoint resumed, only by a job with the same fingerprint
  (frozen_sweep.job.fingerprint); any other job stops with what differs. Records written before fingerprints existed
  are reused unless their config.yaml says they belong to another job.
"""

import hashlib
import json
import os
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import orjson
from omegaconf import OmegaConf

from frozen_sweep.config import ConfigError
from frozen_sweep.run.record import STATUSES, RunResult
from frozen_sweep.system.files import write_json_atomic
from frozen_sweep.system.kernels import cpu_model, model_of

# ---- the files a run directory holds -------------------------------------------------------------------------------

RESULT_FILE = "result.json"  # the result record (frozen_sweep.run.record), rewritten as the run goes
CONFIG_FILE = "config.yaml"  # the config the job ran with
LAST_CHECKPOINT = "checkpoint_last.pt"  # everything needed to resume: weights, optimiser, schedule, trainer state, RNG
BEST_CHECKPOINT = "checkpoint_best.pt"  # weights of the best validation only
STEP_CHECKPOINT = "checkpoint_step{}.pt"  # trainer.keep_checkpoints: a validation's weights, by its step (averaging)
METRICS_FILE = "metrics.jsonl"  # metrics as they happen (frozen_sweep.metrics.log)
TENSORBOARD_DIR = "tensorboard"  # TensorBoard event files: `tensorboard --logdir outputs/`
WANDB_DIR = "wandb"  # trainer.loggers=[wandb]: wandb's own files (an offline run's, to `wandb sync`)
TRACKING_RUNS_FILE = "tracking_runs.json"  # the W&B and MLflow run ids of the job, so that a resumed job continues them
# test translations, for significance tests, and the sources they translate
TEST_HYPOTHESES, TEST_REFERENCES, TEST_SOURCES = "test.hyp.txt", "test.ref.txt", "test.src.txt"
LOCK_FILE = "job.lock"  # held by the job's one runner
ATTEMPTS_FILE = "attempts.json"  # launchers: one entry per time the job ran: where, with which GPU, when, how it ended
SUBMISSION_FILES = "submission*.json"  # launchers: what was submitted for this directory, one file a submission,
# written before submitting (submission.json: one record, as earlier versions wrote it)
PROGRESS_FILE = "progress.json"  # the job's step, budget, latest validation and speed, for a launcher's live status
READ_CHUNK = 1 << 16  # bytes asked of os.read at a time: a record (≈10 KB) in one read; under malloc's mmap threshold


# ---- the result record ---------------------------------------------------------------------------------------------


def write_result(run_dir: Path, result: RunResult) -> None:
    result.updated_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json_atomic(Path(run_dir) / RESULT_FILE, result.to_dict())


def load_result(path: Path) -> dict:
    """Read a result record; raise ValueError saying why when it is unreadable or not a record."""
    return parse_result(result_bytes(path), path)


def result_bytes(path: Path) -> bytes:
    """A result record's file as it is on disk; ValueError saying why when it cannot be read."""
    name = os.fspath(path)  # an error names it as open() would: '/a/result.json', not PosixPath('/a/result.json')
    try:  # os.read, not open() nor pathlib: no file objects, half the time when thousands are collected
        fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.read(fd, READ_CHUNK)
            while chunk := os.read(fd, READ_CHUNK):  # a record larger than one chunk, or a file that grew
                data += chunk
            return data
        finally:
            os.close(fd)
    except OSError as e:
        e.filename = e.filename or name  # os.read does not name it: "[Errno 21] Is a directory: 'a/result.json'"
        raise ValueError(f"{path}: unreadable result record ({e})") from e


def parse_result(data: bytes, path: Path) -> dict:
    """A result record from its file's bytes; raise ValueError saying why when it is unreadable or not a record.

    orjson parses a record ~6x faster than json (collecting thousands); what it refuses (NaN or Infinity, which the
    records may hold, or a torn write) goes to json, whose error the reason quotes."""
    try:
        try:
            record = orjson.loads(data)
        except orjson.JSONDecodeError:
            record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: unreadable result record ({e})") from e
    if not isinstance(record, dict) or record.get("status") not in STATUSES:
        raise ValueError(f"{path}: not a result record (status must be one of {', '.join(STATUSES)})")
    return record


def read_record(run_dir: Path) -> Optional[dict]:
    """The record in `run_dir`, or None when it holds none (or none that can be read)."""
    try:
        return load_result(Path(run_dir) / RESULT_FILE)
    except ValueError:
        return None


def is_completed(record: Optional[dict]) -> bool:
    return bool(record) and record["status"] == "completed"


def result_of(record: dict) -> RunResult:
    """The record as a RunResult; fields this version does not know are dropped."""
    known = {f.name for f in fields(RunResult)}
    return RunResult(**{key: value for key, value in record.items() if key in known})


# ---- the directory's name, and whether its record belongs to this job ----------------------------------------------

MAX_NAME = 200  # characters; longer names keep their start and end with a hash of the whole


def dirname(override_dirname: str) -> str:
    """A job's directory name from its overrides: injective, one path component, readable, not too long. A base's
    override list (`bases.NAME=[…]`) is named by its key and a hash of the list: the fine-tuning jobs' own overrides
    stay readable. (A completed run under a name an earlier version gave is still found by its fingerprint.)"""
    if not override_dirname:
        return "default"
    name = ",".join(_base_by_key(item) for item in _items(override_dirname))
    name = name.replace("%", "%25").replace("/", "%2F")
    if len(name) > MAX_NAME:
        name = f"{name[:MAX_NAME - 20]}…{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name


def _items(override_dirname: str) -> list[str]:
    """The `key=value` items of Hydra's override_dirname: split at its commas outside brackets and quotes."""
    items, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(override_dirname):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(override_dirname[start:i])
            start = i + 1
    return items + [override_dirname[start:]]


def _base_by_key(item: str) -> str:
    """`bases.NAME=[…<hash>]` for a base's override list, any other item as it is."""
    key, _, value = item.partition("=")
    if not key.lstrip("+~").startswith("bases.") or not value.startswith("["):
        return item
    return f"{key}=[…{hashlib.sha256(value.encode()).hexdigest()[:12]}]"


# the sha256 a fingerprint would have without its CPU part (threads, kernels, precision: system.kernels.cpu_identity);
# the collector counts runs that differ only there once (tables.duplicates)
BEFORE_CPU = "sha256_before_cpu"
# what records from before the kernels and the precision entered the fingerprint hold when they are this job's run
# (job.fingerprint.legacy): looked up, not recorded
LEGACY = "legacy"


def same_job(record: dict, fingerprint: dict) -> bool:
    """Whether a record with a fingerprint is this fingerprint's run. A record from before cpu.kernels and
    cpu.precision (job.fingerprint.legacy) is, when it was made on this CPU model (so with these kernels) and holds
    one of the hashes that code gave this job's config at this precision (those of the time it held a later default
    among them); one from before the CPU part entered, when it also ran with this job's threads."""
    old = record.get("fingerprint") or {}
    sha = old.get("sha256")
    if sha is None:
        return False
    if sha == fingerprint["sha256"]:
        return True
    then = fingerprint.get(LEGACY) or {}
    if "cpu.precision" in (old.get("config") or {}) or model_of(record.get("machine")) != cpu_model():
        return False
    threads = fingerprint["config"].get("cpu.threads")
    older = sha in then.get("before_cpu", ()) and record.get("threads") in (None, threads)
    return sha in then.get("sha256", ()) or older


def recorded(fingerprint: dict) -> dict:
    """A fingerprint as a record holds it: without the legacy hashes it is looked up by."""
    return {key: value for key, value in fingerprint.items() if key != LEGACY}


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
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        return []
    saved, new = flatten(OmegaConf.to_container(OmegaConf.load(path), resolve=False)), fingerprint["config"]
    shared = [key for key in sorted(set(saved) & set(new)) if not (isinstance(saved[key], str) and "${" in saved[key])]
    return [f"{key}: {saved[key]} → {new[key]}" for key in shared if saved[key] != new[key]]


def previous_record(run_dir: Path, fingerprint: dict, force: bool) -> Optional[dict]:
    """The record in `run_dir` (None when there is none), if it belongs to this job; FingerprintMismatch if it
    belongs to another one, unless `force` (the job then replaces it)."""
    record = read_record(run_dir)
    if record is None:
        return None
    old = record.get("fingerprint")
    if force or (old and same_job(record, fingerprint)):
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


def mark_failed(run_dir: Path, reason: str, overrides: list[str], stale: bool = False) -> None:
    """Record the run failed for `reason`, keeping what its record holds; with `stale`, only when the record is missing
    or still says `running` (the job was stopped before it could record how it ended)."""
    record = read_record(run_dir)
    if stale and record is not None and record["status"] != "running":
        return
    result = result_of(record or {"overrides": overrides})
    result.status, result.error = "failed", reason
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    write_result(run_dir, result)


def completed_runs(folder: Path) -> dict[str, Path]:
    """Fingerprint sha256 → a directory under `folder` whose record is completed with it: a job is the same run
    wherever its directory is (a default written out, `seed=1`, changes the directory's name)."""
    found: dict[str, Path] = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # .submitit/, .hydra/
        if RESULT_FILE not in files:
            continue
        dirs[:] = []  # a run directory holds no other run
        record = read_record(Path(root))
        sha = (record.get("fingerprint") or {}).get("sha256") if is_completed(record) else None
        if sha:
            found.setdefault(sha, Path(root))
    return found


def step_checkpoints(run_dir: Path) -> list[Path]:
    """The validations' checkpoints a run kept (trainer.keep_checkpoints), oldest first."""
    prefix, suffix = STEP_CHECKPOINT.split("{}")
    kept = [p for p in Path(run_dir).glob(STEP_CHECKPOINT.format("*")) if p.name[len(prefix) : -len(suffix)].isdigit()]
    return sorted(kept, key=lambda p: int(p.name[len(prefix) : -len(suffix)]))
