"""The one place that resolves where datasets live.

Order: an explicit ``data_dir`` argument (``--data-dir``), else ``$PDENETS_DATA``, else
``~/.cache/pdenets``. Nothing is downloaded: loaders read local files and say where to
put them when they are missing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional, Union

from .._io import FILE_KINDS
from .errors import DatasetError, DatasetNotFoundError

__all__ = ["resolve_data_dir", "DATA_ENV_VAR", "dataset_label", "regular_file"]

DATA_ENV_VAR = "PDENETS_DATA"


def resolve_data_dir(data_dir: Optional[Union[str, Path]] = None) -> Path:
    """Return the data directory (it may not exist yet; loaders check what they need).

    The order is: ``data_dir`` if given (``--data-dir``), else ``$PDENETS_DATA``, else
    ``~/.cache/pdenets``; ``~`` is expanded. Nothing is created, checked or downloaded.

    Args:
        data_dir: an explicit data directory; ``None`` or ``""`` falls back to the
            environment variable, then to the default (default: ``None``).

    Returns:
        The data directory as a :class:`~pathlib.Path`.

    Examples:
        >>> import os
        >>> from pathlib import Path
        >>> from unittest import mock
        >>> resolve_data_dir("~/datasets") == Path.home() / "datasets"
        True
        >>> with mock.patch.dict(os.environ, {"PDENETS_DATA": "/srv/data"}):
        ...     resolve_data_dir() == Path("/srv/data")
        True
    """
    if data_dir:
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "pdenets"


def dataset_label(dataset: str, registered) -> str:
    """The name a dataset goes by in tables: its registered name, or a file's stem (``my_series.json`` →
    ``my_series``). (A graph specification's name is :func:`pdenets.data.transforms.graph_label`.)

    Args:
        dataset: a registered name or the path of a data file.
        registered: the registered names (any container).

    Returns:
        ``dataset`` if registered, else the stem of its file name.

    Examples:
        >>> dataset_label("chickenpox", ("chickenpox",)), dataset_label("data/my_series.json", ())
        ('chickenpox', 'my_series')
    """
    return dataset if dataset in registered else Path(dataset).stem


_KINDS = FILE_KINDS  # what a path that is not a regular file is, in words


def regular_file(path: Union[str, Path], missing: Optional[Exception] = None) -> Path:
    """``path`` if it is a regular file (symbolic links followed); every loader checks a data file with it.

    Nothing is opened: a device, a pipe or a folder under a data file's name is refused before
    any read (``/dev/zero`` would never end).

    Args:
        path: the data file.
        missing: the error to raise when nothing exists at ``path`` (default: ``None``, a
            :class:`~pdenets.data.errors.DatasetNotFoundError` "missing file ...").

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        DatasetNotFoundError: nothing exists at ``path`` (``missing``), or ``path`` is a
            symbolic link whose target does not exist.
        DatasetError: ``path`` exists but is not a regular file (a folder, a device, a pipe, a
            socket), or cannot be examined.

    Examples:
        >>> regular_file("/dev/null")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pdenets.data.errors.DatasetError: /dev/null: not a regular file (a character device); ...
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if path.is_symlink():
            raise DatasetNotFoundError(
                f"{path}: a symbolic link to {os.readlink(path)}, which does not exist"
            ) from None
        raise (missing if missing is not None else DatasetNotFoundError(f"missing file {path}")) from None
    except OSError as error:
        raise DatasetError(f"{path}: cannot be examined ({error.strerror or error})") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a file")
        through = f", reached through a symbolic link to {os.readlink(path)}" if path.is_symlink() else ""
        raise DatasetError(f"{path}: not a regular file ({kind}{through}); give the path of a data file")
    return path
