"""A file's content hash, read once per file version: the data's identity (data/identity.py) and a base run's
checkpoint (job/fingerprint.py) hash their files here. No torch and no numpy: the launchers' plan uses it.

A file's sha256 is computed once per file version and kept in `<cache>/hashes/`, under the file's path, size,
mtime_ns, ctime_ns, inode and device. That trusts the filesystem to change one of these on every write: an in-place
edit changes mtime_ns and ctime_ns, a replacement (editor save, rsync, cp over) changes the inode or the size. The
ctime cannot be set back by a user (touch -d and os.utime set mtime, and move ctime to now), so an edit whose mtime
was put back still reads as a new version. A file modified within RACY_S of being hashed is not cached (two writes in
one timestamp tick would share an mtime_ns).
"""

import hashlib
import json
import os
import time
from pathlib import Path

RACY_S = 2.0
_hashes: dict[tuple, str] = {}  # stat key → sha256: a sweep's plan computes every job's fingerprint


def _stat_key(path: Path) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev, st.st_ctime_ns)


def file_sha256(path: Path, cache_dir: str | Path | None = None) -> str:
    """sha256 of the file's content, read once per file version (see the module docstring for what that trusts)."""
    path = Path(path)
    key = _stat_key(path)
    if key in _hashes:
        return _hashes[key]
    entry = None
    if cache_dir is not None:
        entry = Path(cache_dir).expanduser() / "hashes" / hashlib.sha256(json.dumps(key).encode()).hexdigest()
        try:
            saved = json.loads(entry.read_text())
            if tuple(saved["stat"]) == key:
                _hashes[key] = saved["sha256"]
                return saved["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    sha = digest.hexdigest()
    if _stat_key(path) == key and time.time_ns() - key[2] > RACY_S * 1e9:  # unchanged while read, and not racy
        _hashes[key] = sha
        if entry is not None:
            _save(entry, {"stat": key, "sha256": sha})
    return sha


def _save(entry: Path, record: dict) -> None:
    """Best effort (a read-only cache only costs a re-hash): written under a unique name, then renamed."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, entry)
    except OSError:
        pass
