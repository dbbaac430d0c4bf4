"""The one place that resolves where datasets live.

Order: an explicit ``data_dir`` argument (``--data-dir``), else ``$PDENETS_DATA``, else
``~/.cache/pdenets``. Nothing is downloaded: loaders read local files and say where to
put them when they are missing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

__all__ = ["resolve_data_dir", "DATA_ENV_VAR", "dataset_label"]

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
    ``my_series``)."""
    return dataset if dataset in registered else Path(dataset).stem
