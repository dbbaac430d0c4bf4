"""Files written so that a reader never sees half of one: a temporary file beside the target, renamed over it.

The ground floor of the package (like :mod:`pdenets._checks`): the data readers' writers, the results
store and run folders all use it, so it imports nothing of pdenets.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Tuple, Union

__all__ = ["atomic_write", "atomic_write_text", "new_temporary_file", "file_sha256"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def new_temporary_file(path: Path, prefix: str) -> Tuple[int, str]:
    """A temporary file beside ``path`` with the permissions a plain ``open`` would give it."""
    handle, temporary = tempfile.mkstemp(prefix=prefix, suffix=path.suffix, dir=path.parent)
    os.chmod(temporary, 0o666 & ~_umask())
    return handle, temporary


@contextmanager
def atomic_write(path: Union[str, Path], mode: str = "w") -> Iterator[Any]:
    """Open a temporary file beside ``path``; on success it replaces ``path`` in one rename."""
    path = Path(path)
    handle, temporary = new_temporary_file(path, f".{path.stem}-")
    try:
        opened = (
            os.fdopen(handle, mode, encoding="utf-8", newline="")
            if "b" not in mode
            else os.fdopen(handle, mode)
        )
        with opened as stream:
            yield stream
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Union[str, Path], text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8); returns ``path``."""
    with atomic_write(path) as stream:
        stream.write(text)
    return Path(path)


def file_sha256(path: Union[str, Path]) -> str:
    """The SHA-256 of a file's bytes (hex), read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
