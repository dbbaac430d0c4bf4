"""Files written so that a reader never sees half of one (a temporary file beside the target, renamed over
it), and files read no further than they may be (:func:`read_bounded`).

The ground floor of the package (like :mod:`pdenets._checks`): the data readers' writers, the results
store, run folders and saved models all use it, so it imports nothing of pdenets.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Tuple, Union

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "new_temporary_file",
    "file_sha256",
    "read_bounded",
    "UnreadableFileError",
    "FILE_KINDS",
]


class UnreadableFileError(ValueError):
    """A file that is not a regular file, or holds more than it may (one line naming it)."""


#: what a path that is not a regular file is, in words
FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


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


def read_bounded(path: Union[str, Path], limit: int, what: str = "the most it may hold") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: the file is opened without waiting
    (a pipe under its name never blocks), examined through the opened handle (nothing can be swapped in
    between the check and the read) and read no further than ``limit + 1`` bytes (a file that grows
    meanwhile is refused, not read to its end).

    Args:
        path: the file (a symbolic link is followed).
        limit: the most bytes it may hold.
        what: what the limit is, in the message of a file that is too large.

    Raises:
        FileNotFoundError: nothing exists at ``path``.
        UnreadableFileError: not a regular file (a folder, a device such as ``/dev/zero``, a pipe), larger
            than ``limit``, or unreadable; the message names ``path``.

    Examples:
        >>> read_bounded("/dev/zero", 10)
        Traceback (most recent call last):
        ...
        pdenets._io.UnreadableFileError: /dev/zero: not a regular file (a character device)
    """
    path = Path(path)
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing") from None
    except OSError as error:
        raise UnreadableFileError(f"{path}: cannot be read ({error.strerror or error})") from None
    mode = os.fstat(handle)
    if not stat.S_ISREG(mode.st_mode) or mode.st_size > limit:
        os.close(handle)
        if not stat.S_ISREG(mode.st_mode):
            kind = next((name for test, name in FILE_KINDS if test(mode.st_mode)), "not a file")
            raise UnreadableFileError(f"{path}: not a regular file ({kind})")
        raise UnreadableFileError(f"{path}: {mode.st_size:,} bytes, more than {limit:,} ({what})")
    with os.fdopen(handle, "rb") as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise UnreadableFileError(f"{path}: more than {limit:,} bytes ({what}; it grew while it was read)")
    return data
