"""The one atomic write: every file a reader may see while it is being replaced (results, caches, the shipped
corpus, checkpoints) goes through it, so that a reader sees the old file or the new one, never a torn one; and its
twin for a directory of files (the caches of extracted and prepared data), which appears whole or not at all."""

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable


def write_atomic(path: Path, write: Callable[[BinaryIO], Any]) -> None:
    """Write `path` through `write(file)`: into a temporary file beside it, flushed to disk, then renamed over it,
    so that readers see the old file or the new one, never a torn one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0o600 would hide shared results and caches from other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def write_json_atomic(path: Path, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=1, default=str))


def write_dir_atomic(final: Path, write: Callable[[Path], Any], prefix: str = "") -> None:
    """Build directory `final` through `write(tmp)` in a temporary directory beside it, then rename it into place.
    A concurrent builder that renamed its copy first wins: this one's is discarded."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix or f".{final.name}.", dir=final.parent))
    try:
        write(tmp)
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache may be shared
        os.rename(tmp, final)
    except OSError:
        if not final.is_dir():  # a real failure, not a lost race
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
