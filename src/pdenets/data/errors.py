"""The errors every loader raises: one family, each message naming the file and the problem.

* :class:`DatasetError` (a ``ValueError``) — a file that cannot be used: truncated, corrupt,
  inconsistent, holding NaN, or declaring more memory than the budget;
* :class:`DatasetNotFoundError` (also a ``FileNotFoundError``) — a file that is missing;
* :class:`~pdenets.data.safe_pickle.UnsafePickleError` (also a ``pickle.UnpicklingError``) —
  a pickle that asks to run something; nothing was executed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

__all__ = ["DatasetError", "DatasetNotFoundError", "DataWarning", "dataset_error"]


class DatasetError(ValueError):
    """A dataset file that cannot be used; the message names the file and what is wrong.

    Raised by every loader of :mod:`pdenets.data` for a truncated, corrupt or inconsistent
    file, NaN/inf values, or declared sizes above the memory budget. It is a ``ValueError``,
    so code that already catches ``ValueError`` handles it.

    Examples:
        >>> isinstance(DatasetError("data.npz: the file is empty"), ValueError)
        True
    """


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A dataset file is missing from the data directory (nothing is downloaded).

    Both a :class:`DatasetError` and a ``FileNotFoundError``; the message names the path
    searched and, for the known datasets, where to get the file.

    Examples:
        >>> error = DatasetNotFoundError("missing file cora.npz")
        >>> isinstance(error, DatasetError), isinstance(error, FileNotFoundError)
        (True, True)
    """


class DataWarning(UserWarning):
    """A dataset that is used, with a caveat the user should read (the command line prints it as one
    ``pdenets: warning:`` line)."""


def dataset_error(path: Union[str, Path], problem: str) -> DatasetError:
    return DatasetError(f"{path}: {problem}")
